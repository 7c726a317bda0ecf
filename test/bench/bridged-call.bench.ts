/**
 * A bridged CLI call, end to end: `hostadm up` (a Node bridge and a sim agent joined to it, a client
 * key and a profile) runs in its own process, then `hostadm call systemmanager memorystats --profile P`
 * is timed from spawn to exit (bridge sign-in, the hsc1 channel to the host, whose key proof signs the
 * client in, the call) in alternating pairs with `hostadm --version`: the ratio is what the bridge, the
 * channel and the host add to starting the CLI at all (target ≤ 2×), with its spread (ab-pairs.ts).
 * Both layouts, each a target row: the repository (`npx hostadm` in a checkout: the TypeScript sources
 * on the project's Node) and the npm package as installed (installed-cli.ts: compiled, the client
 * commands bundled). Each row also gives the ratio of the CPU time of the two Node processes
 * (process-cost.ts), which moves less with the machine's load than the wall time the target is in.
 * A second row per layout times a call with arguments (`fs dirlist dir=/`), which the CLI checks
 * against the class's contract before it connects; a third times the call without arguments through
 * a persisted session (HOSTADM_PERSIST).
 *
 * The same run measures `hostadm up`'s memory (target ≤ 100 MiB resident after this load): its
 * VmRSS from /proc after each bridged call it served, reported against 100 MiB with the spread over
 * the calls after the warm-up, with its peak (VmHWM) and the anonymous / file-backed split.
 *
 * Run: node test/bench/bridged-call.bench.ts [pairs]   (or `npm run bench bridged-call`)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { alternatePairs, formatRatio, median, reportTarget, summarize } from './ab-pairs.ts';
import { installPackagedCli } from './installed-cli.ts';
import { costRecorder, cpuRatios } from './process-cost.ts';

const PAIRS = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 15);
const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');
const PROFILE = 'bench';

const top = mkdtempSync(join(tmpdir(), 'hostadm-bench-bridged-'));
// Its own runtime directory: the persisted sessions' sockets (private, 0700).
mkdirSync(join(top, 'run'), { mode: 0o700 });
const env = { ...process.env, XDG_CONFIG_HOME: join(top, 'config'), HOME: top, XDG_RUNTIME_DIR: join(top, 'run') };

/** The call the targets are about, and one whose arguments the CLI checks against the class's contract first. */
const CALL = ['call', 'systemmanager', 'memorystats', '--profile', PROFILE];
const CALL_WITH_ARGS = ['call', 'fs', 'dirlist', 'dir=/', '--profile', PROFILE];
const label = (argv: readonly string[]) => `hostadm ${argv.slice(0, argv.indexOf('--profile')).join(' ')}`;

/** `--version` against the bridged call with one layout's `hostadm`: prints both ratios, reports the wall-time target. */
async function layoutRow(
  layout: string,
  bin: string,
  layoutEnv: NodeJS.ProcessEnv,
  afterCall: () => void,
  how = 'bridged',
  target = 'a bridged hostadm call',
  argv: readonly string[] = CALL,
): Promise<void> {
  const version = costRecorder(bin, ['--version'], layoutEnv);
  const call = costRecorder(bin, [...argv], layoutEnv);
  const measureCall = async () => {
    const ms = await call.measure();
    afterCall();
    return ms;
  };
  const { ratio, a, b } = await alternatePairs(version.measure, measureCall, PAIRS);
  const cpu = summarize(cpuRatios(version.cpu, call.cpu));
  console.log(
    `${layout}: ${label(argv)} (${how}) / hostadm --version: wall ${formatRatio(ratio)}   medians ${median(b).toFixed(0)} / ${median(a).toFixed(0)} ms`,
  );
  console.log(
    `${' '.repeat(layout.length)}  CPU of the Node process: ${formatRatio(cpu)}   medians ${median(call.cpu.slice(2)).toFixed(0)} / ${median(version.cpu.slice(2)).toFixed(0)} ms   (load average ${loadavg()[0]!.toFixed(1)})`,
  );
  reportTarget(`CLI (${layout}): ${target} vs hostadm --version`, ratio, 2);
}

/**
 * The same call through a persisted session (HOSTADM_PERSIST, lib/control-session.ts) that one
 * unmeasured call starts first; the session process is not the caller's, so neither its CPU nor its
 * channel is in the figures: what a script's later calls cost.
 */
async function persistedRow(layout: string, bin: string, layoutEnv: NodeJS.ProcessEnv): Promise<void> {
  const persisted = { ...layoutEnv, HOSTADM_PERSIST: '10m' };
  const sessions = async () => JSON.parse((await run(bin, ['session', 'status', '--json'], layoutEnv)).stdout) as unknown[];
  await run(bin, CALL, persisted);
  const deadline = Date.now() + 30_000;
  while ((await sessions()).length !== 1) {
    if (Date.now() > deadline) throw new Error('the persisted session did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    // Not sampled for up's memory: that target is about the cold calls' load.
    await layoutRow(layout, bin, persisted, () => {}, 'through a persisted session', 'a bridged call through a persisted session');
  } finally {
    await run(bin, ['session', 'stop'], layoutEnv);
  }
}

function run(bin: string, args: string[], runEnv: NodeJS.ProcessEnv): Promise<{ stdout: string }> {
  const child = spawn(bin, args, { env: runEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => (code === 0 ? resolve({ stdout }) : reject(new Error(`${bin} ${args.join(' ')} exited ${code}`)))),
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
  console.log(`bridged CLI call through a Node bridge (hostadm up), ${PAIRS} alternating pairs after 2 warm-up pairs, per layout`);
  const afterStart = residentKiB(up.pid!);
  const upResident: number[] = [];
  const sampleUp = () => upResident.push(residentKiB(up.pid!).VmRSS);
  await layoutRow('repository', hostadm, env, sampleUp);
  await layoutRow('repository', hostadm, env, () => {}, 'bridged, arguments checked', 'a bridged hostadm call with arguments', CALL_WITH_ARGS);
  await persistedRow('repository', hostadm, env);
  const installed = installPackagedCli();
  try {
    await layoutRow('npm package', installed.hostadm, { ...env, PATH: installed.path }, sampleUp);
    await layoutRow(
      'npm package',
      installed.hostadm,
      { ...env, PATH: installed.path },
      () => {},
      'bridged, arguments checked',
      'a bridged hostadm call with arguments',
      CALL_WITH_ARGS,
    );
    await persistedRow('npm package', installed.hostadm, { ...env, PATH: installed.path });
  } finally {
    installed.dispose();
  }
  const end = residentKiB(up.pid!);
  const mib = (kib: number) => (kib / 1024).toFixed(1);
  console.log(
    `hostadm up resident: after start ${mib(afterStart.VmRSS)} MiB, after ${upResident.length} bridged calls ${mib(end.VmRSS)} MiB ` +
      `(anonymous ${mib(end.RssAnon)}, file-backed ${mib(end.RssFile)}), peak ${mib(end.VmHWM)} MiB`,
  );
  // Each layout's first two calls are warm-up; the rest are the load the target is about.
  const afterWarmup = upResident.slice(-PAIRS).map((kib) => kib / 1024 / 100);
  reportTarget('Memory: hostadm up resident after the bridged calls vs 100 MiB', summarize(afterWarmup), 1);
} finally {
  up.kill('SIGTERM');
  await new Promise((r) => up.once('close', r));
  rmSync(top, { recursive: true, force: true });
}
