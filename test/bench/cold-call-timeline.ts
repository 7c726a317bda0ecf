/**
 * Round trips of a cold bridged `hostadm call` (issue 20): `hostadm up` in its own process and HOME,
 * one unmeasured call (the full handshake, which leaves the profile its ticket), then CALLS cold calls
 * each in its own process with the socket-timeline.cjs preload. A round trip is a wait: a 'data' event
 * on the client's socket with at least one write since the previous one (the TCP connect is not
 * counted). Prints, per call, the round trips and when each one's answer came (ms since the process
 * started); then the median count, and the median time from the connect to the last reply (which
 * moves with the machine's load).
 *
 * Run: node test/bench/cold-call-timeline.ts [checkout root] [calls]   (the root's own hostadm is run)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname;
const CALLS = Number(process.argv[3] ?? 7);
const hostadm = join(root, 'node_modules/.bin/hostadm');
const preload = new URL('./socket-timeline.cjs', import.meta.url).pathname;
const home = mkdtempSync(join(tmpdir(), 'hostadm-timeline-'));
const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
const CALL = ['call', 'systemmanager', 'memorystats', '--profile', 'tl'];

type Event = [ms: number, socket: number, kind: 'connect' | 'write' | 'data', bytes: number];

function run(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(hostadm, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Waits between a write and the next 'data', per socket, after its connect. */
function roundTrips(events: Event[]): { trips: number; line: string; spanMs: number } {
  const wrote = new Map<number, boolean>();
  let trips = 0;
  let first = Number.NaN;
  let last = Number.NaN;
  const parts: string[] = [];
  for (const [ms, socket, kind] of events) {
    if (kind === 'connect') {
      parts.push(`connect#${socket}@${ms.toFixed(1)}`);
      if (Number.isNaN(first)) first = ms;
    }
    if (kind === 'write') wrote.set(socket, true);
    if (kind === 'data') {
      if (wrote.get(socket)) {
        trips++;
        last = ms;
        parts.push(`reply@${ms.toFixed(1)}`);
      }
      wrote.set(socket, false);
    }
  }
  return { trips, line: parts.join(' '), spanMs: last - first };
}

const up = spawn(hostadm, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(home, 'data'), '--profile', 'tl'], {
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
});
let banner = '';
up.stdout.on('data', (c: Buffer) => (banner += c.toString()));
up.stderr.on('data', (c: Buffer) => (banner += c.toString()));
try {
  const deadline = Date.now() + 60_000;
  while (!banner.includes('Ctrl-C stops')) {
    if (up.exitCode !== null || Date.now() > deadline) throw new Error(`hostadm up did not start:\n${banner}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const warm = await run(CALL);
  if (warm.code !== 0) throw new Error(`the first call failed:\n${warm.out}`);
  const counts: number[] = [];
  const spans: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const file = join(home, `timeline-${i}.jsonl`);
    const result = await run(CALL, { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(), HOSTADM_TIMELINE: file });
    if (result.code !== 0) throw new Error(`call ${i} failed:\n${result.out}`);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const events = lines.flatMap((l) => (JSON.parse(l) as { events: Event[] }).events);
    const { trips, line, spanMs } = roundTrips(events);
    counts.push(trips);
    spans.push(spanMs);
    console.log(`call ${i + 1}: ${trips} round trips   ${line}`);
  }
  counts.sort((a, b) => a - b);
  spans.sort((a, b) => a - b);
  const at = (q: number) => spans[Math.min(spans.length - 1, Math.floor(q * spans.length))]!.toFixed(1);
  console.log(`${root}: connect to last reply ${at(0.5)} ms median (p10–p90 ${at(0.1)}–${at(0.9)})`);
  console.log(
    `${root}: median ${counts[Math.floor(counts.length / 2)]} round trips per cold call after TCP connect (min ${counts[0]}, max ${counts.at(-1)}; load average ${loadavg()[0]!.toFixed(1)})`,
  );
} finally {
  up.kill('SIGTERM');
  await new Promise((r) => up.once('close', r));
  rmSync(home, { recursive: true, force: true });
}
