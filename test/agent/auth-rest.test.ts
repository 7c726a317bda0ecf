/**
 * Authentication over REST (real HTTP): `PUT /rpc/auth` for a token, `Authorization: Bearer` and
 * HTTP Basic per call, the 401 body, and `identify` without authentication.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { assertFullQuery, rest, SIM_PASSWORD, startTestAgent, TestClient, type TestAgent, simIdentity } from '../helpers/agent.ts';

const UNAUTHORIZED_BODY = { args: { code: 401, message: 'Unauthorized' } };

async function agentFor(t: TestContext, overrides: Parameters<typeof startTestAgent>[0] = {}): Promise<TestAgent> {
  const agent = await startTestAgent(overrides);
  t.after(() => agent.dispose());
  return agent;
}

async function restLogin(agent: TestAgent, username = 'admin', password = SIM_PASSWORD): Promise<string> {
  const res = await rest(agent, '/rpc/auth', { username, password });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body.args as [string, number])[0];
}

/** Raw HTTP for what the helper does not send (a scheme it does not know, a different method). */
async function put(agent: TestAgent, path: string, headers: Record<string, string>, body = '{}') {
  const res = await fetch(`${agent.httpUrl}${path}`, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, body: (await res.json()) as unknown };
}

test('PUT /rpc/auth answers 200 {args:[token, 300]}; the token works as Bearer', async (t) => {
  const agent = await agentFor(t);
  const res = await rest(agent, '/rpc/auth', { username: 'admin', password: SIM_PASSWORD });
  assert.equal(res.status, 200);
  assert.deepEqual(Object.keys(res.body), ['args']);
  const [token, seconds] = res.body.args as [string, number];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  assert.deepEqual(res.body.args, [token, 300]);

  for (let i = 0; i < 2; i++) {
    const query = await rest(agent, '/rpc/query', {}, { bearer: token });
    assert.equal(query.status, 200);
    assertFullQuery(query.body.args);
  }
  const list = await rest(agent, '/admin/settings', { action: 'list_ssl_certs' }, { bearer: token });
  assert.equal(list.status, 200);
  assert.deepEqual(list.body, { args: {} });
});

test('PUT /rpc/auth with a wrong password or unknown user is 401 with the exact body', async (t) => {
  const agent = await agentFor(t);
  for (const body of [
    { username: 'admin', password: 'wrong' },
    { username: 'nosuchuser', password: SIM_PASSWORD },
    { username: 'operator', password: '' },
  ]) {
    const res = await rest(agent, '/rpc/auth', body);
    assert.equal(res.status, 401, JSON.stringify(body));
    assert.deepEqual(res.body, UNAUTHORIZED_BODY);
  }
});

test('HTTP Basic authenticates a single call', async (t) => {
  const agent = await agentFor(t);
  const admin = await rest(agent, '/rpc/query', {}, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(admin.status, 200);
  assertFullQuery(admin.body.args);
  const checksums = await rest(agent, '/rpc/settings', { action: 'list_ssl_checksums' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(checksums.status, 200);
  assert.deepEqual(checksums.body, { args: { md5_keys: [] } });
  // Nothing carries over: the next call without credentials is refused.
  const after = await rest(agent, '/rpc/query', {});
  assert.equal(after.status, 401);
});

test('wrong, malformed or missing credentials are 401 with {args:{code:401,message:"Unauthorized"}}', async (t) => {
  const agent = await agentFor(t);
  const cases: Array<[string, Parameters<typeof rest>[3]]> = [
    ['wrong Basic password', { basic: ['admin', 'wrong'] }],
    ['Basic for an unknown user', { basic: ['nosuchuser', SIM_PASSWORD] }],
    ['Basic with an empty password', { basic: ['admin', ''] }],
    ['no header', undefined],
    ['bogus Bearer token', { bearer: 'A'.repeat(40) }],
    ['empty Bearer token', { bearer: '' }],
  ];
  for (const [label, auth] of cases) {
    for (const path of ['/rpc/query', '/admin/settings']) {
      const res = await rest(agent, path, { action: 'list_ssl_certs' }, auth);
      assert.equal(res.status, 401, `${label} on ${path}`);
      assert.deepEqual(res.body, UNAUTHORIZED_BODY, `${label} on ${path}`);
    }
  }
  const raw: Array<[string, string]> = [
    ['Basic without a colon', `Basic ${Buffer.from('adminpassword').toString('base64')}`],
    ['unknown scheme', `Token ${'A'.repeat(40)}`],
    ['garbage', 'nonsense'],
  ];
  for (const [label, authorization] of raw) {
    const res = await put(agent, '/rpc/query', { authorization });
    assert.equal(res.status, 401, label);
    assert.deepEqual(res.body, UNAUTHORIZED_BODY, label);
  }
  // An unknown class is not revealed to an unauthenticated caller.
  const probe = await rest(agent, '/admin/nosuchclass', { action: 'x' });
  assert.equal(probe.status, 401);
  assert.deepEqual(probe.body, UNAUTHORIZED_BODY);
});

test('PUT /rpc/identify needs no authentication', async (t) => {
  const agent = await agentFor(t);
  const res = await rest(agent, '/rpc/identify', {});
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { args: simIdentity(agent) });
  // It does not look at a token either: a stale one does not stop a client finding out what it reached.
  const withStaleToken = await rest(agent, '/rpc/identify', {}, { bearer: 'A'.repeat(40) });
  assert.equal(withStaleToken.status, 200);
  assert.deepEqual(withStaleToken.body, { args: simIdentity(agent) });
});

test('a Bearer token slides with REST calls and expires without them', async (t) => {
  const agent = await agentFor(t);
  const token = await restLogin(agent);
  agent.clock.advance(200);
  assert.equal((await rest(agent, '/rpc/query', {}, { bearer: token })).status, 200);
  agent.clock.advance(200);
  assert.equal((await rest(agent, '/rpc/query', {}, { bearer: token })).status, 200);
  agent.clock.advance(301);
  const expired = await rest(agent, '/rpc/query', {}, { bearer: token });
  assert.equal(expired.status, 401);
  assert.deepEqual(expired.body, UNAUTHORIZED_BODY);
});

test('auth_clear over REST ends the Bearer token', async (t) => {
  const agent = await agentFor(t);
  const token = await restLogin(agent);
  const clear = await rest(agent, '/rpc/auth_clear', {}, { bearer: token });
  assert.equal(clear.status, 200);
  assert.deepEqual(clear.body, { args: { result: 'success' } });
  const after = await rest(agent, '/rpc/query', {}, { bearer: token });
  assert.equal(after.status, 401);
  assert.deepEqual(after.body, UNAUTHORIZED_BODY);
});

test('a REST token resumes on a WebSocket, and a WebSocket sign-out ends it for REST', async (t) => {
  const agent = await agentFor(t);
  const token = await restLogin(agent, 'operator');
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  const resume = await client.request('rpc', 'auth_token', { token });
  assert.deepEqual(resume.args, [token, 300]);
  const query = await client.request('rpc', 'query', {});
  assert.equal(query.name, 'response');
  assert.equal((query.args as Record<string, string>)['admin/settings'], 'read/write');
  assert.deepEqual((await client.request('rpc', 'auth_clear', {})).args, { result: 'success' });
  const res = await rest(agent, '/rpc/query', {}, { bearer: token });
  assert.equal(res.status, 401);
});
