// Loaded with --require by test/bench/process-cost.ts: appends this Node process's CPU time (user + system, µs) to the file it names.
const out = process.env.HOSTADM_BENCH_CPU_OUT;
if (out) {
  process.once('exit', () => {
    const { user, system } = process.cpuUsage();
    require('node:fs').appendFileSync(out, `${user + system}\n`);
  });
}
