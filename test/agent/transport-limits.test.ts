/**
 * Transport limits over real sockets: oversized frames and bodies, REST methods and paths,
 * concurrent and pipelined requests, the in-flight cap, and the idle / unauthenticated closes.
 * No assertion depends on how fast the machine is: slow steps are held open with gates.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentOptions } from '@hostadm/agent/agent.ts';
import type { ErrorArgs } from '@hostadm/shared/protocol/errors.ts';
import {
  assertFullQuery,
  rest,
  SIM_PASSWORD,
  startTestAgent,
  type TestClient,
  type Envelope,
  type TestAgent,
  clientFor,
  simIdentity,
} from '../helpers/agent.ts';

const ADMIN: [string, string] = ['admin', SIM_PASSWORD];

async function agentFor(t: TestContext, config: AgentOptions['config'] = {}): Promise<TestAgent> {
  const agent = await startTestAgent({ config });
  t.after(() => agent.dispose());
  return agent;
}

/** A promise the test opens when it chooses. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** The reply, or the close if the connection closes first (so a closed socket fails fast, not by timeout). */
async function replyOrClose(client: TestClient, reply: Promise<Envelope>): Promise<Envelope | { closed: number }> {
  return Promise.race([reply, client.closed.then((c) => ({ closed: c.code }))]);
}

test('a WebSocket frame over maxFrameBytes closes that connection with 1009; the agent keeps serving', async (t) => {
  const agent = await agentFor(t, { maxFrameBytes: 64 * 1024 });
  const bystander = await clientFor(t, agent, 'admin');
  const client = await clientFor(t, agent, 'admin');

  client.ws.send(JSON.stringify({ id: 'big', name: 'query', namespace: 'rpc', args: { pad: 'x'.repeat(100 * 1024) } }));
  const closed = await client.closed;
  assert.equal(closed.code, 1009);

  // Other connections are untouched, and new ones are accepted and served.
  const q = await replyOrClose(bystander, bystander.request('rpc', 'query', {}));
  assert.equal((q as Envelope).name, 'response');
  const fresh = await clientFor(t, agent);
  const id = await fresh.request('rpc', 'identify', {});
  assert.deepEqual(id.args, simIdentity(agent));
  await fresh.login('admin');

  // A frame just under the limit is still handled.
  const near = await fresh.request('rpc', 'query', { pad: 'x'.repeat(60 * 1024) });
  assert.equal(near.name, 'response');
});

test('a REST body over the limit is 413 with an error envelope; a small one still works', async (t) => {
  const agent = await agentFor(t, { maxFrameBytes: 64 * 1024 });

  const big = await rest(agent, '/admin/settings', { action: 'list_ssl_certs', pad: 'x'.repeat(100 * 1024) }, { basic: ADMIN });
  assert.equal(big.status, 413);
  const args = big.body.args as ErrorArgs;
  assert.equal(args.code, 413);
  assert.equal(typeof args.message, 'string');

  const small = await rest(agent, '/admin/settings', { action: 'list_ssl_certs' }, { basic: ADMIN });
  assert.equal(small.status, 200);
  assert.deepEqual(small.body, { args: {} });
});

test('REST refuses other methods with 405 and an Allow header, and unknown paths with 404', async (t) => {
  const agent = await agentFor(t);

  for (const [method, path] of [
    ['GET', '/admin/settings'],
    ['DELETE', '/admin/settings'],
    ['GET', '/rpc/identify'],
    ['PATCH', '/rpc/query'],
  ] as const) {
    const res = await fetch(`${agent.httpUrl}${path}`, { method });
    assert.equal(res.status, 405, `${method} ${path}`);
    assert.match(res.headers.get('allow') ?? '', /\bPUT\b/);
    const body = (await res.json()) as { args: ErrorArgs };
    assert.equal(body.args.code, 405);
  }

  for (const path of ['/nowhere', '/admin', '/admin/settings/extra', '/events/subscribe']) {
    const res = await rest(agent, path, {}, { basic: ADMIN });
    assert.equal(res.status, 404, path);
    assert.equal((res.body.args as ErrorArgs).code, 404);
  }

  // The documented form works: identify without credentials, query with them.
  const identify = await rest(agent, '/rpc/identify', {});
  assert.deepEqual(identify, { status: 200, body: { args: simIdentity(agent) } });
  const query = await rest(agent, '/rpc/query', {}, { basic: ADMIN });
  assertFullQuery(query.body.args);
});

test('20 requests sent without waiting all come back, each matched to its own id', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');
  const seen: Envelope[] = [];
  client.ws.on('message', (data) => seen.push(JSON.parse(data.toString()) as Envelope));

  const sent: Array<{ id: string; kind: string; reply: Promise<Envelope> }> = [];
  for (let i = 0; i < 20; i++) {
    const id = `burst-${i}-${(i * 7919).toString(36)}`;
    const kind = ['identify', 'query', 'list', 'bad-action'][i % 4]!;
    const reply =
      kind === 'identify'
        ? client.request('rpc', 'identify', {}, id)
        : kind === 'query'
          ? client.request('rpc', 'query', {}, id)
          : kind === 'list'
            ? client.request('admin', 'settings', { action: 'list_ssl_certs' }, id)
            : client.request('admin', 'settings', { action: `frob_${i}` }, id);
    sent.push({ id, kind, reply });
  }
  const replies = await Promise.all(sent.map((s) => s.reply));

  for (const [i, { id, kind }] of sent.entries()) {
    const reply = replies[i]!;
    assert.equal(reply.id, id);
    if (kind === 'identify') assert.deepEqual(reply.args, simIdentity(agent));
    if (kind === 'query') assertFullQuery(reply.args);
    if (kind === 'list') assert.deepEqual(reply, { id, name: 'response', namespace: 'admin', args: {} });
    if (kind === 'bad-action') {
      assert.equal(reply.name, 'error');
      // The error is about this request's own action name, not a neighbour's.
      assert.match((reply.args as ErrorArgs).message, new RegExp(`"frob_${i}"`));
    }
  }
  // Exactly one reply per request, no strays.
  assert.equal(seen.length, 20);
  assert.deepEqual(seen.map((e) => e.id).sort(), sent.map((s) => s.id).sort());
});

test('a request pipelined right after `auth` waits for the sign-in and succeeds', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);

  // Hold the sign-in open until both frames are on the wire, so the order cannot happen by luck.
  const held = gate();
  const accounts = agent.services.platform.accounts;
  const groupsOf = accounts.groupsOf.bind(accounts);
  let authStarted!: () => void;
  const started = new Promise<void>((resolve) => (authStarted = resolve));
  accounts.groupsOf = async (user) => {
    authStarted();
    await held.wait;
    return groupsOf(user);
  };

  const auth = client.request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD });
  const query = client.request('rpc', 'query', {});
  const list = client.call('settings', 'list_ssl_certs');
  await started;
  held.open();

  const [authReply, queryReply, listReply] = await Promise.all([auth, query, list]);
  assert.equal(authReply.name, 'response');
  assertFullQuery(queryReply.args);
  assert.deepEqual(listReply.args, {});
});

test('with maxInFlightPerConnection 1, a second request while one is in flight is refused with 429', async (t) => {
  const agent = await agentFor(t, { maxInFlightPerConnection: 1 });
  const client = await clientFor(t, agent, 'admin');

  // identify asks the platform for the host name; hold that answer so the request stays in flight.
  const held = gate();
  const platform = agent.services.platform;
  const hostname = platform.hostname.bind(platform);
  platform.hostname = async () => {
    await held.wait;
    return hostname();
  };

  const first = client.request('rpc', 'identify', {}, 'slow-1');
  const second = await client.request('rpc', 'query', {}, 'second-2');
  assert.equal(second.id, 'second-2');
  assert.equal(second.name, 'error');
  assert.equal((second.args as ErrorArgs).code, 429);
  assert.equal(second.namespace, 'rpc');
  // The 429 echoes the request's namespace like every error but the 401 (it used to name rpc always).
  const classRequest = await client.request('admin', 'services', { action: 'list_services' }, 'class-3');
  assert.deepEqual([classRequest.name, classRequest.namespace, (classRequest.args as ErrorArgs).code], ['error', 'admin', 429]);
  const original = await client.request('sysadm', 'services', { action: 'list_services' }, 'class-4');
  assert.deepEqual([original.name, original.namespace, (original.args as ErrorArgs).code], ['error', 'sysadm', 429]);

  held.open();
  assert.deepEqual((await first).args, simIdentity(agent));
  // Once the first is answered the connection takes requests again.
  const third = await client.request('rpc', 'query', {});
  assert.equal(third.name, 'response');
});

test('a silent connection is closed with 4000 after idleCloseSeconds; its token still resumes elsewhere', async (t) => {
  const agent = await agentFor(t, { idleCloseSeconds: 1 });
  const client = await clientFor(t, agent);
  const token = await client.login('admin');

  const closed = await client.closed;
  assert.equal(closed.code, 4000);

  const again = await clientFor(t, agent);
  const resumed = await again.request('rpc', 'auth_token', { token });
  assert.equal(resumed.name, 'response');
  assert.equal((await again.request('rpc', 'query', {})).name, 'response');
});

test('an unauthenticated connection is closed with 4001; a signed-in one stays open past that', async (t) => {
  const agent = await agentFor(t, { unauthenticatedCloseSeconds: 1, idleCloseSeconds: 600 });
  // Signed in first: its unauthenticated check runs before the other connection's.
  const signedIn = await clientFor(t, agent, 'admin');
  const anonymous = await clientFor(t, agent);
  assert.deepEqual((await anonymous.request('rpc', 'identify', {})).args, simIdentity(agent));

  const closed = await anonymous.closed;
  assert.equal(closed.code, 4001);

  const reply = await replyOrClose(signedIn, signedIn.request('rpc', 'query', {}));
  assert.equal((reply as Envelope).name, 'response', JSON.stringify(reply));
  assert.equal(signedIn.ws.readyState, signedIn.ws.OPEN);
});
