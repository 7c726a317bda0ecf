/**
 * Two-stage `auth_ssl` sign-in over real WebSockets: the original `encrypted_string` and the modern
 * `signature` forms, the 30 s window (ManualClock), single-use and per-connection test strings, and
 * what a stage 2 proof must be. Key registration and management: auth-ssl-keys.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertFullQuery, agentFor, clientFor } from '../helpers/agent.ts';
import { ed25519Key, originalProof, rawSignature, rsaKey, signatureProof } from '../helpers/keys.ts';
import {
  unauthorized,
  passwordSession,
  register,
  registerOk,
  stage1,
  stage2Args,
  sslSignIn,
  assertTokenReply,
  listCerts,
  md5OfKey,
  assertBadRequestNaming,
  assertCode,
} from './auth-ssl-helpers.ts';

test('an RSA key registered by admin signs in with the original encrypted_string form as admin', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const operator = await passwordSession(t, agent, 'operator');
  const key = rsaKey();
  const operatorKey = rsaKey();
  await registerOk(admin, key);
  await registerOk(operator, operatorKey);

  const client = await clientFor(t, agent);
  const stage1Reply = await client.request('rpc', 'auth_ssl', '', 'st1');
  assert.equal(stage1Reply.id, 'st1');
  assert.equal(stage1Reply.name, 'response');
  assert.equal(stage1Reply.namespace, 'rpc');
  const { test_string } = stage1Reply.args as { test_string: string };
  assert.match(test_string, /^[A-Za-z0-9]+$/);
  const reply = await client.request('rpc', 'auth_ssl', { encrypted_string: originalProof(key, test_string) }, 'st2');
  assert.equal(reply.id, 'st2');
  assertTokenReply(reply);

  assertFullQuery((await client.request('rpc', 'query', {})).args);
  // Full access: the session sees every user's keys, so it is admin's and not operator's.
  assert.deepEqual(Object.keys(await listCerts(client)).sort(), ['admin', 'operator']);
});

test('the modern signature form works for RSA and for Ed25519', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const rsa = rsaKey();
  const ed = ed25519Key();
  await registerOk(admin, rsa, { form: 'original' });
  await registerOk(admin, ed);

  for (const key of [rsa, ed]) {
    const client = await clientFor(t, agent);
    assertTokenReply(await sslSignIn(client, key, 'signature'));
    assertFullQuery((await client.request('rpc', 'query', {})).args);
    assert.deepEqual(Object.keys(await listCerts(client)), ['admin']);
  }
  // Ed25519 has no "private-key encryption": the original form with it is refused.
  const client = await clientFor(t, agent);
  const testString = await stage1(client);
  const bogus = Buffer.from(signatureProof(ed, 'agent-signin', testString), 'base64').toString('base64');
  assert.deepEqual(await client.request('rpc', 'auth_ssl', { encrypted_string: bogus }, 'x'), unauthorized('x'));
});

test('a key signs in its own user: an operator key gives operator access, not admin', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const operator = await passwordSession(t, agent, 'operator');
  const adminKey = rsaKey();
  await registerOk(admin, adminKey);
  const key = ed25519Key();
  await registerOk(operator, key);

  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, key, 'signature'));
  assert.deepEqual(Object.keys(await listCerts(client)), ['operator']);
  assertCode(await client.call('settings', 'revoke_ssl_cert', { pub_key: adminKey.pubKeyB64, user: 'admin' }), 403);
});

test('stage 2 must come within 30 s of stage 1', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  await registerOk(admin, key);

  const late = await clientFor(t, agent);
  const testString = await stage1(late);
  agent.clock.advance(31);
  assert.deepEqual(await late.request('rpc', 'auth_ssl', stage2Args(key, testString, 'signature'), 'late'), unauthorized('late'));
  assert.deepEqual(await late.request('rpc', 'query', {}, 'q'), unauthorized('q'));

  const inTime = await clientFor(t, agent);
  const fresh = await stage1(inTime);
  agent.clock.advance(25);
  assertTokenReply(await inTime.request('rpc', 'auth_ssl', stage2Args(key, fresh, 'signature')));
});

test('a test string is used once: replaying a stage 2 proof is 401, and a wrong guess burns it', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  await registerOk(admin, key);

  const client = await clientFor(t, agent);
  const testString = await stage1(client);
  const proof = { encrypted_string: originalProof(key, testString) };
  assertTokenReply(await client.request('rpc', 'auth_ssl', proof));
  assert.deepEqual(await client.request('rpc', 'auth_ssl', proof, 'replay'), unauthorized('replay'));

  // Recorded proof replayed on a new connection, with or without asking for a test string first.
  const attacker = await clientFor(t, agent);
  assert.deepEqual(await attacker.request('rpc', 'auth_ssl', proof, 'replay-2'), unauthorized('replay-2'));
  await stage1(attacker);
  assert.deepEqual(await attacker.request('rpc', 'auth_ssl', proof, 'replay-3'), unauthorized('replay-3'));
  assert.deepEqual(await attacker.request('rpc', 'query', {}, 'q'), unauthorized('q'));

  // A failed stage 2 consumes the test string: the right proof afterwards is too late.
  const guesser = await clientFor(t, agent);
  const guessed = await stage1(guesser);
  const wrong = { signature: signatureProof(rsaKey(), 'agent-signin', guessed) };
  assert.deepEqual(await guesser.request('rpc', 'auth_ssl', wrong, 'guess'), unauthorized('guess'));
  assert.deepEqual(await guesser.request('rpc', 'auth_ssl', stage2Args(key, guessed, 'signature'), 'after-guess'), unauthorized('after-guess'));
});

test('a test string issued on one connection cannot be answered on another', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  await registerOk(admin, key);

  const a = await clientFor(t, agent);
  const b = await clientFor(t, agent);
  const testA = await stage1(a);
  const proofA = stage2Args(key, testA, 'signature');
  // B never asked: no test string to answer.
  assert.deepEqual(await b.request('rpc', 'auth_ssl', proofA, 'b1'), unauthorized('b1'));
  // B asked for its own: A's string signed is not an answer to B's.
  await stage1(b);
  assert.deepEqual(await b.request('rpc', 'auth_ssl', proofA, 'b2'), unauthorized('b2'));
  assert.deepEqual(await b.request('rpc', 'query', {}, 'bq'), unauthorized('bq'));
  // B's attempts did not consume A's test string.
  assertTokenReply(await a.request('rpc', 'auth_ssl', proofA));
});

test('a signature by an unregistered key, or stage 2 without stage 1, is 401', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  await registerOk(admin, key);

  const client = await clientFor(t, agent);
  assert.deepEqual(await sslSignIn(client, rsaKey(), 'signature', 'unreg-rsa'), unauthorized('unreg-rsa'));
  assert.deepEqual(await sslSignIn(client, rsaKey(), 'original', 'unreg-orig'), unauthorized('unreg-orig'));
  assert.deepEqual(await sslSignIn(client, ed25519Key(), 'signature', 'unreg-ed'), unauthorized('unreg-ed'));
  const garbage = { signature: Buffer.from('x'.repeat(256)).toString('base64') };
  await stage1(client);
  assert.deepEqual(await client.request('rpc', 'auth_ssl', garbage, 'garbage'), unauthorized('garbage'));

  const direct = await clientFor(t, agent);
  const unasked = stage2Args(key, 'A'.repeat(32), 'signature');
  assert.deepEqual(await direct.request('rpc', 'auth_ssl', unasked, 'no-stage1'), unauthorized('no-stage1'));
  assert.deepEqual(await direct.request('rpc', 'query', {}, 'q'), unauthorized('q'));
});

test('the bridge md5_key stage 1 on a direct connection is 400, and yields no test string', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const key = rsaKey();
  await registerOk(admin, key);

  const client = await clientFor(t, agent);
  const reply = await client.request('rpc', 'auth_ssl', { action: 'auth_ssl', md5_key: md5OfKey(key) }, 'md5');
  assert.equal(reply.id, 'md5');
  assert.equal(reply.namespace, 'rpc');
  assertCode(reply, 400);
  assert.equal((reply.args as Record<string, unknown>).test_string, undefined);
  assert.deepEqual(await client.request('rpc', 'query', {}, 'q'), unauthorized('q'));
});

test('an RSA key under 2048 bits is refused', async (t) => {
  const agent = await agentFor(t);
  const admin = await passwordSession(t, agent, 'admin');
  const weak = rsaKey(1024);
  const reply = await register(admin, weak);
  assertBadRequestNaming(reply, 'pub_key');
  assert.deepEqual(await listCerts(admin.client), {});
  const client = await clientFor(t, agent);
  assert.deepEqual(await sslSignIn(client, weak, 'original', 'weak'), unauthorized('weak'));
});

test('stage 2 needs a signature made for an agent: the bare test string or one labelled for a bridge is 401', async (t) => {
  // A hostile bridge could pass an agent's test string off as its own sign-in challenge and replay the
  // client's answer here; the labels make that answer worthless (docs/protocol.md "Signatures").
  const agent = await agentFor(t);
  const key = rsaKey();
  await registerOk(await passwordSession(t, agent, 'admin'), key);
  for (const [id, sign] of [
    ['bare', (ts: string) => rawSignature(key, ts)],
    ['bridge-label', (ts: string) => signatureProof(key, 'bridge-signin', ts)],
  ] as const) {
    const client = await clientFor(t, agent);
    assert.deepEqual(await client.request('rpc', 'auth_ssl', { signature: sign(await stage1(client)) }, id), unauthorized(id));
  }
  const client = await clientFor(t, agent);
  assertTokenReply(await sslSignIn(client, key, 'signature'));
});
