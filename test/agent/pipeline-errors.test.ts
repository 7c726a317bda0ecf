/**
 * Error replies over real sockets: what a client sees for unknown classes, classes the host does
 * not serve, unknown actions, bad arguments, malformed frames and refused access — over WebSocket
 * and over REST — and that a refused request changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorArgs } from '@hostadm/shared/protocol/errors.ts';
import { rest, SIM_PASSWORD, type Envelope, agentFor, clientFor } from '../helpers/agent.ts';
import { classes } from '@hostadm/agent/classes/index.ts';
import { ed25519Key, signatureProof } from '../helpers/keys.ts';

const ADMIN: [string, string] = ['admin', SIM_PASSWORD];
const OPERATOR: [string, string] = ['operator', SIM_PASSWORD];

/** Asserts an error envelope and returns its args. */
function errorOf(env: Envelope, expected: { id?: string; namespace: string; code: number }): ErrorArgs {
  assert.equal(env.name, 'error', `expected an error envelope, got ${JSON.stringify(env)}`);
  if (expected.id !== undefined) assert.equal(env.id, expected.id);
  assert.equal(env.namespace, expected.namespace);
  const args = env.args as ErrorArgs;
  assert.equal(args.code, expected.code, `code of ${JSON.stringify(env)}`);
  assert.equal(typeof args.code, 'number');
  assert.equal(typeof args.message, 'string');
  assert.ok(args.message.length > 0);
  return args;
}

/** Asserts a REST error reply and returns its args. */
function restErrorOf(res: { status: number; body: { args: unknown } }, code: number): ErrorArgs {
  assert.equal(res.status, code, `status of ${JSON.stringify(res.body)}`);
  const args = res.body.args as ErrorArgs;
  assert.equal(args.code, code);
  assert.equal(typeof args.message, 'string');
  return args;
}

function fields(args: ErrorArgs): string[] {
  return (args.errors ?? []).map((e) => e.field);
}

test('an unknown class is 404 over WebSocket (id and namespace echoed) and over REST', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const reply = await client.request('admin', 'nope', { action: 'list' }, 'my-request-7');
  assert.deepEqual(Object.keys(reply).sort(), ['args', 'id', 'name', 'namespace']);
  const args = errorOf(reply, { id: 'my-request-7', namespace: 'admin', code: 404 });
  assert.match(args.message, /nope/);

  const res = await rest(agent, '/admin/nope', { action: 'list' }, { basic: ADMIN });
  const restArgs = restErrorOf(res, 404);
  assert.match(restArgs.message, /nope/);

  // An unknown rpc class is the same 404, with the rpc namespace echoed.
  errorOf(await client.request('rpc', 'nope', { action: 'list' }, 'rpc-1'), { id: 'rpc-1', namespace: 'rpc', code: 404 });
});

test('a class the contract defines but the sim host does not serve is 404 "not available"', async (t) => {
  const agent = await agentFor(t, { classes: { ...classes, 'admin/zfs': null } });
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('zfs', 'list_pools'), { namespace: 'admin', code: 404 });
  assert.match(args.message, /admin\/zfs/);
  assert.match(args.message, /not available/);

  const restArgs = restErrorOf(await rest(agent, '/admin/zfs', { action: 'list_pools' }, { basic: ADMIN }), 404);
  assert.match(restArgs.message, /not available/);
});

test('an unknown action is 400 naming `action` and listing the valid ones', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('settings', 'frobnicate'), { namespace: 'admin', code: 400 });
  assert.ok(fields(args).includes('action'), JSON.stringify(args));
  assert.match(args.message, /frobnicate/);
  for (const valid of ['list_ssl_certs', 'register_ssl_cert', 'revoke_ssl_cert']) assert.match(args.message, new RegExp(valid));

  const restArgs = restErrorOf(await rest(agent, '/admin/settings', { action: 'frobnicate' }, { basic: ADMIN }), 400);
  assert.ok(fields(restArgs).includes('action'));
  assert.match(restArgs.message, /list_ssl_certs/);

  // rpc/settings has one more action, and the error echoes namespace rpc.
  const rpcArgs = errorOf(await client.request('rpc', 'settings', { action: 'frobnicate' }), { namespace: 'rpc', code: 400 });
  assert.match(rpcArgs.message, /list_ssl_checksums/);
});

test('a missing required argument is 400 with a field error for it (WebSocket and REST)', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('settings', 'register_ssl_cert', { nickname: 'laptop' }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(args), ['pub_key']);
  assert.match(args.message, /pub_key/);

  const restArgs = restErrorOf(await rest(agent, '/admin/settings', { action: 'register_ssl_cert' }, { basic: ADMIN }), 400);
  assert.deepEqual(fields(restArgs), ['pub_key']);
});

test('an argument of the wrong type is 400 naming the field', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('settings', 'register_ssl_cert', { pub_key: 5 }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(args), ['pub_key']);

  const restArgs = restErrorOf(await rest(agent, '/admin/settings', { action: 'revoke_ssl_cert', pub_key: ['AAAA'] }, { basic: ADMIN }), 400);
  assert.deepEqual(fields(restArgs), ['pub_key']);
});

test('an unknown extra argument is 400 naming it', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('settings', 'list_ssl_certs', { verbose: true }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(args), ['verbose']);
  assert.match(args.message, /verbose/);

  const restArgs = restErrorOf(await rest(agent, '/admin/settings', { action: 'list_ssl_certs', colour: 'red' }, { basic: ADMIN }), 400);
  assert.deepEqual(fields(restArgs), ['colour']);
});

test('shell metacharacters in arguments are refused with 400', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const a1 = errorOf(await client.call('settings', 'register_ssl_cert', { pub_key: '$(reboot)' }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(a1), ['pub_key']);
  const a2 = errorOf(await client.call('settings', 'revoke_ssl_cert', { pub_key: 'AAAA', user: 'admin; reboot' }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(a2), ['user']);
  const a3 = errorOf(await client.call('settings', 'revoke_ssl_cert', { pub_key: 'AAAA`id`' }), { namespace: 'admin', code: 400 });
  assert.deepEqual(fields(a3), ['pub_key']);

  const restArgs = restErrorOf(await rest(agent, '/admin/settings', { action: 'register_ssl_cert', pub_key: 'a|b' }, { basic: ADMIN }), 400);
  assert.deepEqual(fields(restArgs), ['pub_key']);
});

test('several bad fields are reported together in one reply', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const args = errorOf(await client.call('settings', 'register_ssl_cert', { pub_key: 5, nickname: 7, email: ['x'], bogus: 1 }), {
    namespace: 'admin',
    code: 400,
  });
  assert.deepEqual(fields(args).sort(), ['bogus', 'email', 'nickname', 'pub_key']);
  for (const e of args.errors ?? []) assert.ok(e.message.length > 0);
  for (const name of ['pub_key', 'nickname', 'email', 'bogus']) assert.match(args.message, new RegExp(name));
});

test('args that are not an object, or lack `action`, are 400 naming `action`', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  for (const bad of ['list_ssl_certs', ['list_ssl_certs'], null, 42, {}, { action: '' }, { action: 7 }, undefined]) {
    const args = errorOf(await client.request('admin', 'settings', bad), { namespace: 'admin', code: 400 });
    assert.deepEqual(fields(args), ['action'], `args ${JSON.stringify(bad)}: ${JSON.stringify(args)}`);
  }
  for (const bad of ['"list_ssl_certs"', '[]', '{}']) {
    const res = await fetch(`${agent.httpUrl}/admin/settings`, {
      method: 'PUT',
      headers: { authorization: `Basic ${Buffer.from(ADMIN.join(':')).toString('base64')}` },
      body: bad,
    });
    assert.equal(res.status, 400, `body ${bad}`);
    const body = (await res.json()) as { args: ErrorArgs };
    assert.deepEqual(fields(body.args), ['action']);
  }
});

test('a malformed JSON frame gets a 400 error envelope with id "" and the connection stays usable', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const reply = await client.sendRaw('{"id":"x1","name":', '');
  const args = errorOf(reply, { id: '', namespace: 'rpc', code: 400 });
  assert.match(args.message, /JSON/);

  // Still signed in and served afterwards.
  const list = await client.call('settings', 'list_ssl_certs');
  assert.equal(list.name, 'response');

  // REST: a body that is not JSON is 400 too.
  const res = await rest(agent, '/admin/settings', '{action:', { basic: ADMIN });
  restErrorOf(res, 400);
});

test('an envelope without `name` is 400 with the request id echoed; a numeric id comes back as a string', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const reply = await client.sendRaw(JSON.stringify({ id: 'abc-123', namespace: 'admin', args: { action: 'list_ssl_certs' } }), 'abc-123');
  const args = errorOf(reply, { id: 'abc-123', code: 400, namespace: reply.namespace });
  assert.ok(fields(args).includes('name'), JSON.stringify(args));

  const noNamespace = await client.sendRaw(JSON.stringify({ id: 'n-2', name: 'settings', args: { action: 'list_ssl_certs' } }), 'n-2');
  assert.ok(fields(errorOf(noNamespace, { id: 'n-2', code: 400, namespace: noNamespace.namespace })).includes('namespace'));

  const numeric = await client.sendRaw(JSON.stringify({ id: 42, name: 'settings', namespace: 'admin', args: { action: 'list_ssl_certs' } }), '42');
  assert.equal(numeric.id, '42');
  assert.equal(numeric.name, 'response');
});

test('a request before signing in is 401 Unauthorized with namespace rpc, over WebSocket and REST', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);

  const reply = await client.call('settings', 'list_ssl_certs');
  assert.deepEqual(reply.args, { code: 401, message: 'Unauthorized' });
  assert.equal(reply.name, 'error');
  assert.equal(reply.namespace, 'rpc');

  const res = await rest(agent, '/admin/settings', { action: 'list_ssl_certs' });
  assert.equal(res.status, 401);
  assert.deepEqual(res.body.args, { code: 401, message: 'Unauthorized' });
  const wrong = await rest(agent, '/admin/settings', { action: 'list_ssl_certs' }, { basic: ['admin', 'wrong'] });
  assert.equal(wrong.status, 401);
});

test("a limited user revoking another user's key is 403 (namespace echoed) and the key stays", async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent);
  const token = await admin.login('admin');
  const key = ed25519Key();
  const reg = await admin.call('settings', 'register_ssl_cert', {
    pub_key: key.pubKeyB64,
    proof: signatureProof(key, 'register-proof', token),
    nickname: 'adm',
  });
  assert.equal(reg.name, 'response', JSON.stringify(reg));

  const operator = await clientFor(t, agent, 'operator');
  const reply = await operator.call('settings', 'revoke_ssl_cert', { pub_key: key.pubKeyB64, user: 'admin' });
  errorOf(reply, { id: reply.id, namespace: 'admin', code: 403 });

  const viaRpc = await operator.request('rpc', 'settings', { action: 'revoke_ssl_certificate', pub_key: key.pubKeyB64, user: 'admin' });
  errorOf(viaRpc, { namespace: 'rpc', code: 403 });

  const res = await rest(agent, '/admin/settings', { action: 'revoke_ssl_cert', pub_key: key.pubKeyB64, user: 'admin' }, { basic: OPERATOR });
  restErrorOf(res, 403);

  const list = await admin.call('settings', 'list_ssl_certs');
  assert.equal(list.name, 'response');
  assert.deepEqual(Object.keys((list.args as Record<string, Record<string, unknown>>).admin ?? {}), [key.pubKeyB64]);
});

test('a rejected request changes nothing: list_ssl_certs is the same before and after', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const token = await client.login('admin');
  const key = ed25519Key();
  const proof = signatureProof(key, 'register-proof', token);

  const before = await client.call('settings', 'list_ssl_certs');
  assert.deepEqual(before.args, {});

  // Everything valid except one unknown argument: nothing is registered.
  errorOf(await client.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof, bogus: 1 }), { namespace: 'admin', code: 400 });
  // A nickname with control characters: refused too.
  errorOf(await client.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof, nickname: 'a\nb' }), { namespace: 'admin', code: 400 });
  // Over REST as well.
  restErrorOf(await rest(agent, '/admin/settings', { action: 'register_ssl_cert', pub_key: key.pubKeyB64, extra: true }, { basic: ADMIN }), 400);
  assert.deepEqual((await client.call('settings', 'list_ssl_certs')).args, {});

  // The same request without the bad argument works, so the refusals were about the arguments only.
  const ok = await client.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof });
  assert.equal(ok.name, 'response', JSON.stringify(ok));
  const after = await client.call('settings', 'list_ssl_certs');
  assert.deepEqual(Object.keys(after.args as object), ['admin']);

  // A rejected revoke (bad `user`) leaves the key in place.
  errorOf(await client.call('settings', 'revoke_ssl_cert', { pub_key: key.pubKeyB64, user: '-rf' }), { namespace: 'admin', code: 400 });
  assert.deepEqual((await client.call('settings', 'list_ssl_certs')).args, after.args);
});
