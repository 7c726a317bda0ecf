/**
 * Round trips of a cold bridged `hostadm call` (issue 20): `hostadm up` in its own process and HOME,
 * one unmeasured call (the full handshake, which leaves the profile its ticket), then CALLS cold calls
 * each in its own process with the socket-timeline.cjs preload. A round trip is a wait: a 'data' event
 * on the client's socket with at least one write since the previous one (the TCP connect is not
 * counted). Prints, per call, the round trips and when each one's answer came (ms since the process
 * started); then the median count, and the median time from the connect to the last reply (which
 * moves with the machine's load).
 *
 *
 * With a delay (third argument, ms each way), the calls go through a proxy that holds every chunk
 * that long in each direction, as a bridge across a wide-area network would be (a round trip of twice
 * the delay): what a round trip fewer is worth there. The profile's bridge address (and what is keyed
 * by it: the pinned host key, the sign-in ticket) is pointed at the proxy after the first call.
 *
 * Run: node test/bench/cold-call-timeline.ts [checkout root] [calls] [delay ms]   (the root's own hostadm is run)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname;
const CALLS = Number(process.argv[3] ?? 7);
const DELAY_MS = Number(process.argv[4] ?? 0);
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

/** A TCP proxy to `port` on loopback holding each chunk `delayMs` in each direction (order kept); its port. */
async function delayingProxy(port: number, delayMs: number): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    const pipe = (from: Socket, to: Socket) => {
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on('end', () => setTimeout(() => to.end(), delayMs));
      from.on('error', () => to.destroy());
    };
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => {
    for (const s of sockets) s.destroy();
    server.close();
  };
  return { port: (server.address() as { port: number }).port, close };
}

/** Every file under `dir` that names `from` (the profile, the pinned host keys, the tickets) names `to` instead. */
function readdress(dir: string, from: string, to: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) readdress(path, from, to);
    else {
      const text = readFileSync(path, 'utf8');
      if (text.includes(from)) writeFileSync(path, text.replaceAll(from, to));
    }
  }
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
  if (DELAY_MS > 0) {
    const bridgePort = /"bridge": "ws:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(join(home, 'config/hostadm/config.json'), 'utf8'))?.[1];
    if (!bridgePort) throw new Error('no bridge address in the profile');
    const proxy = await delayingProxy(Number(bridgePort), DELAY_MS);
    up.once('close', proxy.close);
    readdress(join(home, 'config/hostadm'), `127.0.0.1:${bridgePort}`, `127.0.0.1:${proxy.port}`);
    const through = await run(CALL); // signs in to the proxy's address once (its own bridge ticket)
    if (through.code !== 0) throw new Error(`the first call through the delay failed:\n${through.out}`);
  }
  const counts: number[] = [];
  const spans: number[] = [];
  const walls: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const file = join(home, `timeline-${i}.jsonl`);
    const started = performance.now();
    const result = await run(CALL, { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(), HOSTADM_TIMELINE: file });
    walls.push(performance.now() - started);
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
  walls.sort((a, b) => a - b);
  const delay = DELAY_MS > 0 ? `, through ${DELAY_MS} ms each way` : '';
  console.log(`${root}: spawn to exit ${walls[Math.floor(walls.length / 2)]!.toFixed(0)} ms median (min ${walls[0]!.toFixed(0)}${delay})`);
  console.log(
    `${root}: median ${counts[Math.floor(counts.length / 2)]} round trips per cold call after TCP connect (min ${counts[0]}, max ${counts.at(-1)}; load average ${loadavg()[0]!.toFixed(1)})`,
  );
} finally {
  up.kill('SIGTERM');
  await new Promise((r) => up.once('close', r));
  rmSync(home, { recursive: true, force: true });
}
