/**
 * A bridged CLI call, end to end: `hostadm up` (a Node bridge and a sim agent joined to it, a client
 * key and a profile) runs in its own process, then `hostadm call systemmanager memorystats --profile P`
 * is spawned N times: bridge sign-in, the hsc1 channel to the host (whose key proof signs the client
 * in), the call, exit. Reported: the median (and p90) from spawn to exit, and the same for
 * `hostadm --version` so the part the bridge and the host add can be read off.
 *
 * On loopback one relayed round trip (the auth_token resume a bridged call no longer sends) is a few
 * milliseconds, below this figure's run-to-run spread on a shared machine (±20 ms): compare medians of
 * several runs, alternating the builds compared.
 *
 * Run: node test/bench/bridged-call.bench.ts [iterations]   (or `npm run bench bridged-call`)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 15);
const WARMUP = 2;
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

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(label: string, args: string[]): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await run(args);
  const times: number[] = [];
  for (let i = 0; i < N; i++) times.push(await run(args));
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(60)} p50 ${pct(times, 50).toFixed(0).padStart(4)} ms  p90 ${pct(times, 90).toFixed(0).padStart(4)} ms  (${N} runs)`);
}

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
  console.log(`bridged CLI call through a Node bridge (hostadm up), ${N} runs each after ${WARMUP} warm-up runs`);
  await measure('hostadm --version', ['--version']);
  await measure(`hostadm call systemmanager memorystats --profile ${PROFILE}`, ['call', 'systemmanager', 'memorystats', '--profile', PROFILE]);
} finally {
  up.kill('SIGTERM');
  await new Promise((r) => up.once('close', r));
  rmSync(top, { recursive: true, force: true });
}
