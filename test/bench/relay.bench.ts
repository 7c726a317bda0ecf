/**
 * Relay throughput, latency and memory (a measurement, not a test), all on loopback in one run:
 *
 * - direct:   load client ⇄ ws echo server
 * - minimal:  load client ⇄ a 20-line ws forwarder (pairs two connections) ⇄ echo peer
 * - minimal+heap (control): the same forwarder in a process that loaded the bridge's modules
 * - bridge:   load client (signed-in client) ⇄ hostadm bridge ⇄ echo peer (signed-in agent)
 *
 * Every frame is `<dest>\n<payload>` and the far end sends it back unchanged (on the bridge the first
 * line is rewritten both ways, so the echo peer's reply goes back to the sender). Servers and echo
 * peers each run in their own process, the load in this one. Cells are interleaved over rounds and
 * the median is reported. Then the bridge's memory per idle, signed-in agent connection (RSS and heap
 * after gc, N agents), with a bare ws server measured the same way for reference.
 *
 * Env: BENCH_ROUNDS (3), BENCH_WINDOW_MS (1500), BENCH_INFLIGHT (64), BENCH_SIZES (200,16384), BENCH_IDLE_AGENTS (500).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, createHash, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 1500);
const WARM_MS = 400;
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const IDLE_AGENTS = Number(process.env.BENCH_IDLE_AGENTS ?? 500);
const WARM_AGENTS = 100;
const SIZES = (process.env.BENCH_SIZES ?? '200,16384').split(',').map(Number);
const self = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------- shared helpers

interface Key {
  privateKey: KeyObject;
  pubKeyB64: string;
  md5: string;
  algorithm: 'rsa' | 'ed25519';
}

function makeKey(algorithm: 'rsa' | 'ed25519'): Key {
  const { privateKey, publicKey } = algorithm === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { privateKey, pubKeyB64: Buffer.from(pem).toString('base64'), md5: createHash('md5').update(pem).digest('base64'), algorithm };
}

function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * Signs in to the bridge as an agent or client: answers identify, enrolls with `token`, auth_ssl
 * pinned to the key, answers list_ssl_checksums; resolves with the first announcement.
 */
async function bridgeSignIn(url: string, type: 'server' | 'client', key: Key, token: string, md5Keys: string[]): Promise<{ ws: WebSocket; offer: string[] }> {
  // The listener goes on before 'open': the bridge's identify request can arrive with the handshake.
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    const onMessage = (data: Buffer) => {
      const env = JSON.parse(data.toString()) as { id: string; name: string; args: Record<string, unknown> };
      const reply = (id: string, args: unknown) => ws.send(JSON.stringify({ id, name: 'response', namespace: 'rpc', args }));
      const call = (id: string, name: string, args: unknown) => ws.send(JSON.stringify({ id, name, namespace: 'rpc', args }));
      if (env.id === 'bridge_request_ident') {
        reply(env.id, { type, hostname: `bench-${type}` });
        call('enroll', 'bridge_enroll', { token, pub_key: key.pubKeyB64 });
        call('s1', 'auth_ssl', { action: 'auth_ssl', md5_key: key.md5 });
      } else if (env.name === 'error') {
        reject(new Error(`bridge refused ${env.id}: ${JSON.stringify(env.args)}`));
      } else if (env.id === 's1') {
        const proof = sign(key.algorithm === 'rsa' ? 'sha256' : null, Buffer.from(env.args.test_string as string), key.privateKey);
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
async function memory(): Promise<{ rss: number; heap: number }> {
  const gc = (globalThis as { gc?: (o?: object) => void }).gc;
  const readings: Array<{ rss: number; heap: number }> = [];
  for (let i = 0; i < 3; i++) {
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const m = process.memoryUsage();
    readings.push({ rss: m.rss, heap: m.heapUsed });
    await new Promise((r) => setTimeout(r, 150));
  }
  const mid = <T,>(xs: T[], f: (x: T) => number) => xs.map(f).sort((a, b) => a - b)[1]!;
  return { rss: mid(readings, (r) => r.rss), heap: mid(readings, (r) => r.heap) };
}

// ---------------------------------------------------------------- child roles

type Reply = (msg: unknown) => void;
const toParent: Reply = (msg) => process.send!(msg);

async function roleEchoServer(): Promise<void> {
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
async function roleMinimalRelay(withBridgeHeap: boolean): Promise<void> {
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

async function roleBridge(): Promise<void> {
  const { startBridge, issueJoinToken, joinSecretKey } = await import('@hostadm/bridge');
  const pino = (await import('pino')).default;
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-bench-bridge-'));
  const bridge = await startBridge({ listen: { host: '127.0.0.1', port: 0 }, dataDir, logger: pino({ level: 'silent' }) });
  const secret = joinSecretKey(dataDir);
  process.on('message', async (msg: { cmd: string; kind?: 'agent' | 'client'; n?: number }) => {
    if (msg.cmd === 'tokens') {
      const tokens: string[] = [];
      for (let i = 0; i < (msg.n ?? 1); i++) tokens.push((await issueJoinToken(secret, { kind: msg.kind!, ttlSeconds: 600 }, Date.now())).token);
      toParent({ tokens });
    } else if (msg.cmd === 'mem') {
      toParent({ mem: await memory(), metrics: bridge.metrics() });
    } else if (msg.cmd === 'stop') {
      await bridge.close();
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    }
  });
  toParent({ url: bridge.url });
}

/** The far end: echoes every relay frame back unchanged. On the bridge it signs in as an agent first. */
async function roleEchoPeer(url: string, token?: string, clientMd5?: string): Promise<void> {
  const ws = token ? (await bridgeSignIn(url, 'server', makeKey('ed25519'), token, [clientMd5!])).ws : await open(url);
  ws.on('message', (d: Buffer, isBinary) => {
    if (d[0] !== 0x7b) ws.send(d, { binary: isBinary });
  });
  toParent({ ready: true });
}

// ---------------------------------------------------------------- parent

interface Child {
  proc: ChildProcess;
  next<T>(): Promise<T>;
  ask<T>(msg: unknown): Promise<T>;
}

function spawnRole(role: string, args: string[] = []): Child {
  const proc = fork(self, [role, ...args], { execArgv: ['--expose-gc', '--disable-warning=ExperimentalWarning'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const queue: unknown[] = [];
  const waiters: Array<(m: unknown) => void> = [];
  proc.on('message', (m) => (waiters.length > 0 ? waiters.shift()!(m) : queue.push(m)));
  const next = <T>() => new Promise<T>((resolve) => (queue.length > 0 ? resolve(queue.shift() as T) : waiters.push(resolve as (m: unknown) => void)));
  return { proc, next, ask: <T>(msg: unknown) => (proc.send(msg as object), next<T>()) };
}

interface Cell {
  msgsPerSec: number;
  p50: number;
  p99: number;
  /** CPU of the relay process (or echo server) per frame it forwarded (or echoed), µs. */
  cpuPerFrame: number;
}

/** utime + stime of a process, in seconds (Linux /proc; clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * N frames in flight on `ws` for the window; each echo sends the next. RTTs in µs. `framesPerMsg`:
 * frames the measured process handles per round trip (a relay forwards 2, an echo server answers 1).
 */
async function measure(ws: WebSocket, dest: string, size: number, inflight: number, pid: number, framesPerMsg: number): Promise<Cell> {
  const filler = 'x'.repeat(size);
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
    const tag = String(s).padEnd(12, ' ');
    sentAt[s & mask] = performance.now();
    outstanding++;
    ws.send(`${dest}\n${tag}${filler.slice(12)}`);
  };
  let drained: () => void = () => {};
  const onMessage = (data: Buffer) => {
    const nl = data.indexOf(10);
    const s = Number.parseInt(data.toString('latin1', nl + 1, nl + 13), 10);
    outstanding--;
    if (counting) {
      count++;
      rtts.push((performance.now() - sentAt[s & mask]!) * 1000);
    }
    if (sending) send();
    else if (outstanding === 0) drained();
  };
  ws.on('message', onMessage);
  for (let i = 0; i < inflight; i++) send();
  await new Promise((r) => setTimeout(r, WARM_MS));
  counting = true;
  const t0 = performance.now();
  const cpu0 = cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  counting = false;
  const cpu1 = cpuSeconds(pid);
  const seconds = (performance.now() - t0) / 1000;
  sending = false;
  await new Promise<void>((resolve) => {
    drained = resolve;
    if (outstanding === 0) resolve();
    setTimeout(resolve, 5000);
  });
  ws.off('message', onMessage);
  rtts.sort((a, b) => a - b);
  const pct = (p: number) => rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))] ?? NaN;
  return { msgsPerSec: count / seconds, p50: pct(0.5), p99: pct(0.99), cpuPerFrame: ((cpu1 - cpu0) * 1e6) / (count * framesPerMsg) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function parent(): Promise<void> {
  const started = performance.now();
  const children: Child[] = [];
  const spawn = (role: string, args?: string[]) => {
    const c = spawnRole(role, args);
    children.push(c);
    return c;
  };
  try {
    // direct
    const echo = spawn('echo-server');
    const echoPort = (await echo.next<{ port: number }>()).port;
    const direct = await open(`ws://127.0.0.1:${echoPort}`);

    // minimal relay: the echo peer connects first, the load client second
    const minimalChild = spawn('minimal-relay');
    const minimalPort = (await minimalChild.next<{ port: number }>()).port;
    const minimalUrl = `ws://127.0.0.1:${minimalPort}`;
    await spawn('echo-peer', [minimalUrl]).next();
    const minimal = await open(minimalUrl);
    const heavyChild = spawn('minimal-relay', ['with-bridge-heap']);
    const heavyUrl = `ws://127.0.0.1:${(await heavyChild.next<{ port: number }>()).port}`;
    await spawn('echo-peer', [heavyUrl]).next();
    const heavy = await open(heavyUrl);

    // bridge
    const bridge = spawn('bridge');
    const bridgeUrl = (await bridge.next<{ url: string }>()).url;
    const clientKey = makeKey('rsa');
    const [agentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
    await spawn('echo-peer', [bridgeUrl, agentToken!, clientKey.md5]).next();
    const [clientToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
    const { ws: viaBridge, offer } = await bridgeSignIn(bridgeUrl, 'client', clientKey, clientToken!, [clientKey.md5]);
    const agentId = offer[0];
    if (!agentId) throw new Error('the bridge did not offer the echo agent');

    // The same bytes on every path: direct and minimal carry a dummy first line as long as the bridge's.
    const dummy = 'agent-00000000-0000-0000-0000-000000000000';
    const paths: Array<{ name: string; ws: WebSocket; dest: string; pid: number; frames: number }> = [
      { name: 'direct', ws: direct, dest: dummy, pid: echo.proc.pid!, frames: 1 },
      { name: 'minimal relay', ws: minimal, dest: dummy, pid: minimalChild.proc.pid!, frames: 2 },
      { name: 'minimal+heap†', ws: heavy, dest: dummy, pid: heavyChild.proc.pid!, frames: 2 },
      { name: 'bridge', ws: viaBridge, dest: agentId, pid: bridge.proc.pid!, frames: 2 },
    ];
    const results = new Map<string, Cell[]>();
    const cells: Array<{ path: (typeof paths)[number]; size: number; inflight: number }> = [];
    for (const size of SIZES) for (const path of paths) cells.push({ path, size, inflight: INFLIGHT });
    for (const path of paths) if (path.ws !== heavy) cells.push({ path, size: 200, inflight: 1 });
    for (let round = 0; round < ROUNDS; round++) {
      for (const cell of cells) {
        const key = `${cell.path.name}|${cell.size}|${cell.inflight}`;
        const r = await measure(cell.path.ws, cell.path.dest, cell.size, cell.inflight, cell.path.pid, cell.path.frames);
        results.set(key, [...(results.get(key) ?? []), r]);
      }
    }

    console.log(`relay throughput and RTT on loopback (${ROUNDS} interleaved rounds of ${WINDOW_MS} ms, medians; ws text frames)`);
    console.log('path            size      in flight    msg/s      MB/s   RTT p50 µs  RTT p99 µs  CPU µs/frame*');
    const summary = new Map<string, Cell>();
    for (const cell of cells) {
      const key = `${cell.path.name}|${cell.size}|${cell.inflight}`;
      const rs = results.get(key)!;
      const s: Cell = {
        msgsPerSec: median(rs.map((r) => r.msgsPerSec)),
        p50: median(rs.map((r) => r.p50)),
        p99: median(rs.map((r) => r.p99)),
        cpuPerFrame: median(rs.map((r) => r.cpuPerFrame)),
      };
      summary.set(key, s);
      const size = cell.size >= 1024 ? `${cell.size / 1024} KiB` : `${cell.size} B`;
      console.log(
        `${cell.path.name.padEnd(15)} ${size.padEnd(9)} ${String(cell.inflight).padStart(9)} ${s.msgsPerSec.toFixed(0).padStart(9)} ${((s.msgsPerSec * cell.size) / 1e6).toFixed(1).padStart(8)} ${s.p50.toFixed(0).padStart(11)} ${s.p99.toFixed(0).padStart(11)} ${s.cpuPerFrame.toFixed(1).padStart(13)}`,
      );
    }
    console.log('* CPU of the relay process per frame it forwards (direct: of the echo server per frame it echoes), from /proc');
    console.log("† the minimal relay in a process that loaded the bridge's modules (same heap as the bridge): a control, not a target");
    let throughputMet = true;
    for (const size of SIZES) {
      const b = summary.get(`bridge|${size}|${INFLIGHT}`)!;
      const m = summary.get(`minimal relay|${size}|${INFLIGHT}`)!;
      const d = summary.get(`direct|${size}|${INFLIGHT}`)!;
      const h = summary.get(`minimal+heap†|${size}|${INFLIGHT}`)!;
      const ratio = b.msgsPerSec / m.msgsPerSec;
      if (ratio < 1.0) throughputMet = false;
      const label = size >= 1024 ? `${size / 1024} KiB` : `${size} B`;
      console.log(
        `ratio bridge/minimal at ${label} × ${INFLIGHT}: msg/s ${ratio.toFixed(2)}×, RTT p50 ${(b.p50 / m.p50).toFixed(2)}×, p99 ${(b.p99 / m.p99).toFixed(2)}×, ` +
          `CPU per frame ${(b.cpuPerFrame / m.cpuPerFrame).toFixed(2)}×   (bridge/direct msg/s ${(b.msgsPerSec / d.msgsPerSec).toFixed(2)}×; ` +
          `bridge/minimal+heap† msg/s ${(b.msgsPerSec / h.msgsPerSec).toFixed(2)}×, CPU ${(b.cpuPerFrame / h.cpuPerFrame).toFixed(2)}×)`,
      );
    }
    const bl = summary.get('bridge|200|1')!;
    const ml = summary.get('minimal relay|200|1')!;
    console.log(`ratio bridge/minimal unloaded RTT (200 B × 1): p50 ${(bl.p50 / ml.p50).toFixed(2)}×, p99 ${(bl.p99 / ml.p99).toFixed(2)}×`);
    const stats = await bridge.ask<{ metrics: { drops: Record<string, number>; frames_relayed: number } }>({ cmd: 'mem' });
    console.log(`bridge counters: ${stats.metrics.frames_relayed} frames relayed, drops ${JSON.stringify(stats.metrics.drops)}`);
    for (const ws of [direct, minimal, heavy, viaBridge]) ws.terminate();

    // ---- memory per idle agent
    const tokens = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: IDLE_AGENTS + WARM_AGENTS })).tokens;
    const keys = tokens.map(() => makeKey('ed25519'));
    const agents: WebSocket[] = [];
    const connectMany = async (from: number, to: number) => {
      for (let i = from; i < to; i += 50) {
        const batch = [];
        for (let j = i; j < Math.min(to, i + 50); j++) batch.push(bridgeSignIn(bridgeUrl, 'server', keys[j]!, tokens[j]!, [`bench-user-key-${j % 10}`]));
        for (const { ws } of await Promise.all(batch)) agents.push(ws);
      }
    };
    // Warm-up: the sign-in path's optimized code and first allocations are not per-connection costs.
    await connectMany(0, WARM_AGENTS);
    await new Promise((r) => setTimeout(r, 300));
    const before = (await bridge.ask<{ mem: { rss: number; heap: number } }>({ cmd: 'mem' })).mem;
    await connectMany(WARM_AGENTS, WARM_AGENTS + IDLE_AGENTS);
    await new Promise((r) => setTimeout(r, 500));
    const after = await bridge.ask<{ mem: { rss: number; heap: number }; metrics: { connections: { agent: number } } }>({ cmd: 'mem' });
    const rssPer = (after.mem.rss - before.rss) / IDLE_AGENTS / 1024;
    const heapPer = (after.mem.heap - before.heap) / IDLE_AGENTS / 1024;

    // the same for a bare ws server, for reference
    const bare: WebSocket[] = [];
    for (let i = 0; i < WARM_AGENTS; i++) bare.push(await open(`ws://127.0.0.1:${echoPort}`));
    await new Promise((r) => setTimeout(r, 300));
    const bareBefore = (await echo.ask<{ mem: { rss: number; heap: number } }>({ cmd: 'mem' })).mem;
    for (let i = 0; i < IDLE_AGENTS; i += 100) bare.push(...(await Promise.all(Array.from({ length: 100 }, () => open(`ws://127.0.0.1:${echoPort}`)))));
    await new Promise((r) => setTimeout(r, 500));
    const bareAfter = (await echo.ask<{ mem: { rss: number; heap: number } }>({ cmd: 'mem' })).mem;

    console.log(
      `memory per idle signed-in agent on the bridge (${after.metrics.connections.agent} agents): RSS ${rssPer.toFixed(1)} KiB, heap ${heapPer.toFixed(1)} KiB` +
        `   (bare ws server: RSS ${((bareAfter.rss - bareBefore.rss) / IDLE_AGENTS / 1024).toFixed(1)} KiB, heap ${((bareAfter.heap - bareBefore.heap) / IDLE_AGENTS / 1024).toFixed(1)} KiB)`,
    );
    const memoryMet = rssPer <= 10;
    console.log(`target: bridge ≥ 1.0× minimal relay msg/s (200 B and 16 KiB × ${INFLIGHT}): ${throughputMet ? 'met' : 'NOT met'}`);
    console.log(`target: ≤ 10 KiB per idle agent connection (RSS): ${memoryMet ? 'met' : 'NOT met'}`);
    for (const ws of [...agents, ...bare]) ws.terminate();
    bridge.proc.send({ cmd: 'stop' });
    await new Promise((r) => bridge.proc.once('exit', r));
    console.log(`(bench took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
  }
}

const [role, ...args] = process.argv.slice(2);
if (role) process.on('SIGTERM', () => process.exit(0));
switch (role) {
  case 'echo-server':
    await roleEchoServer();
    break;
  case 'minimal-relay':
    await roleMinimalRelay(args[0] === 'with-bridge-heap');
    break;
  case 'bridge':
    await roleBridge();
    break;
  case 'echo-peer':
    await roleEchoPeer(args[0]!, args[1], args[2]);
    break;
  default:
    await parent();
    process.exit(0);
}
