/**
 * A bridged CLI call, end to end: `hostadm up` (a Node bridge and a sim agent joined to it, a client
 * key and a profile) runs in its own process, then `hostadm call systemmanager memorystats --profile P`
 * is timed from spawn to exit (bridge sign-in, the hsc1 channel to the host, whose key proof signs the
 * client in, the call) in alternating pairs with `hostadm --version`: the ratio is what the bridge, the
 * channel and the host add to starting the CLI at all (target ≤ 2×), with its spread (ab-pairs.ts).
 *
 * The same run measures `hostadm up`'s memory (target ≤ 100 MiB resident after this load): its
 * VmRSS from /proc after each bridged call it served, reported against 100 MiB with the spread over
 * the calls after the warm-up, with its peak (VmHWM) and the anonymous / file-backed split.
 *
 * Run: node test/bench/bridged-call.bench.ts [pairs]   (or `npm run bench bridged-call`)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alternatePairs, formatRatio, median, reportTarget, summarize } from './ab-pairs.ts';

const PAIRS = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 15);
const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');
const PROFILE = 'bench';

const top = mkdtempSync(join(tmpdir(), 'hostadm-bench-bridged-'));
const env = { ...process.env, XDG_CONFIG_HOME: join(top, 'config'), HOME: top };

function run(args: string[]): Promise<number> {
  const start = performance.now();
  const child = spawn(hostadm, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => (code === 0 ? resolve(performance.now() - start) : reject(new Error(`hostadm ${args.join(' ')} exited ${code}: ${output}`)))),
  );
}

/** VmRSS, VmHWM, RssAnon and RssFile of a process, in KiB (Linux /proc). */
function residentKiB(pid: number): Record<'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile', number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { VmRSS: field('VmRSS'), VmHWM: field('VmHWM'), RssAnon: field('RssAnon'), RssFile: field('RssFile') };
}

// bin/hostadm execs Node, so the spawned process is `hostadm up` itself.
const up = spawn(hostadm, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(top, 'data'), '--profile', PROFILE], {
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
});
try {
  let banner = '';
  up.stdout.setEncoding('utf8').on('data', (c: string) => (banner += c));
  up.stderr.setEncoding('utf8').on('data', (c: string) => (banner += c));
  const deadline = Date.now() + 60_000;
  while (!banner.includes('Ctrl-C stops')) {
    if (Date.now() > deadline || up.exitCode !== null) throw new Error(`hostadm up did not start:\n${banner}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`bridged CLI call through a Node bridge (hostadm up), ${PAIRS} alternating pairs after 2 warm-up pairs`);
  const afterStart = residentKiB(up.pid!);
  const upResident: number[] = [];
  const { ratio, a, b } = await alternatePairs(
    () => run(['--version']),
    async () => {
      const ms = await run(['call', 'systemmanager', 'memorystats', '--profile', PROFILE]);
      upResident.push(residentKiB(up.pid!).VmRSS);
      return ms;
    },
    PAIRS,
  );
  console.log(
    `hostadm call systemmanager memorystats (bridged) / hostadm --version: ${formatRatio(ratio)}   medians ${median(b).toFixed(0)} / ${median(a).toFixed(0)} ms`,
  );
  reportTarget('CLI: a bridged hostadm call vs hostadm --version', ratio, 2);
  const end = residentKiB(up.pid!);
  const mib = (kib: number) => (kib / 1024).toFixed(1);
  console.log(
    `hostadm up resident: after start ${mib(afterStart.VmRSS)} MiB, after ${upResident.length} bridged calls ${mib(end.VmRSS)} MiB ` +
      `(anonymous ${mib(end.RssAnon)}, file-backed ${mib(end.RssFile)}), peak ${mib(end.VmHWM)} MiB`,
  );
  const afterWarmup = upResident.slice(-PAIRS).map((kib) => kib / 1024 / 100);
  reportTarget('Memory: hostadm up resident after the bridged calls vs 100 MiB', summarize(afterWarmup), 1);
} finally {
  up.kill('SIGTERM');
  await new Promise((r) => up.once('close', r));
  rmSync(top, { recursive: true, force: true });
}
