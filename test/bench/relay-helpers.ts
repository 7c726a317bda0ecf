/**
 * Helpers of relay.bench.ts: keys, bridge sign-in, child processes, memory readings, and the
 * measurement loop over a "link" (plain relay frames here; sealed ones in channel-helpers.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, createHash, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import WebSocket, { WebSocketServer } from 'ws';
import { FLUSH_BYTES } from '@hostadm/shared/crypto/index.ts';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { sweepMessage } from '@hostadm/shared/node/read-sweep.ts';

export const WARM_MS = 400;
export const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 1500);

export interface Key {
  privateKey: KeyObject;
  pubKeyB64: string;
  /** SPKI PEM of the public key. */
  pem: string;
  md5: string;
  algorithm: 'rsa' | 'ed25519';
}

export function makeKey(algorithm: 'rsa' | 'ed25519'): Key {
  const { privateKey, publicKey } = algorithm === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { privateKey, pubKeyB64: Buffer.from(pem).toString('base64'), pem, md5: createHash('md5').update(pem).digest('base64'), algorithm };
}

let peersNamed = 0;

/** A load client's or echo peer's socket: it tells the read sweep its messages, as the SDK's and the agent's do. */
function endSocket(url: string): WebSocket {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.on('message', sweepMessage);
  return ws;
}

export function open(url: string): Promise<WebSocket> {
  const ws = endSocket(url);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * Signs in to the bridge as an agent or client: answers identify, enrolls with `token`, auth_ssl
 * pinned to the key, answers list_ssl_checksums; resolves with the first announcement.
 */
export async function bridgeSignIn(
  url: string,
  type: 'server' | 'client',
  key: Key,
  token: string,
  md5Keys: string[],
): Promise<{ ws: WebSocket; offer: string[] }> {
  // The listener goes on before 'open': the bridge's identify request can arrive with the handshake.
  const ws = endSocket(url);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    const onMessage = (data: Buffer) => {
      const env = JSON.parse(data.toString()) as { id: string; name: string; args: Record<string, unknown> };
      const reply = (id: string, args: unknown) => ws.send(JSON.stringify({ id, name: 'response', namespace: 'rpc', args }));
      const call = (id: string, name: string, args: unknown) => ws.send(JSON.stringify({ id, name, namespace: 'rpc', args }));
      if (env.id === 'bridge_request_ident') {
        // Each agent its own name: a host nickname (by default its hostname) belongs to one key.
        reply(env.id, { type, hostname: `bench-${type}-${process.pid}-${++peersNamed}` });
        call('enroll', 'bridge_enroll', { token, pub_key: key.pubKeyB64 });
        call('s1', 'auth_ssl', { action: 'auth_ssl', md5_key: key.md5 });
      } else if (env.name === 'error') {
        reject(new Error(`bridge refused ${env.id}: ${JSON.stringify(env.args)}`));
      } else if (env.id === 's1') {
        const proof = sign(
          key.algorithm === 'rsa' ? 'sha256' : null,
          Buffer.from(signedMessage('bridge-signin', env.args.test_string as string)),
          key.privateKey,
        );
        call('s2', 'auth_ssl', { signature: proof.toString('base64') });
      } else if (env.id === 'bridge_request_list_keys') {
        reply(env.id, { md5_keys: md5Keys });
      } else if (env.name === 'event') {
        const args = (env.args as unknown as { args: { available_connections?: string[] } }).args;
        if (args.available_connections) {
          ws.off('message', onMessage);
          resolve({ ws, offer: args.available_connections });
        }
      }
    };
    ws.on('message', onMessage);
  });
}

/**
 * RSS and heap after memory-reducing full collections (they also shrink the young generation, so RSS
 * compares); the median of three readings 150 ms apart, as RSS settles unevenly.
 */
export async function memory(): Promise<{ rss: number; heap: number }> {
  const gc = (globalThis as { gc?: (o?: object) => void }).gc;
  const readings: Array<{ rss: number; heap: number }> = [];
  for (let i = 0; i < 3; i++) {
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const m = process.memoryUsage();
    readings.push({ rss: m.rss, heap: m.heapUsed });
    await new Promise((r) => setTimeout(r, 150));
  }
  const mid = <T>(xs: T[], f: (x: T) => number) => xs.map(f).sort((a, b) => a - b)[1]!;
  return { rss: mid(readings, (r) => r.rss), heap: mid(readings, (r) => r.heap) };
}

// ---------------------------------------------------------------- child processes

export interface Child {
  proc: ChildProcess;
  next<T>(): Promise<T>;
  ask<T>(msg: unknown): Promise<T>;
}

/**
 * The V8 flags that client/bin/hostadm starts Node with (its `v8_flags="…"` line), so the bench's
 * bridge runs as `hostadm bridge` does.
 */
export function launcherV8Flags(): string[] {
  const launcher = readFileSync(new URL('../../client/bin/hostadm', import.meta.url), 'utf8');
  const line = /^v8_flags="([^"]*)"$/m.exec(launcher);
  if (!line) throw new Error('client/bin/hostadm has no v8_flags="…" line: the bench would not start the bridge as hostadm does');
  return line[1]!.split(' ').filter(Boolean);
}

/** Forks `script` with a role; its IPC messages are queued for `next`. `nodeFlags` go before the script. */
export function spawnRole(script: string, role: string, args: string[] = [], nodeFlags: string[] = []): Child {
  const execArgv = ['--expose-gc', '--disable-warning=ExperimentalWarning', ...nodeFlags];
  const proc = fork(script, [role, ...args], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const queue: unknown[] = [];
  const waiters: Array<(m: unknown) => void> = [];
  proc.on('message', (m) => (waiters.length > 0 ? waiters.shift()!(m) : queue.push(m)));
  const next = <T>() => new Promise<T>((resolve) => (queue.length > 0 ? resolve(queue.shift() as T) : waiters.push(resolve as (m: unknown) => void)));
  return {
    proc,
    next,
    ask: <T>(msg: unknown) => {
      proc.send(msg as object);
      return next<T>();
    },
  };
}

/** utime + stime of a process, in seconds (Linux /proc; clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// ---------------------------------------------------------------- links and the measurement

/** How round trip `s` is sent and its echo recognised. The payload starts with `s` as a 12-character tag. */
export interface Link {
  send(s: number): void;
  /** Calls `onEcho` with the tag of every echo; returns the unsubscribe. */
  listen(onEcho: (s: number) => void): () => void;
}

export const tagged = (s: number, filler: string) => `${String(s).padEnd(12, ' ')}${filler.slice(12)}`;

/** Plain relay frames `<dest>\n<payload>`, `size` characters of payload. */
export function plainLink(ws: WebSocket, dest: string, size: number): Link {
  const filler = 'x'.repeat(size);
  return {
    send: (s) => ws.send(`${dest}\n${tagged(s, filler)}`),
    listen(onEcho) {
      const onMessage = (data: Buffer) => {
        const nl = data.indexOf(10);
        onEcho(Number.parseInt(data.toString('latin1', nl + 1, nl + 13), 10));
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

/**
 * Control (◊): plain relay frames that carry every payload sent in one tick, joined by newlines, at
 * most RECORD_TEXT_MAX characters each, as hsc3 coalesces (its record bound, FLUSH_BYTES), but with
 * no encryption: what coalescing alone gains, so hsc3's crypto cost can be read apart from it.
 */
const RECORD_TEXT_MAX = FLUSH_BYTES;
export function coalescedPlainLink(ws: WebSocket, dest: string, size: number): Link {
  const filler = 'x'.repeat(size);
  let queued: string[] = [];
  let queuedChars = 0;
  const flush = () => {
    if (queued.length > 0) ws.send(`${dest}\n${queued.join('\n')}`);
    queued = [];
    queuedChars = 0;
  };
  return {
    send: (s) => {
      if (queuedChars + size > RECORD_TEXT_MAX) flush();
      if (queued.length === 0) queueMicrotask(flush);
      queued.push(tagged(s, filler));
      // Payload characters only, as ChannelSender counts a record's envelopes: the same payloads per frame as hsc3's records.
      queuedChars += size;
    },
    listen(onEcho) {
      const onMessage = (data: Buffer) => {
        for (let at = data.indexOf(10) + 1; at > 0 && at < data.length; at = data.indexOf(10, at) + 1) {
          onEcho(Number.parseInt(data.toString('latin1', at, at + 12), 10));
        }
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

export interface Cell {
  msgsPerSec: number;
  p50: number;
  p99: number;
  /** CPU of the relay process (or echo server) per frame it forwarded (or echoed), µs. */
  cpuPerFrame: number;
  /** CPU of the load client (this process: for the secure paths its seal and open) per round trip, µs. */
  clientCpuPerMsg: number;
  /** CPU of the far end (echo peer or agent; NaN when not given) per round trip, µs. */
  farCpuPerMsg: number;
}

/** A path of relay.bench.ts as measure() takes it. */
export interface MeasuredPath {
  name: string;
  link: (size: number) => Link;
  pid: number;
  frames: number;
  farPid?: number;
}

/**
 * More rounds for the paths the targets compare, after the interleaved rounds of every path: five
 * pairs made a target's median move by ±0.1 from run to run of the same code on this shared machine
 * (hsc3 vs bridge at 16 KiB × 64: 0.62×, 0.74×, 0.82×). Each round measures `paths` in their order
 * at each size, the next round in reverse, so a target's two cells (next to each other in `paths`)
 * run back to back, AB then BA. Cells by `${name}|${size}|${inflight}`, one per round, as the main rounds'.
 */
export async function targetRounds(paths: readonly MeasuredPath[], sizes: readonly number[], inflight: number, rounds: number): Promise<Map<string, Cell[]>> {
  const cells = new Map<string, Cell[]>();
  const order = sizes.flatMap((size) => paths.map((path) => ({ path, size })));
  for (let round = 0; round < rounds; round++) {
    for (const { path, size } of round % 2 === 0 ? order : [...order].reverse()) {
      const key = `${path.name}|${size}|${inflight}`;
      cells.set(key, [...(cells.get(key) ?? []), await measure(path.link(size), inflight, path.pid, path.frames, path.farPid)]);
    }
  }
  return cells;
}

/**
 * N round trips in flight on `link` for the window; each echo sends the next. RTTs in µs.
 * `framesPerMsg`: frames the measured process handles per round trip (a relay forwards 2, an echo
 * server answers 1).
 */
export async function measure(link: Link, inflight: number, pid: number, framesPerMsg: number, farPid = 0): Promise<Cell> {
  const mask = (1 << 20) - 1;
  const sentAt = new Float64Array(mask + 1);
  let seq = 0;
  let outstanding = 0;
  let sending = true;
  let counting = false;
  let count = 0;
  const rtts: number[] = [];
  const send = () => {
    const s = seq++;
    sentAt[s & mask] = performance.now();
    outstanding++;
    link.send(s);
  };
  let drained: () => void = () => {};
  const stop = link.listen((s) => {
    outstanding--;
    if (counting) {
      count++;
      rtts.push((performance.now() - sentAt[s & mask]!) * 1000);
    }
    if (sending) send();
    else if (outstanding === 0) drained();
  });
  for (let i = 0; i < inflight; i++) send();
  await new Promise((r) => setTimeout(r, WARM_MS));
  counting = true;
  const t0 = performance.now();
  const cpu0 = cpuSeconds(pid);
  const far0 = farPid ? cpuSeconds(farPid) : NaN;
  const own0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  counting = false;
  const cpu1 = cpuSeconds(pid);
  const far1 = farPid ? cpuSeconds(farPid) : NaN;
  const own = process.cpuUsage(own0);
  const seconds = (performance.now() - t0) / 1000;
  sending = false;
  await new Promise<void>((resolve) => {
    drained = resolve;
    if (outstanding === 0) resolve();
    setTimeout(resolve, 5000);
  });
  stop();
  rtts.sort((a, b) => a - b);
  const pct = (p: number) => rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))] ?? NaN;
  return {
    msgsPerSec: count / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    cpuPerFrame: ((cpu1 - cpu0) * 1e6) / (count * framesPerMsg),
    clientCpuPerMsg: (own.user + own.system) / count,
    farCpuPerMsg: ((far1 - far0) * 1e6) / count,
  };
}

// ---------------------------------------------------------------- child roles shared with relay.bench.ts

type Reply = (msg: unknown) => void;
const toParent: Reply = (msg) => process.send!(msg);

/** The direct path's far end (and the bare ws server of the memory comparison): echoes every frame. */
export async function roleEchoServer(): Promise<void> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => ws.on('message', (d, isBinary) => ws.send(d, { binary: isBinary })));
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'mem') void memory().then((mem) => toParent({ mem, clients: wss.clients.size }));
  });
  toParent({ port: (wss.address() as { port: number }).port });
}

/**
 * The minimal relay: the floor a forwarding relay costs. Pairs connections in arrival order.
 * `withBridgeHeap`: the same relay in a process that has loaded the bridge's modules (a control:
 * it separates what the bridge's relay path costs from what its process's larger heap costs).
 */
export async function roleMinimalRelay(withBridgeHeap: boolean): Promise<void> {
  if (withBridgeHeap) {
    (globalThis as { keep?: unknown }).keep = await import('@hostadm/bridge');
    (await import('@hostadm/bridge/runtime/node/v8-tuning.ts')).releaseStartupHeap();
  }
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  let waiting: WebSocket | null = null;
  wss.on('connection', (ws) => {
    if (!waiting) {
      waiting = ws;
      return;
    }
    const a = waiting;
    waiting = null;
    a.on('message', (d, isBinary) => ws.send(d, { binary: isBinary }));
    ws.on('message', (d, isBinary) => a.send(d, { binary: isBinary }));
    a.on('close', () => ws.close());
    ws.on('close', () => a.close());
  });
  await new Promise((r) => wss.once('listening', r));
  toParent({ port: (wss.address() as { port: number }).port });
}
