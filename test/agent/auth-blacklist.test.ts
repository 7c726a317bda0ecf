/**
 * The failed-sign-in blacklist over real sockets. Loopback is exempt by default, so most tests start
 * the agent with `blacklist.exemptLoopback: false` to treat 127.0.0.1 like any remote address.
 * Every time rule runs on the ManualClock.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { assertFullQuery, rest, SIM_PASSWORD, startTestAgent, TestClient, type Envelope, type TestAgent, clientFor, agentFor } from '../helpers/agent.ts';

const STRICT = { config: { blacklist: { exemptLoopback: false } } };
const REFUSED = /upgrade refused: HTTP 429/;

function unauthorized(id: string) {
  return { id, name: 'error', namespace: 'rpc', args: { code: 401, message: 'Unauthorized' } };
}

/** The reply, or null when the connection closed without sending one. */
function replyOrClose(client: TestClient, namespace: string, name: string, args: unknown, id: string): Promise<Envelope | null> {
  return Promise.race([client.request(namespace, name, args, id), client.closed.then(() => null)]);
}

/** `count` wrong passwords for admin on `client`, each answered with the exact 401. */
async function failPasswords(client: TestClient, count: number, prefix = 'bad'): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const id = `${prefix}-${i}`;
    const reply = await replyOrClose(client, 'rpc', 'auth', { username: 'admin', password: `wrong-${i}` }, id);
    assert.deepEqual(reply, unauthorized(id), `failure ${i} of ${count}`);
  }
}

async function assertBlocked(agent: TestAgent): Promise<void> {
  await assert.rejects(TestClient.connect(agent.url), REFUSED);
  const res = await rest(agent, '/rpc/auth', { username: 'admin', password: SIM_PASSWORD });
  assert.equal(res.status, 429);
  assert.equal((res.body.args as { code: number }).code, 429);
}

async function assertAllowed(t: TestContext, agent: TestAgent): Promise<void> {
  const client = await clientFor(t, agent);
  const token = await client.login('admin');
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  const res = await rest(agent, '/rpc/query', {}, { bearer: token });
  assert.equal(res.status, 200);
}

test('the 5th wrong password is answered 401 and closes the connection; the address is then refused', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  await failPasswords(client, 4);
  const fifth = await replyOrClose(client, 'rpc', 'auth', { username: 'admin', password: 'wrong-5' }, 'bad-5');
  assert.deepEqual(fifth, unauthorized('bad-5'), 'the 5th failure must still get its 401 before the close');
  const closed = await client.closed;
  assert.equal(closed.code, 1008);

  await assertBlocked(agent);
  const res = await rest(agent, '/rpc/identify', {});
  assert.equal(res.status, 429);
});

test('failures on separate connections add up (reconnecting does not reset the count)', async (t) => {
  const agent = await agentFor(t, STRICT);
  for (let i = 1; i <= 4; i++) {
    const client = await clientFor(t, agent);
    await failPasswords(client, 1, `conn-${i}`);
    client.close();
  }
  const last = await clientFor(t, agent);
  await replyOrClose(last, 'rpc', 'auth', { username: 'root', password: 'guess' }, 'conn-5');
  assert.equal((await last.closed).code, 1008);
  await assertBlocked(agent);
});

test('guessing tokens counts as failed sign-ins', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  await failPasswords(client, 1);
  for (let i = 1; i <= 4; i++) {
    const id = `tok-${i}`;
    const reply = await replyOrClose(client, 'rpc', 'auth_token', { token: String(i).repeat(40) }, id);
    if (i < 4) assert.deepEqual(reply, unauthorized(id));
  }
  assert.equal((await client.closed).code, 1008);
  await assertBlocked(agent);
});

test('forged key proofs (auth_ssl stage 2) count as failed sign-ins', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  for (let i = 1; i <= 5; i++) {
    const stage1 = await replyOrClose(client, 'rpc', 'auth_ssl', '', `st1-${i}`);
    if (stage1 === null) break;
    const forged = { signature: Buffer.from(`forged signature ${i}`).toString('base64') };
    const reply = await replyOrClose(client, 'rpc', 'auth_ssl', forged, `st2-${i}`);
    if (reply !== null) assert.deepEqual(reply, unauthorized(`st2-${i}`));
  }
  // Five forged proofs within the window: the address is blocked like after five wrong passwords.
  await assertBlocked(agent);
});

test('wrong HTTP Basic passwords over REST count and block the address for WebSocket as well', async (t) => {
  const agent = await agentFor(t, STRICT);
  for (let i = 1; i <= 5; i++) {
    const res = await rest(agent, '/rpc/query', {}, { basic: ['admin', `wrong-${i}`] });
    assert.equal(res.status, 401, `attempt ${i}`);
    assert.deepEqual(res.body, { args: { code: 401, message: 'Unauthorized' } });
  }
  const right = await rest(agent, '/rpc/query', {}, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(right.status, 429);
  await assertBlocked(agent);
});

test('the block lifts once blockSeconds (3600 s) have passed', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  await failPasswords(client, 4);
  await replyOrClose(client, 'rpc', 'auth', { username: 'admin', password: 'wrong-5' }, 'bad-5');
  await client.closed;

  agent.clock.advance(3500);
  await assertBlocked(agent);
  agent.clock.advance(101);
  await assertAllowed(t, agent);
});

test('failures older than the 10-minute window do not count', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  await failPasswords(client, 4, 'early');
  agent.clock.advance(601);
  await failPasswords(client, 4, 'late');
  // Eight failures in all, but never five within 600 s: still allowed, connection still open.
  assert.equal(client.ws.readyState, client.ws.OPEN);
  const rest200 = await rest(agent, '/rpc/identify', {});
  assert.equal(rest200.status, 200);
  await assertAllowed(t, agent);
  await client.login('admin');
});

test('while blocked, even the right password is refused (on a connection opened before the block, and over REST)', async (t) => {
  const agent = await agentFor(t, STRICT);
  const earlier = await clientFor(t, agent);
  const attacker = await clientFor(t, agent);
  await failPasswords(attacker, 4);
  await replyOrClose(attacker, 'rpc', 'auth', { username: 'admin', password: 'wrong-5' }, 'bad-5');
  await attacker.closed;

  const reply = await earlier.request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD }, 'right');
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  assert.equal((reply.args as { code: number }).code, 429);
  assert.deepEqual(await earlier.request('rpc', 'query', {}, 'q'), unauthorized('q'));

  const basic = await rest(agent, '/rpc/query', {}, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(basic.status, 429);
  const body = await rest(agent, '/rpc/auth', { username: 'admin', password: SIM_PASSWORD });
  assert.equal(body.status, 429);
});

test('an attacker cannot reset the count by signing in with their own account in between', async (t) => {
  const agent = await agentFor(t, STRICT);
  const client = await clientFor(t, agent);
  // Guessing admin's password while keeping the count low with the operator's valid login.
  let reply: Envelope | null = null;
  for (let i = 1; i <= 5 && client.ws.readyState === client.ws.OPEN; i++) {
    reply = await replyOrClose(client, 'rpc', 'auth', { username: 'admin', password: `guess-${i}` }, `guess-${i}`);
    if (reply === null) break;
    assert.deepEqual(reply, unauthorized(`guess-${i}`));
    if (i < 5) await client.login('operator');
  }
  // Five failures within the window: the address is blocked whatever succeeded in between.
  await assertBlocked(agent);
});

test('with the default config, loopback is never blocked: 10 wrong passwords, then the right one works', async (t) => {
  const agent = await agentFor(t, {});
  const client = await clientFor(t, agent);
  await failPasswords(client, 10);
  assert.equal(client.ws.readyState, client.ws.OPEN);
  await client.login('admin');
  assertFullQuery((await client.request('rpc', 'query', {})).args);
  for (let i = 1; i <= 6; i++) {
    const res = await rest(agent, '/rpc/query', {}, { basic: ['admin', 'wrong'] });
    assert.equal(res.status, 401);
  }
  await assertAllowed(t, agent);
});

test('a block survives an agent restart', async (t) => {
  let agent = await startTestAgent(STRICT);
  t.after(() => agent.dispose());
  const client = await TestClient.connect(agent.url);
  await failPasswords(client, 4);
  await replyOrClose(client, 'rpc', 'auth', { username: 'admin', password: 'wrong-5' }, 'bad-5');
  await client.closed;
  await assertBlocked(agent);

  agent = await agent.restart();
  await assertBlocked(agent);
  agent.clock.advance(3601);
  await assertAllowed(t, agent);
});
