/**
 * Test harness: an in-process agent on a free loopback port with its own temporary data directory,
 * a controllable clock and a silent logger, plus a small WebSocket client that matches replies by id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import WebSocket from 'ws';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { startAgent, type AgentOptions, type RunningAgent } from '@hostadm/agent/agent.ts';
import { signatureProof, type TestKey } from './keys.ts';

export const SIM_PASSWORD = 'test-pass-1';

export class ManualClock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}

export interface TestAgent extends RunningAgent {
  clock: ManualClock;
  dataDir: string;
  httpUrl: string;
  /** Stops the agent and removes its data directory. */
  dispose(): Promise<void>;
  /** Stops the agent, keeping its data, and starts a new one on the same directory. */
  restart(): Promise<TestAgent>;
}

export async function startTestAgent(overrides: Partial<AgentOptions> = {}, dataDir?: string): Promise<TestAgent> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'hostadm-test-'));
  const clock = new ManualClock();
  const options: AgentOptions = {
    platform: 'sim',
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    simPassword: SIM_PASSWORD,
    clock,
    logger: pino({ level: process.env.HOSTADM_TEST_LOG ?? 'silent' }),
    ...overrides,
    // A test that hands in a command runner counts the commands its request caused: the snapshot
    // scheduler's periodic `zpool list` would race with that, so it ticks hourly unless a test asks.
    config: { strictReplies: true, ...(overrides.runner ? { schedulerTickMs: 3_600_000 } : {}), ...overrides.config },
  };
  const agent = await startAgent(options);
  const testAgent: TestAgent = Object.assign(agent, {
    clock,
    dataDir: dir,
    httpUrl: agent.url.replace(/^ws/, 'http'),
    async dispose() {
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await agent.close();
      return startTestAgent(overrides, dir);
    },
  });
  return testAgent;
}

export interface Envelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

/** A WebSocket client for tests: `request` resolves with the reply envelope whose id matches. */
export class TestClient {
  readonly ws: WebSocket;
  readonly events: Envelope[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly pending = new Map<string, (env: Envelope) => void>();
  private readonly eventWaiters: Array<(env: Envelope) => void> = [];
  private seq = 0;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on('message', (data) => {
      const env = JSON.parse(data.toString()) as Envelope;
      if (env.namespace === 'events' && env.name === 'event') {
        this.events.push(env);
        for (const w of this.eventWaiters.splice(0)) w(env);
        return;
      }
      const resolve = this.pending.get(env.id);
      if (resolve) {
        this.pending.delete(env.id);
        resolve(env);
      }
    });
  }

  static async connect(url: string): Promise<TestClient> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    });
    return new TestClient(ws);
  }

  /** Sends a request envelope and waits for the reply with the same id. */
  request(namespace: string, name: string, args?: unknown, id = `req-${++this.seq}`): Promise<Envelope> {
    const reply = new Promise<Envelope>((resolve) => this.pending.set(id, resolve));
    this.ws.send(JSON.stringify({ id, name, namespace, args }));
    return reply;
  }

  /** Sends raw text (malformed frames) and waits for the reply with `expectId`. */
  sendRaw(text: string | Buffer, expectId = ''): Promise<Envelope> {
    const reply = new Promise<Envelope>((resolve) => this.pending.set(expectId, resolve));
    this.ws.send(text);
    return reply;
  }

  /** Registers a waiter for the reply with `expectId`, then runs `send` (frames built by the caller). */
  sendRawExpecting(expectId: string, send: () => void): Promise<Envelope> {
    const reply = new Promise<Envelope>((resolve) => this.pending.set(expectId, resolve));
    send();
    return reply;
  }

  call(className: string, action: string, args: Record<string, unknown> = {}): Promise<Envelope> {
    return this.request('admin', className, { action, ...args });
  }

  async login(username: string, password = SIM_PASSWORD): Promise<string> {
    const reply = await this.request('rpc', 'auth', { username, password });
    if (reply.name !== 'response') throw new Error(`login failed: ${JSON.stringify(reply)}`);
    return (reply.args as [string, number])[0];
  }

  /** The next event (or one already received that matches). */
  nextEvent(predicate: (env: Envelope) => boolean = () => true): Promise<Envelope> {
    const seen = this.events.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const waiter = (env: Envelope) => (predicate(env) ? resolve(env) : this.eventWaiters.push(waiter));
      this.eventWaiters.push(waiter);
    });
  }

  close(): void {
    this.ws.terminate();
  }
}

/** A REST call; returns the HTTP status and the parsed body. */
export async function rest(
  agent: { httpUrl: string },
  path: string,
  body: unknown,
  auth?: { basic?: [string, string]; bearer?: string },
): Promise<{ status: number; body: { args: unknown } }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth?.basic) headers.authorization = `Basic ${Buffer.from(auth.basic.join(':')).toString('base64')}`;
  if (auth?.bearer) headers.authorization = `Bearer ${auth.bearer}`;
  const res = await fetch(`${agent.httpUrl}${path}`, {
    method: 'PUT',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { args: unknown } };
}

/**
 * `query` as a full-access user: every subsystem listed is `read/write`, and the settings classes
 * that every platform serves are there. (Which other classes appear depends on the platform.)
 */
export function assertFullQuery(args: unknown): void {
  if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error(`query reply is not an object: ${JSON.stringify(args)}`);
  const entries = Object.entries(args);
  const notFull = entries.filter(([, v]) => v !== 'read/write');
  if (notFull.length > 0) throw new Error(`not read/write for a full-access user: ${JSON.stringify(notFull)}`);
  for (const key of ['admin/settings', 'rpc/settings', 'rpc/dispatcher']) {
    if (!Object.hasOwn(args, key)) throw new Error(`query lacks ${key}: ${JSON.stringify(args)}`);
  }
}

/** An agent for one test, disposed when the test ends. */
export async function agentFor(t: TestContext, overrides: Partial<AgentOptions> = {}): Promise<TestAgent> {
  const agent = await startTestAgent(overrides);
  t.after(() => agent.dispose());
  return agent;
}

/** A WebSocket client for one test (signed in as `user` when given), closed when the test ends. */
export async function clientFor(t: TestContext, agent: { url: string }, user?: string, password = SIM_PASSWORD): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  if (user) await client.login(user, password);
  return client;
}

/**
 * Registers `key` for `user` on `agent` as its administrator would: signed in directly with the
 * password, the proof signing that session's token. Fails the test when the agent refuses it.
 */
export async function registerKey(t: TestContext, agent: { url: string }, key: TestKey, user = 'admin'): Promise<void> {
  const admin = await clientFor(t, agent);
  const token = await admin.login(user);
  const registered = await admin.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof: signatureProof(key, 'register-proof', token) });
  assert.equal(registered.name, 'response', JSON.stringify(registered.args));
  admin.close();
}

/**
 * A client for one test signed in as `user` at `level` through a session made in the agent itself
 * (platforms without password sign-in: FreeBSD and Linux with a RecordingRunner).
 */
export async function sessionClientFor(t: TestContext, agent: TestAgent, user: string, level: 'full' | 'limited'): Promise<TestClient> {
  const session = agent.services.sessions.create({ user, level, groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await clientFor(t, agent);
  const reply = await client.request('rpc', 'auth_token', { token: session.token });
  if (reply.name !== 'response') throw new Error(`auth_token for ${user} failed: ${JSON.stringify(reply.args)}`);
  return client;
}

/** What `identify` answers for a sim test agent. */
export function simIdentity(agent: RunningAgent): Record<string, string> {
  return {
    type: 'server',
    hostname: 'simhost',
    host_key: agent.services.hostKey.publicRaw,
    host_key_fingerprint: agent.services.hostKey.fingerprint,
  };
}

/** The agent's key sign-ins and resumptions (audit rows), oldest first, as `name code` and ` resumed` when one was. */
export function auditedSignIns(agent: TestAgent): string[] {
  return agent.services.audit
    .recent(200)
    .filter((row) => row.name === 'auth_ssl' || row.name === 'auth_resume')
    .reverse()
    .map((row) => `${row.name} ${row.code}${row.detail.includes('resumed') ? ' resumed' : ''}`);
}
