/**
 * The Workers bridge under load, sharded by host against today's single hub, in one run on one
 * local workerd (`wrangler dev`; a measurement, not a test). docs/bridge-protocol.md §2.10 builds
 * its capacity model from these figures.
 *
 * HOSTS agents (100) and CLIENTS clients (200, two per host) sign in, then every client makes
 * ROUND_TRIPS round trips to its host (a relay frame each way; the agent echoes), INFLIGHT at once:
 * - hub:     everyone on `/relay`, the shared room: one Durable Object (`main`) relays every frame;
 * - sharded: each agent in its host room `/relay/host/<fp>` (a Durable Object of its own), each
 *            client joins the room of its host: one object per host, no frame crosses objects.
 * Reported for each: whether every reply arrived, workerd CPU per relayed frame (each frame is
 * handled by exactly one object, so this is one object's CPU per frame; locally all objects share
 * the one workerd process), and the sign-in cost (wall time per sign-in and workerd CPU per
 * sign-in). Then the directory: CLIENTS directory sockets sign in and stay open for DIRECTORY_IDLE_S
 * seconds; their objects poll the D1 host index every 5 s (workerd CPU per poll).
 *
 * Keys are Ed25519 for agents and clients (bridge sign-in accepts both; RSA key generation for 200
 * clients would dominate the run). Env: BENCH_HOSTS (100), BENCH_CLIENTS (200), BENCH_ROUND_TRIPS
 * (50), BENCH_INFLIGHT (4), BENCH_DIRECTORY_IDLE_S (16).
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import WebSocket from 'ws';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { issueJoinToken } from '@hostadm/bridge/relay/join-token.ts';
import type { MetricsSnapshot } from '@hostadm/bridge/relay/metrics.ts';
import { startWorkerdBridge, type WorkerdBridge } from '../../scripts/workerd-bridge.ts';
import { cpuSeconds, median, type Key } from './relay-helpers.ts';

const HOSTS = Number(process.env.BENCH_HOSTS ?? 100);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 200);
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 50);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 4);
const DIRECTORY_IDLE_S = Number(process.env.BENCH_DIRECTORY_IDLE_S ?? 16);
/** Sign-ins started at once (a fleet reconnecting does not all arrive in the same millisecond). */
const SIGNIN_PARALLEL = 20;

interface HostKey extends Key {
  fingerprint: string;
}

function edKey(): HostKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return {
    privateKey,
    pem,
    pubKeyB64: Buffer.from(pem).toString('base64'),
    md5: createHash('md5').update(pem).digest('base64'),
    algorithm: 'ed25519',
    fingerprint: `SHA256:${createHash('sha256').update(raw).digest('base64url')}`,
  };
}

interface Session {
  ws: WebSocket;
  offer: string[];
  peers: Array<{ id: string; room?: string }>;
  ms: number;
}

let named = 0;

/** identify → (enroll) → auth_ssl pinned to the key → key list → first announcement. */
function signIn(url: string, type: 'server' | 'client', key: Key, md5Keys: string[], token?: string): Promise<Session> {
  const started = performance.now();
  // Each peer its own address, as on the edge (one address may hold 256 sockets per object).
  const n = ++named;
  const ws = new WebSocket(url, { perMessageDeflate: false, headers: { 'CF-Connecting-IP': `198.18.${n >> 8}.${n & 255}` } });
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    const onMessage = (data: Buffer) => {
      const env = JSON.parse(data.toString()) as { id: string; name: string; args: Record<string, unknown> };
      const call = (id: string, name: string, args: unknown) => ws.send(JSON.stringify({ id, name, namespace: 'rpc', args }));
      if (env.id === 'bridge_request_ident') {
        ws.send(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { type, hostname: `shard-${type}-${process.pid}-${n}` } }));
        if (token) call('enroll', 'bridge_enroll', { token, pub_key: key.pubKeyB64 });
        call('s1', 'auth_ssl', { action: 'auth_ssl', md5_key: key.md5 });
      } else if (env.name === 'error') {
        reject(new Error(`bridge refused ${env.id}: ${JSON.stringify(env.args)}`));
      } else if (env.id === 's1') {
        const proof = sign(null, Buffer.from(signedMessage('bridge-signin', env.args.test_string as string)), key.privateKey);
        call('s2', 'auth_ssl', { signature: proof.toString('base64') });
      } else if (env.id === 'bridge_request_list_keys') {
        ws.send(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { md5_keys: md5Keys } }));
      } else if (env.name === 'event') {
        const args = (env.args as unknown as { args: { available_connections?: string[]; peers?: Session['peers'] } }).args;
        if (args.available_connections && (type === 'server' || args.available_connections.length > 0 || md5Keys.length === 0 || url.endsWith('/directory'))) {
          ws.off('message', onMessage);
          resolve({ ws, offer: args.available_connections, peers: args.peers ?? [], ms: performance.now() - started });
        }
      }
    };
    ws.on('message', onMessage);
  });
}

async function inBatches<T, R>(items: T[], run: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  for (let i = 0; i < items.length; i += SIGNIN_PARALLEL) {
    const batch = items.slice(i, i + SIGNIN_PARALLEL);
    const done = await Promise.all(batch.map((item, j) => run(item, i + j)));
    done.forEach((r, j) => (out[i + j] = r));
  }
  return out;
}

/** Agents echo every relay frame to its sender (the bridge rewrote the first line to the sender's id). */
function echo(ws: WebSocket): void {
  ws.on('message', (data: Buffer) => {
    if (data[0] !== 0x7b) ws.send(data, { binary: false });
  });
}

/** Each client: ROUND_TRIPS round trips to its host, INFLIGHT outstanding; resolves with the replies counted. */
function load(client: Session, hostId: string): Promise<number> {
  return new Promise((resolve) => {
    let sent = 0;
    let replies = 0;
    const send = () => client.ws.send(`${hostId}\nround trip ${sent++} ${'x'.repeat(160)}`);
    client.ws.on('message', (data: Buffer) => {
      if (data[0] === 0x7b) return;
      replies++;
      if (sent < ROUND_TRIPS) send();
      if (replies === ROUND_TRIPS) resolve(replies);
    });
    for (let i = 0; i < Math.min(INFLIGHT, ROUND_TRIPS); i++) send();
  });
}

interface ModeResult {
  mode: string;
  objects: number;
  agentSignInMs: number;
  clientSignInMs: number;
  cpuPerSignInMs: number;
  replies: number;
  expected: number;
  frames: number;
  seconds: number;
  cpuPerFrameUs: number;
}

async function runMode(w: WorkerdBridge, mode: 'hub' | 'sharded', hosts: HostKey[], clients: HostKey[], tokens: Map<Key, string>): Promise<ModeResult> {
  const base = `ws://127.0.0.1:${w.port}/relay`;
  const hostOf = (c: number) => c % hosts.length;
  const urlFor = (h: number) => (mode === 'hub' ? base : `${base}/host/${hosts[h]!.fingerprint.slice(7)}`);
  const take = (k: Key) => {
    const t = tokens.get(k);
    tokens.delete(k);
    return t;
  };
  const cpu0 = cpuSeconds(w.workerdPid());
  const agents = await inBatches(hosts, (k, h) => {
    const keys = clients.filter((_, c) => hostOf(c) === h).map((c) => c.md5);
    return signIn(urlFor(h), 'server', k, keys, take(k));
  });
  for (const a of agents) echo(a.ws);
  const sessions = await inBatches(clients, (k, c) => signIn(urlFor(hostOf(c)), 'client', k, [k.md5], take(k)));
  const cpuSignIns = cpuSeconds(w.workerdPid()) - cpu0;
  const hostIds = sessions.map((s, c) => {
    // The client's host: in the hub every client is offered its one host too (it lists two clients' keys).
    if (s.offer.length !== 1) throw new Error(`${mode}: client ${c} was offered ${s.offer.length} hosts`);
    return s.offer[0]!;
  });
  const cpu1 = cpuSeconds(w.workerdPid());
  const t0 = performance.now();
  const replies = (await Promise.all(sessions.map((s, c) => load(s, hostIds[c]!)))).reduce((a, b) => a + b, 0);
  const seconds = (performance.now() - t0) / 1000;
  const cpuLoad = cpuSeconds(w.workerdPid()) - cpu1;
  const frames = replies * 2;
  for (const s of [...sessions, ...agents]) s.ws.close();
  await new Promise((r) => setTimeout(r, 1500));
  return {
    mode,
    objects: mode === 'hub' ? 1 : hosts.length,
    agentSignInMs: median(agents.map((a) => a.ms)),
    clientSignInMs: median(sessions.map((s) => s.ms)),
    cpuPerSignInMs: (cpuSignIns * 1000) / (hosts.length + clients.length),
    replies,
    expected: clients.length * ROUND_TRIPS,
    frames,
    seconds,
    cpuPerFrameUs: (cpuLoad * 1e6) / frames,
  };
}

async function metrics(w: WorkerdBridge): Promise<MetricsSnapshot & { objects: number }> {
  const res = await fetch(`${w.httpUrl}/metrics`, { headers: { authorization: `Bearer ${w.adminSecret}` } });
  return (await res.json()) as MetricsSnapshot & { objects: number };
}

async function main(): Promise<void> {
  const w = await startWorkerdBridge();
  try {
    const hosts = Array.from({ length: HOSTS }, edKey);
    const clients = Array.from({ length: CLIENTS }, edKey);
    const secret = new TextEncoder().encode(w.joinSecret);
    const tokens = new Map<Key, string>();
    for (const [kind, keys] of [['agent', hosts] as const, ['client', clients] as const]) {
      for (const k of keys) tokens.set(k, (await issueJoinToken(secret, { kind, ttlSeconds: 3600 }, Date.now())).token);
    }
    console.log(`${HOSTS} hosts, ${CLIENTS} clients (two per host), ${ROUND_TRIPS} round trips each (${INFLIGHT} in flight), 200-byte frames; local workerd`);
    // The hub first: it also enrolls every key (the sign-in figures below exclude the first run's enrollments).
    await runMode(w, 'hub', hosts, clients, tokens);
    const results = [await runMode(w, 'sharded', hosts, clients, tokens), await runMode(w, 'hub', hosts, clients, tokens)];
    console.log('mode      objects  replies          frames  seconds  CPU/frame µs  sign-in ms (agent, client)  CPU/sign-in ms');
    for (const r of results) {
      console.log(
        `${r.mode.padEnd(9)} ${String(r.objects).padStart(7)}  ${`${r.replies}/${r.expected}`.padEnd(15)} ${String(r.frames).padStart(7)} ${r.seconds.toFixed(1).padStart(8)} ${r.cpuPerFrameUs.toFixed(0).padStart(13)}  ${`${r.agentSignInMs.toFixed(0)}, ${r.clientSignInMs.toFixed(0)}`.padStart(26)} ${r.cpuPerSignInMs.toFixed(1).padStart(15)}`,
      );
      if (r.replies !== r.expected) throw new Error(`${r.mode}: ${r.expected - r.replies} replies missing`);
    }
    // The directory: one object per socket; each polls the D1 index every 5 s while its socket is open.
    // The hosts online in their rooms again, so every lookup finds its client's host.
    const agents = await inBatches(hosts, (k, h) =>
      signIn(
        `ws://127.0.0.1:${w.port}/relay/host/${k.fingerprint.slice(7)}`,
        'server',
        k,
        clients.filter((_, c) => c % hosts.length === h).map((c) => c.md5),
      ),
    );
    const before = await metrics(w);
    const cpu0 = cpuSeconds(w.workerdPid());
    const dirs = await inBatches(clients, (k) => signIn(`ws://127.0.0.1:${w.port}/relay/directory`, 'client', k, [k.md5]));
    const listed = dirs.filter((d) => d.peers.length === 1 && d.peers[0]!.room?.startsWith('host/')).length;
    if (listed !== dirs.length) throw new Error(`directory: ${dirs.length - listed} sockets were not announced their host and its room`);
    const cpuSignIn = cpuSeconds(w.workerdPid()) - cpu0;
    const cpu1 = cpuSeconds(w.workerdPid());
    await new Promise((r) => setTimeout(r, DIRECTORY_IDLE_S * 1000));
    const cpuIdle = cpuSeconds(w.workerdPid()) - cpu1;
    for (const d of [...dirs, ...agents]) d.ws.close();
    await new Promise((r) => setTimeout(r, 12_000));
    const after = await metrics(w);
    const lookups = after.directory_lookups - before.directory_lookups;
    console.log(
      `directory: ${dirs.length} sockets (each announced its host and room), sign-in + first lookup ${median(dirs.map((d) => d.ms)).toFixed(0)} ms (median), ` +
        `${((cpuSignIn * 1000) / dirs.length).toFixed(1)} ms workerd CPU each; ${lookups} D1 lookups in all (sign-ins and polls), ` +
        `${((cpuIdle * 1000) / Math.max(1, lookups - dirs.length)).toFixed(2)} ms CPU per poll over ${DIRECTORY_IDLE_S} s idle`,
    );
    console.log(
      `/metrics summed over ${after.objects} objects: frames_relayed ${after.frames_relayed}, signins ${after.signins}, connections now ${JSON.stringify(after.connections)}`,
    );
  } finally {
    await w.stop();
  }
}

await main();
