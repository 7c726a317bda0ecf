/**
 * Relay throughput, latency and memory (a measurement, not a test), all on loopback in one run:
 *
 * - direct:   load client ⇄ ws echo server
 * - minimal:  load client ⇄ a 20-line ws forwarder (pairs two connections) ⇄ echo peer
 * - nginx:    load client ⇄ Debian's nginx proxying the WebSocket (nginx-relay.ts) ⇄ echo server: the relay to beat
 * - minimal+heap (control): the same forwarder in a process that loaded the bridge's modules, with
 *   the V8 flags the bridge gets from client/bin/hostadm
 * - bridge:   load client (signed-in client) ⇄ hostadm bridge ⇄ echo peer (signed-in agent)
 * - workers bridge: the same through the Workers bridge in local workerd (`wrangler dev`)
 * - bridge+hsc1, bridge+hsc2, bridge+hsc3: the same, with the secure channel end to end (hsc1: base64
 *   text frames; hsc2: a binary frame per envelope; hsc3: what the SDK and agent negotiate on this
 *   bridge, one record per tick's envelopes, sent through the product's ChannelSender): the load
 *   client and the echo agent do the real handshake through the bridge, then every payload is sealed
 *   by its sender and opened by its receiver (the echo agent opens each frame or record and sends the
 *   plaintext back resealed)
 *
 * Every frame is `<dest>\n<payload>` and the far end sends it back unchanged (on the bridge the first
 * line is rewritten both ways, so the echo peer's reply goes back to the sender). Servers and echo
 * peers each run in their own process, the load in this one. Cells are interleaved over rounds and
 * the median is reported; a ratio between two paths is the median of the per-round ratios (the two
 * cells of a round run back to back), with its spread; the paths the targets compare then run
 * BENCH_TARGET_ROUNDS more rounds alone (relay-helpers.ts, targetRounds), and a target counts those
 * pairs too. The bridge's memory per idle agent is idle-memory.bench.ts.
 *
 * The bridge process starts with the V8 flags of client/bin/hostadm, as `hostadm bridge` does.
 *
 * Env: BENCH_ROUNDS (5), BENCH_TARGET_ROUNDS (8), BENCH_WINDOW_MS (1500), BENCH_INFLIGHT (64), BENCH_SIZES (200,16384),
 * BENCH_SKIP_WORKERS=1 (leaves out the Workers bridge row, which takes ~15 s to start).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type WebSocket from 'ws';
import { issueJoinToken } from '@hostadm/bridge/relay/join-token.ts';
import { startWorkerdBridge } from '../../scripts/workerd-bridge.ts';
import { reportTarget, summarize } from './ab-pairs.ts';
import { roleBridge } from './bridge-role.ts';
import { startNginxRelay } from './nginx-relay.ts';
import {
  bridgeSignIn,
  coalescedPlainLink,
  roleEchoServer,
  roleMinimalRelay,
  launcherV8Flags,
  makeKey,
  measure,
  median,
  open,
  plainLink,
  spawnRole,
  targetRounds,
  WINDOW_MS,
  type Cell,
  type Child,
  type MeasuredPath,
} from './relay-helpers.ts';
import { BINARY_CHANNEL_VERSIONS, type ChannelVersion } from '@hostadm/shared/crypto/index.ts';
import { bareGcmEcho, bareGcmLink, clientChannel, echoAgentChannel, reportChannelCpu, secureLink } from './channel-helpers.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET_ROUNDS = Number(process.env.BENCH_TARGET_ROUNDS ?? 8);
/** The paths the targets compare, in the order targetRounds runs them: each target's two next to each other but the minimal relay's. */
const TARGET_PATHS = ['minimal relay', 'nginx', 'bridge', 'bridge+hsc3‡'];
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const SIZES = (process.env.BENCH_SIZES ?? '200,16384').split(',').map(Number);
const WORKERS = process.env.BENCH_SKIP_WORKERS !== '1';
const self = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------- child roles

const toParent = (msg: unknown) => process.send!(msg);

/**
 * The far end: echoes every relay frame back unchanged. On the bridge it signs in as an agent first.
 * `gcm`: the bare AES-GCM control's far end instead (channel-helpers.ts).
 */
async function roleEchoPeer(url: string, token?: string, clientMd5?: string, gcm?: string): Promise<void> {
  const ws = token ? (await bridgeSignIn(url, 'server', makeKey('ed25519'), token, [clientMd5!])).ws : await open(url);
  if (gcm === 'gcm') {
    bareGcmEcho(ws);
    toParent({ ready: true });
    return;
  }
  ws.on('message', (d: Buffer, isBinary) => {
    if (d[0] !== 0x7b) ws.send(d, { binary: isBinary });
  });
  toParent({ ready: true });
}

/** The far end of bridge+hsc1/hsc2/hsc3: an agent that answers the handshake, then opens and reseals every frame. */
async function roleSecureEchoPeer(url: string, token: string, clientMd5: string, clientPemB64: string): Promise<void> {
  const { ws } = await bridgeSignIn(url, 'server', makeKey('ed25519'), token, [clientMd5]);
  const hostPublicRaw = await echoAgentChannel(ws, Buffer.from(clientPemB64, 'base64').toString());
  toParent({ hostPublicRaw });
}

// ---------------------------------------------------------------- parent

function hasBufferUtil(): boolean {
  try {
    createRequire(createRequire(import.meta.url).resolve('ws')).resolve('bufferutil');
    return !process.env.WS_NO_BUFFER_UTIL;
  } catch {
    return false;
  }
}

async function parent(): Promise<void> {
  const started = performance.now();
  const children: Child[] = [];
  const bridgeFlags = launcherV8Flags();
  const spawn = (role: string, args?: string[], nodeFlags?: string[]) => {
    const c = spawnRole(self, role, args, nodeFlags);
    children.push(c);
    return c;
  };
  try {
    // direct
    const echo = spawn('echo-server');
    const echoPort = (await echo.next<{ port: number }>()).port;
    const direct = await open(`ws://127.0.0.1:${echoPort}`);
    const nginx = await startNginxRelay(echoPort);
    if ('skipped' in nginx) console.log(`nginx row left out: ${nginx.skipped}`);
    const viaNginx = 'url' in nginx ? await open(nginx.url) : null;

    // minimal relay: the echo peer connects first, the load client second
    const minimalChild = spawn('minimal-relay');
    const minimalPort = (await minimalChild.next<{ port: number }>()).port;
    const minimalUrl = `ws://127.0.0.1:${minimalPort}`;
    await spawn('echo-peer', [minimalUrl]).next();
    const minimal = await open(minimalUrl);
    const heavyChild = spawn('minimal-relay', ['with-bridge-heap'], bridgeFlags);
    const heavyUrl = `ws://127.0.0.1:${(await heavyChild.next<{ port: number }>()).port}`;
    await spawn('echo-peer', [heavyUrl]).next();
    const heavy = await open(heavyUrl);

    // bridge
    const bridge = spawn('bridge', [], bridgeFlags);
    const bridgeUrl = (await bridge.next<{ url: string }>()).url;
    const clientKey = makeKey('rsa');
    const [agentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
    const bridgeEcho = spawn('echo-peer', [bridgeUrl, agentToken!, clientKey.md5]);
    await bridgeEcho.next();
    const [clientToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
    const { ws: viaBridge, offer } = await bridgeSignIn(bridgeUrl, 'client', clientKey, clientToken!, [clientKey.md5]);
    const agentId = offer[0];
    if (!agentId) throw new Error('the bridge did not offer the echo agent');

    // bridge + hsc1, hsc2 and hsc3: each its own agent and client (keys of their own, so each client
    // is offered one agent); the hsc3 client offers hsc3 and hsc2, as the SDK does on a bridge that
    // relays binary frames, and the echo agent takes the highest; the hsc2 client offers hsc2 only.
    const secureChannel = async (offer: readonly ChannelVersion[]) => {
      const secureKey = makeKey('rsa');
      const [secureAgentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
      const secureAgent = spawn('secure-echo-peer', [bridgeUrl, secureAgentToken!, secureKey.md5, Buffer.from(secureKey.pem).toString('base64')]);
      const { hostPublicRaw } = await secureAgent.next<{ hostPublicRaw: string }>();
      const [secureToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
      const { ws, offer: secureOffer } = await bridgeSignIn(bridgeUrl, 'client', secureKey, secureToken!, [secureKey.md5]);
      const id = secureOffer[0];
      if (!id || secureOffer.length !== 1) throw new Error(`the bridge offered ${JSON.stringify(secureOffer)} to the secure client`);
      const channel = await clientChannel(ws, id, secureKey, hostPublicRaw, offer);
      if (channel.version !== (offer[0] ?? 'hsc1')) throw new Error(`the secure channel is ${channel.version}`);
      return { ws, id, channel, farPid: secureAgent.proc.pid! };
    };
    const hsc1 = await secureChannel([]);
    const hsc2 = await secureChannel(['hsc2']);
    const hsc3 = await secureChannel(BINARY_CHANNEL_VERSIONS);
    // The controls, each its own agent and client on the bridge: bare AES-GCM calls per frame
    // (channel-helpers.ts), and hsc3's coalescing without encryption (relay-helpers.ts).
    const controlPair = async (mode: 'gcm' | 'plain') => {
      const key = makeKey('rsa');
      const [agentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
      const echoPeer = spawn('echo-peer', [bridgeUrl, agentToken!, key.md5, ...(mode === 'gcm' ? ['gcm'] : [])]);
      await echoPeer.next();
      const [token] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
      const signedIn = await bridgeSignIn(bridgeUrl, 'client', key, token!, [key.md5]);
      if (signedIn.offer.length !== 1) throw new Error(`the bridge offered ${JSON.stringify(signedIn.offer)} to the control client`);
      return { ws: signedIn.ws, id: signedIn.offer[0]!, farPid: echoPeer.proc.pid! };
    };
    const gcm = await controlPair('gcm');
    const batch = await controlPair('plain');

    // the Workers bridge in local workerd (wrangler dev): its own agent and client, like the bridge row
    const workers = WORKERS ? await startWorkerdBridge() : null;
    let viaWorkers: WebSocket | null = null;
    let workersAgentId = '';
    if (workers) {
      const workersUrl = `ws://127.0.0.1:${workers.port}/relay`;
      const workersToken = async (kind: 'agent' | 'client') =>
        (await issueJoinToken(new TextEncoder().encode(workers.joinSecret), { kind, ttlSeconds: 600 }, Date.now())).token;
      const workersKey = makeKey('rsa');
      await spawn('echo-peer', [workersUrl, await workersToken('agent'), workersKey.md5]).next();
      const signedIn = await bridgeSignIn(workersUrl, 'client', workersKey, await workersToken('client'), [workersKey.md5]);
      viaWorkers = signedIn.ws;
      workersAgentId = signedIn.offer[0] ?? '';
      if (!workersAgentId) throw new Error('the Workers bridge did not offer the echo agent');
    }

    // The same bytes on every path: direct and minimal carry a dummy first line as long as the bridge's.
    const dummy = 'agent-00000000-0000-0000-0000-000000000000';
    const paths: Array<MeasuredPath & { unloaded: boolean }> = [
      { name: 'direct', link: (size) => plainLink(direct, dummy, size), pid: echo.proc.pid!, frames: 1, unloaded: true },
      { name: 'minimal relay', link: (size) => plainLink(minimal, dummy, size), pid: minimalChild.proc.pid!, frames: 2, unloaded: true },
      ...('url' in nginx && viaNginx
        ? [{ name: 'nginx', link: (size: number) => plainLink(viaNginx, dummy, size), pid: nginx.pid, frames: 2, unloaded: true }]
        : []),
      { name: 'minimal+heap†', link: (size) => plainLink(heavy, dummy, size), pid: heavyChild.proc.pid!, frames: 2, unloaded: false },
      { name: 'bridge', link: (size) => plainLink(viaBridge, agentId, size), pid: bridge.proc.pid!, frames: 2, unloaded: true, farPid: bridgeEcho.proc.pid! },
      {
        name: 'bridge+hsc3‡',
        link: (size) => secureLink(hsc3.ws, hsc3.id, size, hsc3.channel),
        pid: bridge.proc.pid!,
        frames: 2,
        unloaded: true,
        farPid: hsc3.farPid,
      },
      {
        name: 'bridge+hsc2‡',
        link: (size) => secureLink(hsc2.ws, hsc2.id, size, hsc2.channel),
        pid: bridge.proc.pid!,
        frames: 2,
        unloaded: true,
        farPid: hsc2.farPid,
      },
      { name: 'bridge+gcm◊', link: (size) => bareGcmLink(gcm.ws, gcm.id, size), pid: bridge.proc.pid!, frames: 2, unloaded: false, farPid: gcm.farPid },
      {
        name: 'bridge+batch◊',
        link: (size) => coalescedPlainLink(batch.ws, batch.id, size),
        pid: bridge.proc.pid!,
        frames: 2,
        unloaded: false,
        farPid: batch.farPid,
      },
      {
        name: 'bridge+hsc1‡',
        link: (size) => secureLink(hsc1.ws, hsc1.id, size, hsc1.channel),
        pid: bridge.proc.pid!,
        frames: 2,
        unloaded: true,
        farPid: hsc1.farPid,
      },
      ...(workers && viaWorkers
        ? [
            {
              name: 'workers bridge§',
              link: (size: number) => plainLink(viaWorkers, workersAgentId, size),
              pid: workers.workerdPid(),
              frames: 2,
              unloaded: true,
            },
          ]
        : []),
    ];
    const results = new Map<string, Cell[]>();
    const cells: Array<{ path: (typeof paths)[number]; size: number; inflight: number }> = [];
    for (const size of SIZES) for (const path of paths) cells.push({ path, size, inflight: INFLIGHT });
    for (const path of paths) if (path.unloaded) cells.push({ path, size: 200, inflight: 1 });
    for (let round = 0; round < ROUNDS; round++) {
      // Every other round in reverse: the cells of a ratio (bridge, then bridge+hsc3 right after it) run AB, then BA.
      for (const cell of round % 2 === 0 ? cells : [...cells].reverse()) {
        const key = `${cell.path.name}|${cell.size}|${cell.inflight}`;
        const r = await measure(cell.path.link(cell.size), cell.inflight, cell.path.pid, cell.path.frames, cell.path.farPid);
        results.set(key, [...(results.get(key) ?? []), r]);
      }
    }
    const targetPaths = TARGET_PATHS.flatMap((name) => paths.filter((path) => path.name === name));
    const targetCells = await targetRounds(targetPaths, SIZES, INFLIGHT, TARGET_ROUNDS);
    /** A target path's cells: one per main round, then one per target round. */
    const targetSeries = (key: string) => [...results.get(key)!, ...(targetCells.get(key) ?? [])];

    console.log(`relay throughput and RTT on loopback (${ROUNDS} interleaved rounds of ${WINDOW_MS} ms, medians; ws text frames)`);
    // Every server-side ws unmasks each received frame; without bufferutil that is a JS byte loop
    // (~15–40 µs per 16 KiB frame here, ~2 µs native), paid alike by the bridge, the relays and the echo server.
    console.log(`ws unmask: ${hasBufferUtil() ? 'native (bufferutil)' : 'JS byte loop (bufferutil not installed): 16 KiB rows are bound by it'}`);
    console.log('path            size      in flight    msg/s      MB/s   RTT p50 µs  RTT p99 µs  CPU µs/frame*  client µs/msg  far end µs/msg');
    const summary = new Map<string, Cell>();
    for (const cell of cells) {
      const key = `${cell.path.name}|${cell.size}|${cell.inflight}`;
      const rs = results.get(key)!;
      const s: Cell = {
        msgsPerSec: median(rs.map((r) => r.msgsPerSec)),
        p50: median(rs.map((r) => r.p50)),
        p99: median(rs.map((r) => r.p99)),
        cpuPerFrame: median(rs.map((r) => r.cpuPerFrame)),
        clientCpuPerMsg: median(rs.map((r) => r.clientCpuPerMsg)),
        farCpuPerMsg: median(rs.map((r) => r.farCpuPerMsg)),
      };
      summary.set(key, s);
      const size = cell.size >= 1024 ? `${cell.size / 1024} KiB` : `${cell.size} B`;
      console.log(
        `${cell.path.name.padEnd(15)} ${size.padEnd(9)} ${String(cell.inflight).padStart(9)} ${s.msgsPerSec.toFixed(0).padStart(9)} ${((s.msgsPerSec * cell.size) / 1e6).toFixed(1).padStart(8)} ${s.p50.toFixed(0).padStart(11)} ${s.p99.toFixed(0).padStart(11)} ${s.cpuPerFrame.toFixed(1).padStart(13)} ${s.clientCpuPerMsg.toFixed(1).padStart(14)} ${Number.isNaN(s.farCpuPerMsg) ? '             -' : s.farCpuPerMsg.toFixed(1).padStart(15)}`,
      );
    }
    console.log('* CPU of the relay process per frame it forwards (direct: of the echo server per frame it echoes), from /proc');
    console.log(
      'client µs/msg: CPU of the load client (this process) per round trip; far end µs/msg: of the bridge echo peer or echo agent, from /proc (10 ms ticks)',
    );
    console.log(
      `† the minimal relay in a process that loaded the bridge's modules (same heap as the bridge) and with its V8 flags (${bridgeFlags.join(' ') || 'none'}): a control, not a target`,
    );
    if (workers) console.log('§ the same bridge on Cloudflare Workers in local workerd (wrangler dev, one Durable Object hub; CPU: the workerd process)');
    console.log(
      '‡ payload sealed by the load client, opened and resealed by the echo agent, opened again (size and MB/s: plaintext; on the wire hsc1 is base64 text, 4/3, hsc2 and hsc3 binary)',
    );
    console.log(
      '  hsc3 coalesces what a side queued in one tick into one sealed record (one AEAD call, one WebSocket and relay frame per burst: with 64 in flight a side answers a whole record of echoes at once); the plain rows (bridge, relays, direct) and hsc1/hsc2 send one WS frame per message. CPU µs/frame* is per message relayed, whatever the frames',
    );
    console.log(
      '◊ control: each frame encrypted by its sender and decrypted by its receiver with one bare node:crypto AES-256-GCM call (fixed key and nonce, no channel): the floor under hsc2',
    );
    console.log(
      "◊ batch control: the plain bridge with hsc3's coalescing and no encryption (what one tick sends leaves as one relay frame, payloads joined by newlines, as many as an hsc3 record takes, 48 KiB): hsc3 against it is what the encryption costs once coalesced",
    );
    // Per-round ratios of two target paths' msg/s (main and target rounds): median and spread.
    const pairRatio = (b: string, a: string, size: number, inflight: number) => {
      const as = targetSeries(`${a}|${size}|${inflight}`);
      return summarize(targetSeries(`${b}|${size}|${inflight}`).map((cell, round) => cell.msgsPerSec / as[round]!.msgsPerSec));
    };
    const sizeLabel = (size: number) => (size >= 1024 ? `${size / 1024} KiB` : `${size} B`);
    for (const size of SIZES) {
      const b = summary.get(`bridge|${size}|${INFLIGHT}`)!;
      const m = summary.get(`minimal relay|${size}|${INFLIGHT}`)!;
      const d = summary.get(`direct|${size}|${INFLIGHT}`)!;
      const h = summary.get(`minimal+heap†|${size}|${INFLIGHT}`)!;
      const ratio = b.msgsPerSec / m.msgsPerSec;
      const label = sizeLabel(size);
      console.log(
        `ratio bridge/minimal at ${label} × ${INFLIGHT}: msg/s ${ratio.toFixed(2)}×, RTT p50 ${(b.p50 / m.p50).toFixed(2)}×, p99 ${(b.p99 / m.p99).toFixed(2)}×, ` +
          `CPU per frame ${(b.cpuPerFrame / m.cpuPerFrame).toFixed(2)}×   (bridge/direct msg/s ${(b.msgsPerSec / d.msgsPerSec).toFixed(2)}×; ` +
          `bridge/minimal+heap† msg/s ${(b.msgsPerSec / h.msgsPerSec).toFixed(2)}×, CPU ${(b.cpuPerFrame / h.cpuPerFrame).toFixed(2)}×)`,
      );
    }
    for (const [size, inflight] of workers ? ([...SIZES.map((z) => [z, INFLIGHT]), [200, 1]] as Array<[number, number]>) : []) {
      const w = summary.get(`workers bridge§|${size}|${inflight}`)!;
      const b = summary.get(`bridge|${size}|${inflight}`)!;
      const m = summary.get(`minimal relay|${size}|${inflight}`)!;
      const label = sizeLabel(size);
      console.log(
        `ratio workers bridge at ${label} × ${inflight}: to Node bridge msg/s ${(w.msgsPerSec / b.msgsPerSec).toFixed(2)}×, RTT p50 ${(w.p50 / b.p50).toFixed(2)}×, p99 ${(w.p99 / b.p99).toFixed(2)}×; ` +
          `to minimal relay msg/s ${(w.msgsPerSec / m.msgsPerSec).toFixed(2)}×`,
      );
    }
    const bl = summary.get('bridge|200|1')!;
    const ml = summary.get('minimal relay|200|1')!;
    console.log(`ratio bridge/minimal unloaded RTT (200 B × 1): p50 ${(bl.p50 / ml.p50).toFixed(2)}×, p99 ${(bl.p99 / ml.p99).toFixed(2)}×`);
    const loads: Array<[number, number]> = [...SIZES.map((z): [number, number] => [z, INFLIGHT]), [200, 1]];
    for (const [version, size, inflight] of ['hsc1', 'hsc2', 'hsc3'].flatMap((v) => loads.map(([z, n]) => [v, z, n] as const))) {
      const sc = summary.get(`bridge+${version}‡|${size}|${inflight}`)!;
      const b = summary.get(`bridge|${size}|${inflight}`)!;
      const m = summary.get(`minimal relay|${size}|${inflight}`)!;
      const label = sizeLabel(size);
      console.log(
        `ratio bridge+${version} at ${label} × ${inflight}: to bridge msg/s ${(sc.msgsPerSec / b.msgsPerSec).toFixed(2)}×, RTT p50 ${(sc.p50 / b.p50).toFixed(2)}×, p99 ${(sc.p99 / b.p99).toFixed(2)}×; ` +
          `to minimal relay msg/s ${(sc.msgsPerSec / m.msgsPerSec).toFixed(2)}×, RTT p50 ${(sc.p50 / m.p50).toFixed(2)}×, p99 ${(sc.p99 / m.p99).toFixed(2)}×`,
      );
    }
    reportChannelCpu(results, SIZES, INFLIGHT, targetSeries);
    const stats = await bridge.ask<{ metrics: { drops: Record<string, number>; frames_relayed: number; parking: { parks: number; wakes: number } } }>({
      cmd: 'mem',
    });
    // A cell's traffic never pauses for 5 s: parks happen only between cells (the bridge's peers idle while other paths are measured).
    const { parks, wakes } = stats.metrics.parking;
    console.log(
      `bridge counters: ${stats.metrics.frames_relayed} frames relayed, drops ${JSON.stringify(stats.metrics.drops)}, ${parks} parks, ${wakes} wakes`,
    );
    for (const ws of [direct, minimal, heavy, viaBridge, hsc1.ws, hsc2.ws, hsc3.ws, gcm.ws, batch.ws, viaWorkers, viaNginx]) ws?.terminate();
    await workers?.stop();
    if ('url' in nginx) await nginx.stop();

    for (const size of SIZES) {
      const at = `${sizeLabel(size)} × ${INFLIGHT}`;
      reportTarget(`Relay: bridge vs minimal relay, msg/s at ${at}`, pairRatio('bridge', 'minimal relay', size, INFLIGHT), 1.0, 'at-least');
      if (results.has(`nginx|${size}|${INFLIGHT}`))
        reportTarget(`Relay: bridge vs nginx, msg/s at ${at}`, pairRatio('bridge', 'nginx', size, INFLIGHT), 1.0, 'at-least');
      // The channel as the SDK and the agent negotiate it on this bridge (hsc3); hsc1's and hsc2's ratios are printed above.
      reportTarget(`Channel: bridge+hsc3 vs bridge, msg/s at ${at}`, pairRatio('bridge+hsc3‡', 'bridge', size, INFLIGHT), 0.7, 'at-least');
    }
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
    await roleEchoPeer(args[0]!, args[1], args[2], args[3]);
    break;
  case 'secure-echo-peer':
    await roleSecureEchoPeer(args[0]!, args[1]!, args[2]!, args[3]!);
    break;
  default:
    await parent();
    process.exit(0);
}
