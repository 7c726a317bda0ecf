/**
 * `identify` and `query` over real sockets: identify needs no sign-in; query lists exactly the
 * subsystems this host serves to the caller, with the access level the contracts declare.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import type { ErrorArgs } from '@hostadm/shared/protocol/errors.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { rest, SIM_PASSWORD, type TestAgent, agentFor, clientFor, simIdentity } from '../helpers/agent.ts';

/** Every subsystem this agent serves, read/write (what a full-access user must see). */
function fullFor(agent: TestAgent): Record<string, string> {
  return Object.fromEntries(agent.pipeline.servedContracts().map((c) => [`${c.namespace}/${c.name}`, 'read/write']));
}

test('identify answers without sign-in over WebSocket and REST, whatever the args', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);

  const reply = await client.request('rpc', 'identify', {}, 'who-1');
  assert.deepEqual(reply, { id: 'who-1', name: 'response', namespace: 'rpc', args: simIdentity(agent) });
  for (const args of [undefined, null, 'x', [1, 2], { anything: true }]) {
    assert.deepEqual((await client.request('rpc', 'identify', args)).args, simIdentity(agent));
  }

  const res = await rest(agent, '/rpc/identify', {});
  assert.deepEqual(res, { status: 200, body: { args: simIdentity(agent) } });
  const empty = await fetch(`${agent.httpUrl}/rpc/identify`, { method: 'PUT' });
  assert.equal(empty.status, 200);
  assert.deepEqual(await empty.json(), { args: simIdentity(agent) });

  // Signed in, identify says the same; the connection was not signed in by asking.
  assert.deepEqual((await client.request('rpc', 'query', {})).args, { code: 401, message: 'Unauthorized' });
  await client.login('operator');
  assert.deepEqual((await client.request('rpc', 'identify', {})).args, simIdentity(agent));
});

test('query needs sign-in (401) over WebSocket and REST', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const reply = await client.request('rpc', 'query', {});
  assert.deepEqual(reply.args, { code: 401, message: 'Unauthorized' });
  assert.equal(reply.namespace, 'rpc');

  const res = await rest(agent, '/rpc/query', {});
  assert.equal(res.status, 401);
  assert.deepEqual(res.body.args, { code: 401, message: 'Unauthorized' });
});

test('query as a full-access user lists the served subsystems read/write (admin, root; WS, REST Basic and Bearer)', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent);
  const token = await admin.login('admin');
  const FULL = fullFor(agent);
  assert.ok(FULL['admin/settings'] && FULL['rpc/settings'] && FULL['rpc/dispatcher']);
  assert.deepEqual((await admin.request('rpc', 'query', {})).args, FULL);
  // "any data" as args.
  for (const args of [undefined, 'anything', [1, 2], { x: 1 }]) assert.deepEqual((await admin.request('rpc', 'query', args)).args, FULL);

  const root = await clientFor(t, agent, 'root');
  assert.deepEqual((await root.request('rpc', 'query', {})).args, FULL);

  assert.deepEqual(await rest(agent, '/rpc/query', {}, { basic: ['admin', SIM_PASSWORD] }), { status: 200, body: { args: FULL } });
  assert.deepEqual(await rest(agent, '/rpc/query', {}, { bearer: token }), { status: 200, body: { args: FULL } });
});

test('query as the limited operator lists the same classes with the access their contracts declare', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  const reply = await operator.request('rpc', 'query', {});
  assert.equal(reply.name, 'response');

  // Expected from the contracts, not from the agent's own answer.
  const expected: Record<string, string> = {};
  for (const contract of [...Object.values(adminClasses), ...Object.values(rpcClasses)]) {
    const key = `${contract.namespace}/${contract.name}`;
    if (key in fullFor(agent) && contract.limitedAccess) expected[key] = contract.limitedAccess;
  }
  assert.deepEqual(reply.args, expected);
  assert.equal((reply.args as Record<string, string>)['rpc/dispatcher'], 'read');

  const res = await rest(agent, '/rpc/query', {}, { basic: ['operator', SIM_PASSWORD] });
  assert.deepEqual(res.body.args, expected);
});

test('every subsystem query lists answers its calls; classes it omits are 404 on this host', async (t) => {
  const agent = await agentFor(t);
  for (const user of ['admin', 'operator']) {
    const client = await clientFor(t, agent, user);
    const listed = (await client.request('rpc', 'query', {})).args as Record<string, string>;
    for (const key of Object.keys(listed)) {
      const [namespace, name] = key.split('/') as [string, string];
      // A read action that needs no arguments answers for every listed subsystem.
      const table: Record<string, ClassContract> = namespace === 'admin' ? adminClasses : rpcClasses;
      const contract = table[name] as ClassContract;
      // A read action that answers with no arguments, or with a harmless sample (fs needs a dir).
      const samples: Record<string, Record<string, unknown>> = { 'admin/fs': { action: 'dirlist', dir: '/' } };
      const action = Object.entries(contract.actions).find(([, a]) => a.access === 'read' && a.args.safeParse({}).success)?.[0];
      const request = samples[key] ?? { action };
      assert.ok(request.action, `${key} has a read action to try`);
      const reply = await client.request(namespace, name, request);
      assert.equal(reply.name, 'response', `${user} ${key} ${String(request.action)}: ${JSON.stringify(reply).slice(0, 300)}`);
    }
    for (const name of Object.keys(adminClasses)) {
      if (`admin/${name}` in listed) continue;
      const reply = await client.request('admin', name, { action: 'anything' });
      assert.equal((reply.args as ErrorArgs).code, 404, `${user} admin/${name}`);
    }
  }
});
