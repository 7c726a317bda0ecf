/**
 * Key registration (`settings`) over real WebSockets: proof of possession, the `_certificate`
 * spellings, listing, ownership rules, revocation (ending sessions at once) and persistence across
 * restarts. Signing in with a key: auth-ssl.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertFullQuery, startTestAgent, TestClient, agentFor, clientFor } from '../helpers/agent.ts';
import { ed25519Key, originalProof, rawSignature, rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import {
  unauthorized,
  passwordSession,
  register,
  registerOk,
  sslSignIn,
  assertTokenReply,
  listCerts,
  md5OfKey,
  assertBadRequestNaming,
  assertCode,
} from './auth-ssl-helpers.ts';

test('registering a key needs proof of the private key: missing, foreign or replayed proofs are 400', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  const otherKey = rsaKey();

  const bare = await admin.client.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64 });
  assertBadRequestNaming(bare, 'proof');

  // The attacker has only the public key; a proof made with their own key does not bind it.
  const foreign = await admin.client.call('settings', 'register_ssl_cert', {
    pub_key: key.pubKeyB64,
    proof: signatureProof(otherKey, 'register-proof', admin.token),
  });
  assertCode(foreign, 400);
  const foreignOriginal = await admin.client.call('settings', 'register_ssl_cert', {
    pub_key: key.pubKeyB64,
    proof: originalProof(otherKey, admin.token),
  });
  assertCode(foreignOriginal, 400);

  // A proof observed on another session (it signs that session's token) is no good on this one.
  const operator = await passwordSession(t, agent, 'operator');
  const replayed = await operator.client.call('settings', 'register_ssl_cert', {
    pub_key: key.pubKeyB64,
    proof: signatureProof(key, 'register-proof', admin.token),
  });
  assertCode(replayed, 400);

  assert.deepEqual(await listCerts(admin.client), {});
  // And the key signs nobody in.
  const client = await clientFor(t, agent);
  assert.deepEqual(await sslSignIn(client, key, 'signature', 's2'), unauthorized('s2'));
});

test('the _certificate spellings and the rpc/settings namespace work too', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const viaRpc = rsaKey();
  const viaAdmin = ed25519Key();
  await registerOk(admin, viaRpc, { namespace: 'rpc', action: 'register_ssl_certificate' });
  await registerOk(admin, viaAdmin, { namespace: 'admin', action: 'register_ssl_certificate' });

  for (const [namespace, action] of [
    ['admin', 'list_ssl_certificates'],
    ['rpc', 'list_ssl_certificates'],
    ['rpc', 'list_ssl_certs'],
  ] as const) {
    const reply = await admin.client.request(namespace, 'settings', { action });
    assert.equal(reply.name, 'response', `${namespace} ${action}`);
    assert.deepEqual(Object.keys((reply.args as Record<string, object>).admin ?? {}).sort(), [viaAdmin.pubKeyB64, viaRpc.pubKeyB64].sort());
  }

  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, viaRpc, 'signature'));

  const revoke = await admin.client.request('rpc', 'settings', { action: 'revoke_ssl_certificate', pub_key: viaRpc.pubKeyB64 });
  assert.deepEqual(revoke.args, {});
  const revoke2 = await admin.client.request('admin', 'settings', { action: 'revoke_ssl_certificate', pub_key: viaAdmin.pubKeyB64 });
  assert.deepEqual(revoke2.args, {});
  assert.deepEqual(await listCerts(admin.client), {});
});

test('list_ssl_certs is keyed by user then key, and list_ssl_checksums gives the MD5 of each SPKI PEM', async (t) => {
  const agent = await agentFor(t);
  // Registration time comes from the agent's clock: ten days ahead of the real one.
  agent.clock.advance(10 * 86400);
  const admin = await passwordSession(t, agent, 'admin');
  const operator = await passwordSession(t, agent, 'operator');
  const rsa = rsaKey();
  const ed = ed25519Key();
  const opKey = rsaKey();
  await registerOk(admin, rsa, { nickname: 'laptop', email: 'admin@example.org' });
  await registerOk(admin, ed);
  await registerOk(operator, opKey, { nickname: 'op', form: 'original' });

  const list = await listCerts(admin.client);
  assert.deepEqual(Object.keys(list).sort(), ['admin', 'operator']);
  const registered = (list.admin?.[rsa.pubKeyB64] as { registered: string } | undefined)?.registered ?? '';
  assert.ok(Date.parse(registered) > Date.now() + 9 * 86400 * 1000, `registered ${registered} should follow the agent clock`);
  assert.equal(new Date(Date.parse(registered)).toISOString(), registered);
  const details = (key: TestKey, nickname: string, email: string) => ({
    nickname,
    email,
    registered: (list[key === opKey ? 'operator' : 'admin']![key.pubKeyB64] as { registered: string }).registered,
    md5_key: md5OfKey(key),
    algorithm: key.algorithm,
  });
  assert.deepEqual(list, {
    admin: { [rsa.pubKeyB64]: details(rsa, 'laptop', 'admin@example.org'), [ed.pubKeyB64]: details(ed, '', '') },
    operator: { [opKey.pubKeyB64]: details(opKey, 'op', '') },
  });

  // Full access gets every checksum, a limited user its own (the bridge link answers the bridge itself).
  for (const [client, expected] of [
    [admin.client, [rsa, ed, opKey]],
    [operator.client, [opKey]],
  ] as const) {
    const sums = await client.request('rpc', 'settings', { action: 'list_ssl_checksums' });
    assert.equal(sums.name, 'response');
    const { md5_keys } = sums.args as { md5_keys: string[] };
    assert.deepEqual(Object.keys(sums.args as object), ['md5_keys']);
    assert.deepEqual([...md5_keys].sort(), expected.map(md5OfKey).sort());
  }
});

test('an operator sees and revokes only their own keys; admin sees and revokes all', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const operator = await passwordSession(t, agent, 'operator');
  const adminKey = rsaKey();
  const opKey = ed25519Key();
  const opKey2 = rsaKey();
  await registerOk(admin, adminKey);
  await registerOk(operator, opKey);
  await registerOk(operator, opKey2);

  assert.deepEqual(Object.keys(await listCerts(operator.client)), ['operator']);
  assert.deepEqual(Object.keys(await listCerts(admin.client)).sort(), ['admin', 'operator']);

  // The operator tries to revoke admin's key: naming admin is forbidden, and without naming admin
  // it is not the operator's key.
  const named = await operator.client.call('settings', 'revoke_ssl_cert', { pub_key: adminKey.pubKeyB64, user: 'admin' });
  assertCode(named, 403);
  const unnamed = await operator.client.call('settings', 'revoke_ssl_cert', { pub_key: adminKey.pubKeyB64 });
  assertCode(unnamed, 400);
  assert.ok(adminKey.pubKeyB64 in ((await listCerts(admin.client)).admin ?? {}));
  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, adminKey, 'signature'));

  // Admin may revoke the operator's key by naming the operator.
  const byAdmin = await admin.client.call('settings', 'revoke_ssl_cert', { pub_key: opKey.pubKeyB64, user: 'operator' });
  assert.deepEqual(byAdmin.args, {});
  // The operator revokes their own other key.
  const own = await operator.client.call('settings', 'revoke_ssl_cert', { pub_key: opKey2.pubKeyB64 });
  assert.deepEqual(own.args, {});
  assert.deepEqual(await listCerts(operator.client), {});
  assert.deepEqual(Object.keys(await listCerts(admin.client)), ['admin']);
});

test('a key registered to one user cannot be claimed by another', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const operator = await passwordSession(t, agent, 'operator');
  const shared = rsaKey();
  await registerOk(admin, shared);
  // Even holding the private key, the operator cannot make the key sign in as operator.
  const claim = await register(operator, shared);
  assertCode(claim, 409);
  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, shared, 'signature'));
  assert.deepEqual(Object.keys(await listCerts(client)), ['admin']);
});

test('revoking an unknown key is 400', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const reply = await admin.client.call('settings', 'revoke_ssl_cert', { pub_key: rsaKey().pubKeyB64 });
  assertBadRequestNaming(reply, 'pub_key');
  const other = await admin.client.call('settings', 'revoke_ssl_cert', { pub_key: rsaKey().pubKeyB64, user: 'operator' });
  assertCode(other, 400);
});

test('revoking a key ends the sessions that signed in with it, at once, and it signs in no more', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  const keep = ed25519Key();
  await registerOk(admin, key);
  await registerOk(admin, keep);

  const viaKey = await clientFor(t, agent);
  const keyToken = assertTokenReply(await sslSignIn(viaKey, key, 'original'));
  const viaKeep = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(viaKeep, keep, 'signature'));
  // The session was resumed on another connection: it still came from the key.
  const resumed = await clientFor(t, agent);
  assertTokenReply(await resumed.request('rpc', 'auth_token', { token: keyToken }));
  const viaKey2 = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(viaKey2, key, 'signature'));

  const revoke = await admin.client.call('settings', 'revoke_ssl_cert', { pub_key: key.pubKeyB64 });
  assert.deepEqual(revoke.args, {});

  assert.deepEqual(await resumed.request('rpc', 'query', {}, 'r'), unauthorized('r'));
  assert.deepEqual(await viaKey2.request('rpc', 'query', {}, 'k2'), unauthorized('k2'));
  const again = await clientFor(t, agent);
  assert.deepEqual(await sslSignIn(again, key, 'signature', 'again'), unauthorized('again'));
  assert.deepEqual(await sslSignIn(again, key, 'original', 'again-orig'), unauthorized('again-orig'));
  // Sessions from another key and from the password are untouched.
  assertFullQuery((await viaKeep.request('rpc', 'query', {})).args);
  assertFullQuery((await admin.client.request('rpc', 'query', {})).args);
});

test('registered keys survive an agent restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  const key = rsaKey();
  const ed = ed25519Key();
  {
    const client = await TestClient.connect(agent.url);
    const token = await client.login('operator');
    await registerOk({ client, token }, key, { nickname: 'kept' });
    await registerOk({ client, token }, ed);
    client.close();
  }
  agent = await agent.restart();

  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, key, 'original'));
  const list = await listCerts(client);
  assert.deepEqual(Object.keys(list.operator ?? {}).sort(), [key.pubKeyB64, ed.pubKeyB64].sort());
  assert.equal((list.operator![key.pubKeyB64] as { nickname: string }).nickname, 'kept');
  const edClient = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(edClient, ed, 'signature'));
});

test('a register_ssl_cert proof must be made for registration: a sign-in signature over the token is 400', async (t) => {
  const agent = await agentFor(t);
  const key = rsaKey();
  const session = await passwordSession(t, agent, 'admin');
  const reply = await session.client.request('admin', 'settings', {
    action: 'register_ssl_cert',
    pub_key: key.pubKeyB64,
    proof: rawSignature(key, session.token),
  });
  assert.equal(reply.name, 'error');
  assert.equal((reply.args as { code: number }).code, 400);
});
