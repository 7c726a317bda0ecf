/**
 * Bridge test harness, for either runtime (`HOSTADM_BRIDGE_RUNTIME=node|workers`, default node; `npm
 * test` runs the bridge and e2e tests once per runtime):
 * - node: an in-process bridge on a free loopback port with its own temporary data directory and a
 *   manual clock (the periodic sweep is driven by the test);
 * - workers: one `wrangler dev` (workerd) per test process, and a fresh relay hub (Durable Object)
 *   per test through the test-only routes (clock offset, sweep, config), with the same D1 schema.
 * The WebSocket peer that talks to it as an agent or a client does is in peers.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import { issueJoinToken, joinSecretKey, startBridge, type BridgeOptions, type RunningBridge } from '@hostadm/bridge';
import type { MetricsSnapshot } from '@hostadm/bridge/relay/metrics.ts';
import type { KeyRecord } from '@hostadm/bridge/relay/ports.ts';
import { startWorkerdBridge, type WorkerdBridge } from '../../scripts/workerd-bridge.ts';

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
  workerd ??= startWorkerdBridge({ testHooks: true, hostname: 'test-bridge', verbose: process.env.HOSTADM_TEST_LOG === 'debug' });
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

export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
