/**
 * Key registration (`settings`) and two-stage `auth_ssl` over real WebSockets: the original
 * `encrypted_string` and the modern `signature` forms, the 30 s window (ManualClock), single-use
 * and per-connection test strings, ownership rules, revocation and persistence.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { assertFullQuery, startTestAgent, TestClient, type Envelope, type TestAgent, agentFor, clientFor } from '../helpers/agent.ts';
import { ed25519Key, originalProof, rawSignature, rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';

function unauthorized(id: string) {
  return { id, name: 'error', namespace: 'rpc', args: { code: 401, message: 'Unauthorized' } };
}

/** A connection signed in with a password, and its token (what a proof signs). */
async function passwordSession(t: TestContext, agent: TestAgent, user: string): Promise<{ client: TestClient; token: string }> {
  const client = await clientFor(t, agent);
  const token = await client.login(user);
  return { client, token };
}

type Form = 'original' | 'signature';

function proofFor(key: TestKey, message: string, form: Form): string {
  return form === 'original' ? originalProof(key, message) : signatureProof(key, 'register-proof', message);
}

/** Registers `key` on a signed-in connection, proving possession by signing the session token. */
async function register(
  session: { client: TestClient; token: string },
  key: TestKey,
  options: { form?: Form; nickname?: string; email?: string; namespace?: string; action?: string } = {},
): Promise<Envelope> {
  const args: Record<string, unknown> = { pub_key: key.pubKeyB64, proof: proofFor(key, session.token, options.form ?? 'signature') };
  if (options.nickname !== undefined) args.nickname = options.nickname;
  if (options.email !== undefined) args.email = options.email;
  return session.client.request(options.namespace ?? 'admin', 'settings', { action: options.action ?? 'register_ssl_cert', ...args });
}

async function registerOk(session: { client: TestClient; token: string }, key: TestKey, options: Parameters<typeof register>[2] = {}) {
  const reply = await register(session, key, options);
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  assert.deepEqual(reply.args, {});
}

/** Stage 1: the test string for this connection. */
async function stage1(client: TestClient): Promise<string> {
  const reply = await client.request('rpc', 'auth_ssl', '');
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const args = reply.args as { test_string: string };
  assert.deepEqual(Object.keys(args), ['test_string']);
  assert.match(args.test_string, /^[A-Za-z0-9]+$/);
  return args.test_string;
}

function stage2Args(key: TestKey, testString: string, form: Form): Record<string, string> {
  return form === 'original' ? { encrypted_string: originalProof(key, testString) } : { signature: signatureProof(key, 'agent-signin', testString) };
}

/** Both stages on `client`; returns the stage 2 reply. */
async function sslSignIn(client: TestClient, key: TestKey, form: Form, id?: string): Promise<Envelope> {
  const testString = await stage1(client);
  return client.request('rpc', 'auth_ssl', stage2Args(key, testString, form), id);
}

function assertTokenReply(reply: Envelope): string {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const [token, seconds] = reply.args as [string, number];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  return token;
}

async function listCerts(client: TestClient): Promise<Record<string, Record<string, unknown>>> {
  const reply = await client.call('settings', 'list_ssl_certs');
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args as Record<string, Record<string, unknown>>;
}

function md5OfKey(key: TestKey): string {
  return createHash('md5').update(Buffer.from(key.pubKeyB64, 'base64').toString('utf8')).digest('base64');
}

function assertBadRequestNaming(reply: Envelope, field: string): void {
  assert.equal(reply.name, 'error');
  const args = reply.args as { code: number; errors?: Array<{ field: string }> };
  assert.equal(args.code, 400);
  assert.ok(
    args.errors?.some((e) => e.field === field),
    `400 should name ${field}: ${JSON.stringify(args)}`,
  );
}

function assertCode(reply: Envelope, code: number): void {
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  assert.equal((reply.args as { code: number }).code, code, JSON.stringify(reply.args));
}

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
