/**
 * The audit log as an administrator reads it (`services.audit.recent()`): who changed what, over which
 * transport, and how it ended — changes, refusals and sign-ins; successful reads are counted per hour
 * (`recentSummaries()`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rest, SIM_PASSWORD, startTestAgent, TestClient, type TestAgent, agentFor, clientFor } from '../helpers/agent.ts';
import { classes } from '@hostadm/agent/classes/index.ts';

type Row = ReturnType<TestAgent['services']['audit']['recent']>[number];

/** Rows oldest first, reduced to what a reader of the log looks at. */
function rows(agent: TestAgent): Array<Pick<Row, 'user' | 'transport' | 'namespace' | 'name' | 'action' | 'code'>> {
  return agent.services.audit
    .recent()
    .reverse()
    .map(({ user, transport, namespace, name, action, code }) => ({ user, transport, namespace, name, action, code }));
}

function reads(agent: TestAgent) {
  return agent.services.audit
    .recentSummaries()
    .map(({ user, transport, namespace, name, action, calls }) => ({ user, transport, namespace, name, action, calls }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

test('changes, refusals and sign-ins are rows with user, namespace, name, action and code; reads are counted', async (t) => {
  // zfs left out, for a refusal (404) to be recorded.
  const agent = await agentFor(t, { classes: { ...classes, 'admin/zfs': null } });
  const admin = await clientFor(t, agent, 'admin');
  const operator = await clientFor(t, agent, 'operator');

  assert.equal((await admin.call('settings', 'list_ssl_certs')).name, 'response');
  assert.equal((await admin.request('rpc', 'settings', { action: 'list_ssl_checksums' })).name, 'response');
  assert.equal((await operator.request('rpc', 'query', {})).name, 'response');
  assert.equal((await admin.request('admin', 'zfs', { action: 'list_pools' })).name, 'error');
  assert.equal((await operator.call('settings', 'frobnicate')).name, 'error');
  const restList = await rest(agent, '/admin/settings', { action: 'list_ssl_certificates' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(restList.status, 200);
  assert.equal((await admin.call('users', 'groupadd', { name: 'auditors' })).name, 'response');

  const log = rows(agent);
  for (const row of log) {
    assert.ok(['admin', 'operator'].includes(row.user), JSON.stringify(row));
    assert.equal(typeof row.code, 'number');
  }
  assert.deepEqual(
    log.filter((r) => r.code === 200 && r.name !== 'auth'),
    [{ user: 'admin', transport: 'websocket', namespace: 'admin', name: 'users', action: 'groupadd', code: 200 }],
  );
  // Every sign-in is a row: two over WebSocket, one per REST call with a password.
  assert.deepEqual(
    log.filter((r) => r.name === 'auth').map((r) => [r.user, r.transport, r.code]),
    [
      ['admin', 'websocket', 200],
      ['operator', 'websocket', 200],
      ['operator', 'rest', 200],
    ],
  );
  assert.deepEqual(reads(agent), [
    { user: 'admin', transport: 'websocket', namespace: 'admin', name: 'settings', action: 'list_ssl_certs', calls: 1 },
    { user: 'admin', transport: 'websocket', namespace: 'rpc', name: 'settings', action: 'list_ssl_checksums', calls: 1 },
    // The alias is counted under the action it resolves to.
    { user: 'operator', transport: 'rest', namespace: 'admin', name: 'settings', action: 'list_ssl_certs', calls: 1 },
    { user: 'operator', transport: 'websocket', namespace: 'rpc', name: 'query', action: '', calls: 1 },
  ]);
  assert.ok(
    log.some((r) => r.user === 'admin' && r.namespace === 'admin' && r.name === 'zfs' && r.code === 404),
    JSON.stringify(log),
  );
  assert.ok(
    log.some((r) => r.user === 'operator' && r.name === 'settings' && r.code === 400),
    JSON.stringify(log),
  );
});

test('a refused request is recorded with the action that was attempted and its error code', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');

  const refused = await operator.call('settings', 'revoke_ssl_cert', { pub_key: 'AAAA', user: 'admin' });
  assert.equal((refused.args as { code: number }).code, 403);
  const invalid = await operator.call('settings', 'register_ssl_cert', { pub_key: '$(reboot)' });
  assert.equal((invalid.args as { code: number }).code, 400);

  const log = rows(agent);
  // An administrator reading the log must see *what* was refused, not just that something was.
  assert.deepEqual(log.slice(-2), [
    { user: 'operator', transport: 'websocket', namespace: 'admin', name: 'settings', action: 'revoke_ssl_cert', code: 403 },
    { user: 'operator', transport: 'websocket', namespace: 'admin', name: 'settings', action: 'register_ssl_cert', code: 400 },
  ]);
});

test('failed sign-ins are recorded with code 401 (WebSocket and REST); anonymous requests are not', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);

  const wrong = await client.request('rpc', 'auth', { username: 'admin', password: 'not-the-password' });
  assert.deepEqual(wrong.args, { code: 401, message: 'Unauthorized' });
  const unknownUser = await client.request('rpc', 'auth', { username: 'mallory', password: 'x' });
  assert.equal(unknownUser.name, 'error');
  const badToken = await client.request('rpc', 'auth_token', { token: 'A'.repeat(40) });
  assert.equal(badToken.name, 'error');
  const restWrong = await rest(agent, '/rpc/query', {}, { basic: ['operator', 'nope'] });
  assert.equal(restWrong.status, 401);
  // Anonymous calls that are simply refused are not sign-in attempts.
  assert.equal((await client.request('rpc', 'query', {})).name, 'error');
  assert.equal((await client.request('rpc', 'identify', {})).name, 'response');

  const log = rows(agent);
  assert.deepEqual(log, [
    { user: '', transport: 'websocket', namespace: 'rpc', name: 'auth', action: '', code: 401 },
    { user: '', transport: 'websocket', namespace: 'rpc', name: 'auth', action: '', code: 401 },
    { user: '', transport: 'websocket', namespace: 'rpc', name: 'auth_token', action: '', code: 401 },
    { user: '', transport: 'rest', namespace: 'rpc', name: 'auth', action: '', code: 401 },
  ]);
  for (const row of agent.services.audit.recent()) {
    assert.equal(row.address, '127.0.0.1');
    assert.ok(row.at instanceof Date);
  }

  // A later successful sign-in and request by the same connection are recorded under the user.
  await client.login('admin');
  await client.call('settings', 'list_ssl_certs');
  assert.deepEqual(rows(agent).at(-1), { user: 'admin', transport: 'websocket', namespace: 'rpc', name: 'auth', action: '', code: 200 });
  assert.deepEqual(reads(agent), [{ user: 'admin', transport: 'websocket', namespace: 'admin', name: 'settings', action: 'list_ssl_certs', calls: 1 }]);
});

test('the audit log survives an agent restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  const client = await TestClient.connect(agent.url);
  await client.login('admin');
  await client.call('settings', 'list_ssl_certs');
  client.close();
  const before = rows(agent);
  assert.ok(before.length > 0);

  agent = await agent.restart();
  assert.deepEqual(rows(agent), before);
});
