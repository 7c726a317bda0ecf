/**
 * Bad input, generated: fast-check drives every envelope field and every implemented action's
 * arguments at a sim agent (WebSocket and REST, signed in and not) and arbitrary frames at the Node
 * bridge. Each request must get a reply envelope (or a clean close), nothing may crash or hang, the
 * server must answer a good request afterwards, and memory must stay bounded. The seed is fixed, so a
 * failure replays; HOSTADM_FUZZ_SEED and HOSTADM_FUZZ_RUNS explore further.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { agentFor, SIM_PASSWORD, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import { startTestBridge } from '../bridge/helpers.ts';

const SEED = Number(process.env.HOSTADM_FUZZ_SEED ?? 20261124);
const RUNS = Number(process.env.HOSTADM_FUZZ_RUNS ?? 1);
const REPLY_WITHIN_MS = 15_000;

/** Values that have broken parsers and command lines before, mixed with whatever fast-check makes. */
const nasty = fc.constantFrom(
  '',
  ' ',
  '-rf',
  '--help',
  '../../etc/passwd',
  '/etc/shadow',
  '$(reboot)',
  '`id`',
  'a;b',
  'a|b',
  'a\nb',
  '\u0000',
  'é\u202e',
  'x'.repeat(5000),
  '9'.repeat(40),
  '-1',
  'NaN',
  'true',
  '{}',
  '[]',
  'null',
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nasty },
  { weight: 2, arbitrary: fc.string({ maxLength: 64 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.oneof(nasty, fc.string({ maxLength: 16 })), { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 3, maxKeys: 5 }) },
);

function argKeys(schema: unknown): string[] {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  return shape && typeof shape === 'object' ? Object.keys(shape) : [];
}

/** Arguments for one action: its own keys with bad values, some left out, plus strangers. */
function argsFor(keys: string[]): fc.Arbitrary<Record<string, unknown>> {
  const known = keys.length > 0 ? fc.record(Object.fromEntries(keys.map((k) => [k, value])), { requiredKeys: [] }) : fc.constant({});
  return fc.tuple(known, fc.dictionary(fc.string({ maxLength: 12 }), value, { maxKeys: 2 })).map(([a, b]) => ({ ...b, ...a }));
}

function mb(bytes: number): string {
  return `${(bytes / 1048576).toFixed(0)} MB`;
}

/** A signed-in admin client that is replaced when the agent closes it (a frame too large, too deep). */
class Session {
  client!: TestClient;
  private n = 0;
  private readonly agent: TestAgent;
  private readonly user: string | null;
  constructor(agent: TestAgent, user: string | null) {
    this.agent = agent;
    this.user = user;
  }
  async ensure(): Promise<TestClient> {
    if (this.client && this.client.ws.readyState === WebSocket.OPEN) return this.client;
    this.client = await TestClient.connect(this.agent.url);
    if (this.user) await this.client.login(this.user);
    return this.client;
  }
  nextId(): string {
    return `fz-${++this.n}`;
  }
  close(): void {
    this.client?.close();
  }
}

async function replyOrClose(client: TestClient, id: string, send: () => void): Promise<Envelope | 'closed'> {
  let timer: NodeJS.Timeout | undefined;
  const reply = client.sendRawExpecting(id, send);
  const outcome = await Promise.race([
    reply,
    client.closed.then(() => 'closed' as const),
    new Promise<'hang'>((resolve) => (timer = setTimeout(() => resolve('hang'), REPLY_WITHIN_MS))),
  ]);
  clearTimeout(timer);
  assert.notEqual(outcome, 'hang', `no reply to ${id} within ${REPLY_WITHIN_MS} ms`);
  return outcome as Envelope | 'closed';
}

async function stillAnswers(session: Session): Promise<void> {
  const client = await session.ensure();
  const reply = await client.request('rpc', 'identify', {});
  assert.equal(reply.name, 'response', 'the agent still answers a good request');
}

function heapGrowthBounded(t: TestContext, before: number, what: string): void {
  const after = process.memoryUsage().rss;
  t.diagnostic(`${what}: RSS ${mb(before)} → ${mb(after)}`);
  assert.ok(after - before < 400 * 1048576, `${what}: memory grew by ${mb(after - before)}`);
}

test('every action of every class, with generated arguments, as admin and as operator: a reply each, no crash', async (t) => {
  const agent = await agentFor(t);
  const rss = process.memoryUsage().rss;
  const sessions = { admin: new Session(agent, 'admin'), operator: new Session(agent, 'operator') };
  t.after(() => Object.values(sessions).forEach((s) => s.close()));
  const contracts: ClassContract[] = [...Object.values(adminClasses), ...Object.values(rpcClasses)];
  let requests = 0;
  const outcomes = new Map<string, number>();
  const tally = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  // Classes this host serves get most of the runs; the others must answer 404 without fail.
  const served = new Set(agent.pipeline.servedContracts());
  for (const contract of contracts) {
    for (const [action, actionContract] of Object.entries(contract.actions)) {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('admin', 'operator'), argsFor(argKeys(actionContract.args)), async (who, args) => {
          const session = sessions[who as 'admin' | 'operator'];
          const client = await session.ensure();
          const id = session.nextId();
          requests++;
          const reply = await replyOrClose(client, id, () =>
            client.ws.send(JSON.stringify({ id, name: contract.name, namespace: contract.namespace, args: { ...args, action } })),
          );
          if (reply !== 'closed') assert.ok(reply.name === 'response' || reply.name === 'error', JSON.stringify(reply).slice(0, 300));
          tally(reply === 'closed' ? 'closed' : reply.name === 'response' ? 'ok' : String((reply.args as { code: number }).code));
          if (reply !== 'closed' && reply.name === 'error') {
            const code = (reply.args as { code: number }).code;
            assert.ok(
              code !== 500 || contract.name === 'systemmanager',
              `${contract.name} ${action} answered 500 to ${JSON.stringify(args).slice(0, 300)}: ${JSON.stringify(reply.args).slice(0, 300)}`,
            );
          }
        }),
        { seed: SEED, numRuns: (served.has(contract) ? 40 : 3) * RUNS, endOnFailure: true },
      );
    }
  }
  await stillAnswers(sessions.admin);
  t.diagnostic(`${requests} generated requests over ${contracts.length} classes: ${[...outcomes].map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  assert.ok((outcomes.get('ok') ?? 0) > 0 && (outcomes.get('400') ?? 0) > 0, 'the generator reaches both handlers and validation');
  heapGrowthBounded(t, rss, 'actions');
});

test('every envelope field generated, signed in and not: a reply or a clean close each, then a good request works', async (t) => {
  const agent = await agentFor(t);
  const rss = process.memoryUsage().rss;
  const sessions = [new Session(agent, 'admin'), new Session(agent, null)];
  t.after(() => sessions.forEach((s) => s.close()));
  const names = fc.oneof(
    fc.constantFrom('auth', 'auth_token', 'auth_ssl', 'query', 'identify', 'dispatcher', 'users', 'subscribe', 'event', 'response'),
    fc.string({ maxLength: 20 }),
    value,
  );
  const namespaces = fc.oneof(fc.constantFrom('rpc', 'admin', 'events'), value);
  const envelope = fc.record({ name: names, namespace: namespaces, args: value, extra: fc.option(value) }, { requiredKeys: [] });
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(0, 1), envelope, fc.oneof(fc.constant('string-id'), fc.constant('no-id'), value), async (which, env, idKind) => {
      const session = sessions[which]!;
      const client = await session.ensure();
      const id = session.nextId();
      const withId = idKind === 'string-id' ? { ...env, id } : idKind === 'no-id' ? env : { ...env, id: idKind };
      const expect =
        idKind === 'string-id' ? id : idKind === 'no-id' ? '' : typeof idKind === 'number' ? String(idKind) : typeof idKind === 'string' ? idKind : '';
      const reply = await replyOrClose(client, expect, () => client.ws.send(JSON.stringify(withId)));
      if (reply !== 'closed') assert.ok(reply.name === 'response' || reply.name === 'error');
    }),
    { seed: SEED, numRuns: 400 * RUNS, endOnFailure: true },
  );
  // Frames that are not JSON at all, or nested past the limit.
  const client = await sessions[1]!.ensure();
  for (const raw of ['', '{', '[]', 'null', '"x"', `{"id":"deep","args":${'['.repeat(5000)}${']'.repeat(5000)}}`, Buffer.from([0xff, 0xfe, 0x00])]) {
    // Refused before parsing, so the reply cannot carry the frame's id: it has the empty one.
    await replyOrClose(client, '', () => client.ws.send(raw));
  }
  await stillAnswers(sessions[0]!);
  heapGrowthBounded(t, rss, 'envelopes');
});

test('REST with generated paths, bodies and credentials: a JSON reply each, never a 500', async (t) => {
  const agent = await agentFor(t);
  const rss = process.memoryUsage().rss;
  const paths = fc.oneof(
    fc.constantFrom('/rpc/query', '/rpc/identify', '/admin/users', '/admin/fs', '/rpc/dispatcher', '/admin/', '/admin/%2e%2e/rpc/query'),
    fc.string({ maxLength: 30 }).map((s) => `/${encodeURIComponent(s)}`),
  );
  const bodies = fc.oneof(
    value.map((v) => JSON.stringify(v) ?? 'null'),
    fc.string({ maxLength: 200 }),
  );
  const auth = fc.constantFrom<[string, string] | null>(null, ['admin', SIM_PASSWORD], ['operator', SIM_PASSWORD], ['admin', 'wrong'], ['', ''], ['a:b', 'c']);
  await fc.assert(
    fc.asyncProperty(paths, bodies, auth, async (path, body, credentials) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (credentials) headers.authorization = `Basic ${Buffer.from(credentials.join(':')).toString('base64')}`;
      const res = await fetch(`${agent.httpUrl}${path}`, { method: 'PUT', headers, body, signal: AbortSignal.timeout(REPLY_WITHIN_MS) });
      const text = await res.text();
      assert.notEqual(res.status, 500, `${path} ${body.slice(0, 100)} → ${text.slice(0, 200)}`);
      if (res.status !== 404 && res.status !== 429) assert.doesNotThrow(() => JSON.parse(text), `${res.status} ${text.slice(0, 200)}`);
    }),
    { seed: SEED, numRuns: 300 * RUNS, endOnFailure: true },
  );
  const ok = await fetch(`${agent.httpUrl}/rpc/identify`, { method: 'PUT', body: '{}' });
  assert.equal(ok.status, 200);
  heapGrowthBounded(t, rss, 'REST');
});

test('the bridge, fed generated frames before and around sign-in: it answers or closes, and keeps serving', async (t) => {
  const bridge = await startTestBridge(t);
  const rss = process.memoryUsage().rss;
  const frames = fc.oneof(
    fc
      .record(
        {
          id: value,
          name: fc.oneof(fc.constantFrom('auth_ssl', 'bridge_enroll', 'identify', 'response'), value),
          namespace: fc.oneof(fc.constant('rpc'), value),
          args: value,
        },
        { requiredKeys: [] },
      )
      .map((e) => JSON.stringify(e)),
    fc.tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 200 })).map(([to, body]) => `${to}\n${body}`),
    fc.string({ maxLength: 300 }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(frames, { minLength: 1, maxLength: 6 }), async (sequence) => {
      const ws = new WebSocket(bridge.url);
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      const probed = new Promise<void>((resolve) =>
        ws.on('message', (data) => {
          if (data.toString().includes('"id":"probe"')) resolve();
        }),
      );
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      for (const frame of sequence) if (ws.readyState === WebSocket.OPEN) ws.send(frame);
      // After the garbage, the bridge still answers `identify` on that socket, or has closed it.
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ id: 'probe', name: 'identify', namespace: 'rpc', args: {} }));
      const heard = await Promise.race([
        probed.then(() => true),
        closed.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), REPLY_WITHIN_MS)),
      ]);
      assert.ok(heard, 'the bridge neither answered nor closed');
      ws.terminate();
      await closed;
    }),
    { seed: SEED, numRuns: 200 * RUNS, endOnFailure: true },
  );
  const health = await fetch(`${bridge.httpUrl}/healthz`);
  assert.equal(health.status, 200, 'the bridge still serves');
  heapGrowthBounded(t, rss, 'bridge frames');
});
