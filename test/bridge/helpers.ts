/**
 * Bridge test harness, for either runtime (`HOSTADM_BRIDGE_RUNTIME=node|workers`, default node; `npm
 * test` runs the bridge and e2e tests once per runtime):
 * - node: an in-process bridge on a free loopback port with its own temporary data directory and a
 *   manual clock (the periodic sweep is driven by the test);
 * - workers: one `wrangler dev` (workerd) per test process, and a fresh relay hub (Durable Object)
 *   per test through the test-only routes (clock offset, sweep, config), with the same D1 schema.
 * Plus a WebSocket peer that answers the bridge's identify and list_ssl_checksums requests the way an
 * agent or a client does.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import WebSocket from 'ws';
import { issueJoinToken, joinSecretKey, startBridge, type BridgeOptions, type RunningBridge } from '@hostadm/bridge';
import type { MetricsSnapshot } from '@hostadm/bridge/relay/metrics.ts';
import type { KeyRecord } from '@hostadm/bridge/relay/ports.ts';
import { startWorkerdBridge, type WorkerdBridge } from '../../scripts/workerd-bridge.ts';
import { signatureProof, type TestKey } from '../helpers/keys.ts';

export type BridgeRuntimeName = 'node' | 'workers';
export const BRIDGE_RUNTIME: BridgeRuntimeName = process.env.HOSTADM_BRIDGE_RUNTIME === 'workers' ? 'workers' : 'node';

/** `test(name, { skip: nodeOnly('why') }, ...)`: a behaviour only the Node runtime has (documented in docs/bridge-protocol.md §2.9). */
export function nodeOnly(why: string): string | false {
  return BRIDGE_RUNTIME === 'workers' ? `Node bridge only: ${why}` : false;
}

export class ManualClock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}

export interface TestBridge {
  runtime: BridgeRuntimeName;
  /** Where peers connect (`ws://.../relay`). */
  url: string;
  /** The HTTP base of this bridge: `<httpUrl>/metrics`, `<httpUrl>/admin/...`. */
  httpUrl: string;
  adminSecret: string;
  /** The bridge's clock; on Workers the offset reaches the hub before `advance` resolves. */
  clock: { advance(seconds: number): Promise<void>; now(): number };
  /** Node: the bridge's data directory (bridge.db, secrets); Workers: workerd's local state directory. */
  dataDir: string;
  /** A join token signed with this bridge's secret, issued at the bridge's time. */
  token(kind: 'agent' | 'client', options?: { nickname?: string; ttlSeconds?: number }): Promise<string>;
  metrics(): Promise<MetricsSnapshot>;
  /** The bridge's time (ms): what its clock says after `advance`. */
  now(): Promise<number>;
  /** Registered keys through the admin API (`GET /admin/keys`; no `spkiPem`). */
  keys(): Promise<KeyRecord[]>;
  /** Runs the relay's periodic upkeep now. */
  sweep(): Promise<void>;
  /** Stops the bridge, keeping its data, and starts a new one on the same port and data. */
  restart(): Promise<TestBridge>;
  close(): Promise<void>;
  /** Node runtime only: the in-process bridge (store, relay), for white-box checks. */
  node?: RunningBridge & { dataDir: string };
}

type NodeOverrides = Partial<BridgeOptions>;

export async function startTestBridge(t: TestContext, overrides: NodeOverrides = {}, dataDir?: string): Promise<TestBridge> {
  return BRIDGE_RUNTIME === 'workers' ? startWorkersTestBridge(t, overrides) : startNodeTestBridge(t, overrides, dataDir);
}

async function startNodeTestBridge(t: TestContext, overrides: NodeOverrides, dataDir?: string): Promise<TestBridge> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'hostadm-bridge-test-'));
  if (!dataDir) t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new ManualClock();
  const bridge = await startBridge({
    listen: { host: '127.0.0.1', port: 0 },
    dataDir: dir,
    clock,
    logger: pino({ level: process.env.HOSTADM_TEST_LOG ?? 'silent' }),
    sweepIntervalMs: 0,
    hostname: 'test-bridge',
    ...overrides,
  });
  t.after(() => bridge.close());
  return {
    runtime: 'node',
    url: bridge.url,
    httpUrl: bridge.httpUrl,
    adminSecret: readFileSync(join(dir, 'admin-secret'), 'utf8').trim(),
    clock: { advance: async (seconds) => clock.advance(seconds), now: () => clock.now() },
    dataDir: dir,
    async token(kind, options = {}) {
      const { token } = await issueJoinToken(joinSecretKey(dir), { kind, nickname: options.nickname, ttlSeconds: options.ttlSeconds ?? 600 }, clock.now());
      return token;
    },
    metrics: async () => bridge.metrics(),
    now: async () => clock.now(),
    keys: () => adminKeys(bridge.httpUrl, readFileSync(join(dir, 'admin-secret'), 'utf8').trim()),
    sweep: () => bridge.sweep(),
    async restart() {
      await bridge.close();
      return startNodeTestBridge(t, { ...overrides, listen: { host: '127.0.0.1', port: bridge.port } }, dir);
    },
    close: () => bridge.close(),
    node: Object.assign(bridge, { dataDir: dir }),
  };
}

interface AdminKey {
  key_id: string;
  md5_key: string;
  kind: 'agent' | 'client';
  nickname: string;
  algorithm: 'rsa' | 'ed25519';
  created_by: string;
  created_at: string;
  last_seen_at: string | null;
  revoked_at: string | null;
}

async function adminKeys(httpUrl: string, adminSecret: string): Promise<KeyRecord[]> {
  const res = await fetch(`${httpUrl}/admin/keys`, { headers: { authorization: `Bearer ${adminSecret}` } });
  if (!res.ok) throw new Error(`GET /admin/keys: HTTP ${res.status} ${await res.text()}`);
  const { keys } = (await res.json()) as { keys: AdminKey[] };
  const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));
  return keys.map((k) => ({
    id: k.key_id,
    md5Key: k.md5_key,
    spkiPem: '',
    algorithm: k.algorithm,
    kind: k.kind,
    nickname: k.nickname,
    createdBy: k.created_by,
    createdAt: Date.parse(k.created_at),
    lastSeenAt: ms(k.last_seen_at),
    revokedAt: ms(k.revoked_at),
  }));
}

/** One workerd per test process, started on first use; its state directory goes when the process ends. */
let workerd: Promise<WorkerdBridge> | null = null;

function sharedWorkerd(): Promise<WorkerdBridge> {
  workerd ??= startWorkerdBridge({ testHooks: true, hostname: 'test-bridge', verbose: process.env.HOSTADM_TEST_LOG === 'debug' }).then((w) => {
    process.once('exit', () => rmSync(w.stateDir, { recursive: true, force: true }));
    return w;
  });
  return workerd;
}

async function startWorkersTestBridge(_t: TestContext, overrides: NodeOverrides): Promise<TestBridge> {
  const unsupported = Object.keys(overrides).filter((k) => k !== 'config' && k !== 'listen' && k !== 'hostname');
  if (unsupported.length > 0) throw new Error(`the Workers test bridge cannot take ${unsupported.join(', ')}: mark the test nodeOnly()`);
  let w = await sharedWorkerd();
  const hub = `t${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const base = () => `${w.httpUrl}/_hub/${hub}`;
  const call = async <T>(path: string, body?: unknown): Promise<T> => {
    const res = await fetch(
      base() + path,
      body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
    );
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  if (overrides.config) await call('/__test/config', overrides.config);
  // Tests in one file run one after another; each starts with an empty store, like the Node bridge's.
  await call('/__test/forget-keys', {});
  let offsetMs = 0;
  const bridge: TestBridge = {
    runtime: 'workers',
    url: `ws://127.0.0.1:${w.port}/_hub/${hub}/relay`,
    get httpUrl() {
      return base();
    },
    adminSecret: w.adminSecret,
    clock: {
      async advance(seconds) {
        await call('/__test/advance', { seconds });
        offsetMs += seconds * 1000;
      },
      // The hub's clock is real time plus the offsets sent to it.
      now: () => Date.now() + offsetMs,
    },
    get dataDir() {
      return w.stateDir;
    },
    async token(kind, options = {}) {
      const { now } = await call<{ now: number }>('/__test/now');
      const secret = new TextEncoder().encode(w.joinSecret);
      const { token } = await issueJoinToken(secret, { kind, nickname: options.nickname, ttlSeconds: options.ttlSeconds ?? 600 }, now);
      return token;
    },
    metrics: async () => {
      const res = await fetch(`${base()}/metrics`, { headers: { authorization: `Bearer ${w.adminSecret}` } });
      if (!res.ok) throw new Error(`/metrics: HTTP ${res.status} ${await res.text()}`);
      return (await res.json()) as MetricsSnapshot;
    },
    now: async () => (await call<{ now: number }>('/__test/now')).now,
    keys: () => adminKeys(base(), w.adminSecret),
    // The periodic upkeep, and the directory objects' poll of the host index (their alarm's work).
    sweep: async () => {
      await call('/__test/sweep', {});
      await call('/__test/poll-directories', {});
    },
    async restart() {
      w = await w.restart();
      workerd = Promise.resolve(w);
      return bridge;
    },
    async close() {
      // The hub goes with the shared workerd; its peers are closed by the test.
    },
  };
  return bridge;
}

export interface Envelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

export interface Announcement {
  available_connections: string[];
  peers: Array<{ id: string; kind: string; nickname: string; hostname: string; host_key_fingerprint: string | null }>;
}

export function md5Of(key: TestKey): string {
  return createHash('md5').update(Buffer.from(key.pubKeyB64, 'base64')).digest('base64');
}

type Waiter = { match: (msg: Message) => boolean; resolve: (msg: Message) => void };
type Message = { env: Envelope } | { frame: string };

/**
 * A peer on the bridge. Answers identify with `type`, and list_ssl_checksums with `md5Keys` (a
 * getter, so a test can change what it would answer). Keeps every frame received.
 */
export class TestPeer {
  readonly ws: WebSocket;
  readonly type: 'server' | 'client';
  md5Keys: string[];
  readonly received: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Requests the bridge sent to this peer (identify, list_ssl_checksums). */
  readonly bridgeRequests: Envelope[] = [];
  private readonly waiters: Waiter[] = [];
  private seq = 0;

  private constructor(ws: WebSocket, type: 'server' | 'client', md5Keys: string[], answerIdentify: boolean) {
    this.ws = ws;
    this.type = type;
    this.md5Keys = md5Keys;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on('message', (data, isBinary) => {
      const text = (data as Buffer).toString('utf8');
      const msg: Message = !isBinary && text.startsWith('{') ? { env: JSON.parse(text) as Envelope } : { frame: text };
      if ('env' in msg && msg.env.name !== 'response' && msg.env.name !== 'error' && msg.env.name !== 'event') {
        this.bridgeRequests.push(msg.env);
        if (msg.env.id === 'bridge_request_ident' && answerIdentify) {
          this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { type, hostname: `${type}-host` } });
        } else if (msg.env.id === 'bridge_request_list_keys') {
          this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { md5_keys: this.md5Keys } });
        }
      }
      this.received.push(msg);
      for (let i = 0; i < this.waiters.length; i++) {
        const w = this.waiters[i]!;
        if (w.match(msg)) {
          this.waiters.splice(i, 1);
          w.resolve(msg);
          return;
        }
      }
    });
  }

  static async connect(url: string, type: 'server' | 'client', md5Keys: string[] = [], answerIdentify = true): Promise<TestPeer> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const peer = new TestPeer(ws, type, md5Keys, answerIdentify);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    });
    // As real peers do: calls start once the bridge asked who is there (on Workers the request may
    // arrive after 'open'; on Node it comes with the handshake).
    if (answerIdentify) await peer.wait((m) => 'env' in m && m.env.id === 'bridge_request_ident');
    return peer;
  }

  send(envelope: unknown): void {
    this.ws.send(JSON.stringify(envelope));
  }

  /** Waits for a message received so far (not yet consumed by a waiter) or later that matches. */
  private wait(match: (msg: Message) => boolean, consumeFrom = 0): Promise<Message> {
    for (let i = consumeFrom; i < this.received.length; i++) {
      const msg = this.received[i]!;
      if (match(msg)) return Promise.resolve(msg);
    }
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  async request(name: string, args?: unknown, id = `req-${++this.seq}`): Promise<Envelope> {
    const from = this.received.length;
    const reply = this.wait((m) => 'env' in m && m.env.id === id && (m.env.name === 'response' || m.env.name === 'error'), from);
    this.send({ id, name, namespace: 'rpc', args });
    return ((await reply) as { env: Envelope }).env;
  }

  async enroll(token: string, key: TestKey, nickname?: string): Promise<Envelope> {
    return this.request('bridge_enroll', { token, pub_key: key.pubKeyB64, ...(nickname ? { nickname } : {}) });
  }

  /** Both auth_ssl stages with the modern signature form; `pin` sends the md5_key stage 1. */
  async signIn(key: TestKey, pin = false): Promise<Envelope> {
    const stage1 = await this.request('auth_ssl', pin ? { action: 'auth_ssl', md5_key: md5Of(key) } : '');
    if (stage1.name !== 'response') return stage1;
    const { test_string } = stage1.args as { test_string: string };
    return this.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', test_string) });
  }

  /** The n-th announcement from now on (or an earlier one not yet seen, when `since` is given). */
  nextAnnouncement(since = this.received.length, match: (a: Announcement) => boolean = () => true): Promise<Announcement> {
    return this.wait((m) => {
      const a = announcementOf(m);
      return a !== null && match(a);
    }, since).then((m) => announcementOf(m)!);
  }

  /** The latest announcement received so far. */
  lastAnnouncement(): Announcement | null {
    for (let i = this.received.length - 1; i >= 0; i--) {
      const a = announcementOf(this.received[i]!);
      if (a) return a;
    }
    return null;
  }

  nextDropped(since = this.received.length): Promise<{ destination: string; reason: string }> {
    return this.wait((m) => droppedOf(m) !== null, since).then((m) => droppedOf(m)!);
  }

  nextFrame(since = this.received.length): Promise<string> {
    return this.wait((m) => 'frame' in m, since).then((m) => (m as { frame: string }).frame);
  }

  close(): void {
    this.ws.terminate();
  }
}

function bridgeEvent(m: Message): Record<string, unknown> | null {
  if (!('env' in m) || m.env.name !== 'event') return null;
  const args = m.env.args as { name: string; args: Record<string, unknown> };
  return args.name === 'bridge' ? args.args : null;
}

function announcementOf(m: Message): Announcement | null {
  const e = bridgeEvent(m);
  return e && 'available_connections' in e ? (e as unknown as Announcement) : null;
}

function droppedOf(m: Message): { destination: string; reason: string } | null {
  const e = bridgeEvent(m);
  return e && 'dropped' in e ? (e.dropped as { destination: string; reason: string }) : null;
}

/**
 * Connects, enrolls `key` with a fresh token, signs in, and waits for the first announcement (the
 * bridge always sends one right after the peer lists its keys).
 */
export async function signedInPeer(
  bridge: TestBridge,
  type: 'server' | 'client',
  key: TestKey,
  options: { md5Keys?: string[]; enroll?: boolean; nickname?: string; url?: string } = {},
): Promise<{ peer: TestPeer; announcement: Announcement }> {
  const kind = type === 'server' ? 'agent' : 'client';
  const peer = await TestPeer.connect(options.url ?? bridge.url, type, options.md5Keys ?? (type === 'client' ? [md5Of(key)] : []));
  if (options.enroll !== false) {
    const enrolled = await peer.enroll(await bridge.token(kind, { nickname: options.nickname }), key);
    if (enrolled.name !== 'response') throw new Error(`enroll failed: ${JSON.stringify(enrolled.args)}`);
  }
  const since = peer.received.length;
  const reply = await peer.signIn(key, true);
  if (reply.name !== 'response') throw new Error(`sign-in failed: ${JSON.stringify(reply.args)}`);
  const announcement = await peer.nextAnnouncement(since);
  return { peer, announcement };
}

/** A room of the bridge (docs/bridge-protocol.md §2.10): `host/<fp>`, `directory`; '' the shared room. */
export function roomUrl(bridge: TestBridge, room: string): string {
  return room ? `${bridge.url}/${room}` : bridge.url;
}

/**
 * The URL of the room where the directory says host `nickname` is, for `key` (a client key; enrolled
 * first with a fresh token unless `enrolled`), waiting until the directory lists it.
 */
export async function hostRoomUrl(bridge: TestBridge, key: TestKey, nickname: string, enrolled = false): Promise<string> {
  const { peer } = await signedInPeer(bridge, 'client', key, { url: roomUrl(bridge, 'directory'), enroll: !enrolled });
  try {
    await until(() => (peer.lastAnnouncement()?.peers ?? []).some((p) => p.nickname === nickname), `the directory listing ${nickname}`);
    const entry = peer.lastAnnouncement()!.peers.find((p) => p.nickname === nickname)! as { room?: string };
    return roomUrl(bridge, entry.room ?? '');
  } finally {
    peer.close();
  }
}

/** The peer's connection id, as the bridge announced it to `other`. */
export function idOf(announcement: Announcement, hostnameOrNickname: string): string {
  const entry = announcement.peers.find((p) => p.nickname === hostnameOrNickname || p.hostname === hostnameOrNickname);
  if (!entry) throw new Error(`no peer ${hostnameOrNickname} in ${JSON.stringify(announcement)}`);
  return entry.id;
}

export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
