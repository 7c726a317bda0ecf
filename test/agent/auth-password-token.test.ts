/**
 * Password sign-in and session tokens over real WebSockets: the reply a client sees, the exact 401
 * envelope, the sliding validity (ManualClock), resuming on another connection and signing out.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { SimPlatform } from '@hostadm/agent/platforms/sim/index.ts';
import { hashPassword, type SimAccounts } from '@hostadm/agent/platforms/sim/accounts.ts';
import { assertFullQuery, SIM_PASSWORD, startTestAgent, type TestClient, type TestAgent, clientFor } from '../helpers/agent.ts';

/** The spec's 401 envelope, exactly. */
function unauthorized(id: string) {
  return { id, name: 'error', namespace: 'rpc', args: { code: 401, message: 'Unauthorized' } };
}

async function agentFor(t: TestContext, overrides: Parameters<typeof startTestAgent>[0] = {}): Promise<TestAgent> {
  const agent = await startTestAgent(overrides);
  t.after(() => agent.dispose());
  return agent;
}

/** Asserts the connection holds a working session (query answers with the admin's subsystems). */
async function assertSignedIn(client: TestClient, id: string): Promise<void> {
  const reply = await client.request('rpc', 'query', {}, id);
  assert.equal(reply.id, id);
  assert.equal(reply.name, 'response');
  assertFullQuery(reply.args);
}

async function assertRefused(client: TestClient, id: string): Promise<void> {
  assert.deepEqual(await client.request('rpc', 'query', {}, id), unauthorized(id));
}

function simAccounts(agent: TestAgent) {
  return (agent.services.platform as SimPlatform).store.slice<SimAccounts>('accounts', () => {
    throw new Error('the sim host has no accounts slice');
  });
}

/** Adds an account with the harness password whose groups give no access (not wheel, not operator). */
function addUngroupedAccount(agent: TestAgent, name: string): void {
  simAccounts(agent).update((s) => {
    s.accounts[name] = {
      name,
      uid: 2001,
      gid: 65533,
      class: '',
      change: '0',
      expire: '0',
      comment: 'No access',
      home_dir: `/home/${name}`,
      shell: '/bin/sh',
      password: hashPassword(SIM_PASSWORD),
    };
  });
}

test('password sign-in answers [token, 300]: 40 letters and digits and a number of seconds', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const reply = await client.request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD }, 'login-1');
  assert.equal(reply.id, 'login-1');
  assert.equal(reply.name, 'response');
  assert.equal(reply.namespace, 'rpc');
  assert.ok(Array.isArray(reply.args));
  assert.equal(reply.args.length, 2);
  const [token, seconds] = reply.args as [unknown, unknown];
  assert.equal(typeof token, 'string');
  assert.match(token as string, /^[A-Za-z0-9]{40}$/);
  assert.equal(typeof seconds, 'number');
  assert.equal(seconds, 300);
  await assertSignedIn(client, 'q');

  // Every sign-in mints a fresh token.
  const other = await clientFor(t, agent);
  const second = await other.login('admin');
  assert.notEqual(second, token);
});

test('wrong password, unknown user and a user in no allowed group get the identical 401 envelope', async (t) => {
  const agent = await agentFor(t);
  addUngroupedAccount(agent, 'guest');
  const client = await clientFor(t, agent);

  const wrong = await client.request('rpc', 'auth', { username: 'admin', password: 'not-the-password' }, 'a1');
  assert.deepEqual(wrong, unauthorized('a1'));
  const unknown = await client.request('rpc', 'auth', { username: 'nosuchuser', password: SIM_PASSWORD }, 'a2');
  assert.deepEqual(unknown, unauthorized('a2'));
  // guest's password is right, but no group grants access: same answer, nothing about why.
  const ungrouped = await client.request('rpc', 'auth', { username: 'guest', password: SIM_PASSWORD }, 'a3');
  assert.deepEqual(ungrouped, unauthorized('a3'));
  // A locked account (password "*") is refused like any other.
  const locked = await client.request('rpc', 'auth', { username: 'toor', password: '*' }, 'a4');
  assert.deepEqual(locked, unauthorized('a4'));

  // None of them left the connection signed in.
  await assertRefused(client, 'q');

  // Control: the same guest with the same password gets in once a group grants access.
  simAccounts(agent).update((s) => s.groups.operator?.members.push('guest'));
  const granted = await client.request('rpc', 'auth', { username: 'guest', password: SIM_PASSWORD }, 'a5');
  assert.equal(granted.name, 'response');
});

test('an empty password is refused, even from loopback and for a non-root user', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  for (const username of ['admin', 'operator', 'root']) {
    const id = `empty-${username}`;
    assert.deepEqual(await client.request('rpc', 'auth', { username, password: '' }, id), unauthorized(id));
  }
  await assertRefused(client, 'q');
});

test('every request before sign-in gets the 401 envelope, whatever it names', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const probes: Array<[string, string, unknown]> = [
    ['rpc', 'query', {}],
    ['admin', 'settings', { action: 'list_ssl_certs' }],
    ['admin', 'settings', { action: 'register_ssl_cert', pub_key: 'AAAA' }],
    ['rpc', 'settings', { action: 'list_ssl_checksums' }],
    ['rpc', 'dispatcher', { action: 'list' }],
    ['events', 'subscribe', ['dispatcher']],
    // An unknown class is not revealed as unknown (404) to an unauthenticated caller.
    ['admin', 'nosuchclass', { action: 'whatever' }],
  ];
  let n = 0;
  for (const [namespace, name, args] of probes) {
    const id = `pre-${++n}`;
    assert.deepEqual(await client.request(namespace, name, args, id), unauthorized(id), `${namespace}/${name}`);
  }
  // The connection is still usable: signing in now works.
  await client.login('admin');
  await assertSignedIn(client, 'after');
});

test('the configured token validity (--token-ttl) is what the reply reports and what is enforced', async (t) => {
  const agent = await agentFor(t, { config: { tokenTtlSeconds: 120 } });
  const client = await clientFor(t, agent);
  const reply = await client.request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD });
  const [token, seconds] = reply.args as [string, number];
  assert.equal(seconds, 120);

  agent.clock.advance(100);
  const resumed = await clientFor(t, agent);
  const resume = await resumed.request('rpc', 'auth_token', { token });
  assert.deepEqual(resume.args, [token, 120]);

  agent.clock.advance(121);
  await assertRefused(resumed, 'late');
});

test('a failed sign-in attempt on a signed-in connection leaves its session working', async (t) => {
  const agent = await agentFor(t);
  addUngroupedAccount(agent, 'guest');
  const client = await clientFor(t, agent);
  const token = await client.login('admin');

  const attempts: Array<[string, unknown]> = [
    ['auth', { username: 'admin', password: 'wrong' }],
    ['auth', { username: 'nosuchuser', password: 'wrong' }],
    ['auth', { username: 'guest', password: SIM_PASSWORD }],
    ['auth_token', { token: 'A'.repeat(40) }],
    ['auth_ssl', { signature: Buffer.from('not a signature').toString('base64') }],
  ];
  let n = 0;
  for (const [name, args] of attempts) {
    const id = `bad-${++n}`;
    assert.deepEqual(await client.request('rpc', name, args, id), unauthorized(id), name);
    await assertSignedIn(client, `still-${n}`);
  }
  // The token is still the one this connection holds: another connection can resume it.
  const other = await clientFor(t, agent);
  const resume = await other.request('rpc', 'auth_token', { token });
  assert.deepEqual(resume.args, [token, 300]);
});

test('the token slides: 200 s, a request, 200 s more, and it still works', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  await client.login('admin');
  agent.clock.advance(200);
  await assertSignedIn(client, 'at-200');
  agent.clock.advance(200);
  await assertSignedIn(client, 'at-400');
  agent.clock.advance(280);
  await assertSignedIn(client, 'at-680');
});

test('the token expires after the validity with no traffic', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const token = await client.login('admin');
  agent.clock.advance(301);
  await assertRefused(client, 'expired');
  // Expired means gone: it cannot be resumed either, and a later request does not revive it.
  const other = await clientFor(t, agent);
  assert.deepEqual(await other.request('rpc', 'auth_token', { token }, 'resume'), unauthorized('resume'));
  await assertRefused(client, 'still-expired');
});

test('failed requests do not keep an idle token alive', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  await client.login('admin');
  agent.clock.advance(200);
  const bad = await client.request('admin', 'settings', { action: 'no_such_action' });
  assert.equal(bad.name, 'error');
  agent.clock.advance(200);
  // The token was touched only by the sign-in, 400 s ago: it has expired.
  await assertRefused(client, 'after');
});

test('auth_token on a second connection resumes the session and takes it from the first', async (t) => {
  const agent = await agentFor(t);
  const first = await clientFor(t, agent);
  const token = await first.login('admin');

  // An attacker's connection without the token gets nothing from the session living next door.
  const stranger = await clientFor(t, agent);
  await assertRefused(stranger, 'stranger');
  await assertSignedIn(first, 'first-before');

  const second = await clientFor(t, agent);
  const resume = await second.request('rpc', 'auth_token', { token }, 'resume');
  assert.deepEqual(resume, { id: 'resume', name: 'response', namespace: 'rpc', args: [token, 300] });
  await assertSignedIn(second, 'second');
  await assertRefused(first, 'first-after');
  await assertSignedIn(second, 'second-again');
});

test('a connection that lost its token to a resume cannot sign the new holder out', async (t) => {
  const agent = await agentFor(t);
  const first = await clientFor(t, agent);
  const token = await first.login('admin');
  const second = await clientFor(t, agent);
  assert.deepEqual((await second.request('rpc', 'auth_token', { token })).args, [token, 300]);

  // The first connection no longer holds the token; its sign-out concerns only itself.
  const clear = await first.request('rpc', 'auth_clear', {}, 'clear');
  assert.deepEqual(clear, { id: 'clear', name: 'response', namespace: 'rpc', args: { result: 'success' } });
  await assertSignedIn(second, 'second-after-clear');
});

test('auth_token with a bogus or expired token is 401', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  for (const [i, token] of ['A'.repeat(40), 'short', 'x'].entries()) {
    const id = `bogus-${i}`;
    assert.deepEqual(await client.request('rpc', 'auth_token', { token }, id), unauthorized(id));
  }
  const holder = await clientFor(t, agent);
  const token = await holder.login('admin');
  agent.clock.advance(301);
  assert.deepEqual(await client.request('rpc', 'auth_token', { token }, 'expired'), unauthorized('expired'));
  await assertRefused(client, 'q');
});

test('auth_clear signs out: success reply, then 401, and the cleared token cannot be resumed', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const token = await client.login('admin');
  const bystander = await clientFor(t, agent);
  await bystander.login('admin');

  const clear = await client.request('rpc', 'auth_clear', {}, 'bye');
  assert.deepEqual(clear, { id: 'bye', name: 'response', namespace: 'rpc', args: { result: 'success' } });
  await assertRefused(client, 'after-clear');

  const other = await clientFor(t, agent);
  assert.deepEqual(await other.request('rpc', 'auth_token', { token }, 'resume'), unauthorized('resume'));
  // The signed-out connection cannot bring it back either.
  assert.deepEqual(await client.request('rpc', 'auth_token', { token }, 'resume-self'), unauthorized('resume-self'));
  // Another session of the same user is not affected.
  await assertSignedIn(bystander, 'bystander');
});

test('with password sign-in turned off, even the right password is 401', async (t) => {
  const agent = await agentFor(t, { config: { allowPasswordAuth: false } });
  const client = await clientFor(t, agent);
  assert.deepEqual(await client.request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD }, 'pw'), unauthorized('pw'));
  await assertRefused(client, 'q');
});
