/**
 * Bridge conformance, part 1 (docs/bridge-protocol.md §2.1–§2.4) over real sockets: identify,
 * enrollment with one-time join tokens, sign-in with auth_ssl, list_ssl_checksums, the
 * unauthenticated timeout, and the blacklist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { ed25519Key, rawSignature, rsaKey, signatureProof } from '../helpers/keys.ts';
import type { KeyRecord } from '@hostadm/bridge/relay/ports.ts';
import { nodeOnly, startTestBridge, until } from './helpers.ts';
import { md5Of, TestPeer } from './peers.ts';

test('the bridge asks a new peer to identify, and answers identify itself', async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'server');
  t.after(() => peer.close());
  await until(() => peer.bridgeRequests.length > 0, 'identify request');
  assert.deepEqual(peer.bridgeRequests[0], { id: 'bridge_request_ident', name: 'identify', namespace: 'rpc', args: '' });
  const reply = await peer.request('identify', {});
  assert.deepEqual(reply, { id: reply.id, name: 'response', namespace: 'rpc', args: { type: 'bridge', hostname: 'test-bridge' } });
  await until(async () => (await bridge.metrics()).connections.agent === 1, 'the peer counted as an agent');

  const unknown = await peer.request('query', {});
  assert.equal(unknown.name, 'error');
  assert.equal((unknown.args as { code: number }).code, 404);
});

test('bridge calls are bounded per connection: beyond 64 waiting, a 429', {
  skip: nodeOnly('workerd delivers each message as its own event once the previous call settled, so 64 never wait at once'),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'server');
  t.after(() => peer.close());
  await until(async () => (await bridge.metrics()).connections.agent === 1, 'identified');
  // Enrollments verify a JWT (asynchronous): 200 sent at once pile up behind one another.
  for (let i = 0; i < 200; i++) peer.send({ id: `e${i}`, name: 'bridge_enroll', namespace: 'rpc', args: { token: 'x.y.z', pub_key: 'AAAA' } });
  await until(() => peer.received.filter((m) => 'env' in m && m.env.name === 'error').length === 200, 'an answer to every call');
  const refused = peer.received.filter((m) => 'env' in m && (m.env.args as { code?: number }).code === 429);
  assert.ok(refused.length > 0, 'some calls refused');
  assert.equal((await bridge.metrics()).api_calls_refused, refused.length);
});

test('a peer that answers identify with something else is closed', async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'server', [], false);
  await until(() => peer.bridgeRequests.length > 0, 'identify request');
  peer.send({ id: 'bridge_request_ident', name: 'response', namespace: 'rpc', args: { type: 'bridge', hostname: 'x' } });
  assert.equal((await peer.closed).code, 1008);
});

test('enrollment: a join token works once, for its kind, before it expires, and only if the bridge signed it', async (t) => {
  const bridge = await startTestBridge(t);
  const agent = await TestPeer.connect(bridge.url, 'server');
  t.after(() => agent.close());
  const key = ed25519Key();
  const token = await bridge.token('agent', { nickname: 'web-1' });

  const ok = await agent.enroll(token, key, 'ignored-because-the-token-names-it');
  assert.equal(ok.name, 'response', JSON.stringify(ok.args));
  const { registered } = ok.args as { registered: { key_id: string; md5_key: string; kind: string; nickname: string } };
  assert.match(registered.key_id, /^k[a-z0-9]{11}$/);
  assert.deepEqual({ ...registered, key_id: '' }, { key_id: '', md5_key: md5Of(key), kind: 'agent', nickname: 'web-1' });

  // Used once: a second use is refused, even for another key (the jti is stored).
  const again = await agent.enroll(token, ed25519Key());
  assert.deepEqual(again.args, { code: 401, message: 'Unauthorized' });

  // Expired.
  const shortLived = await bridge.token('agent', { ttlSeconds: 60 });
  await bridge.clock.advance(61);
  assert.deepEqual((await agent.enroll(shortLived, ed25519Key())).args, { code: 401, message: 'Unauthorized' });

  // Wrong kind: a client token presented by an agent.
  assert.deepEqual((await agent.enroll(await bridge.token('client'), ed25519Key())).args, { code: 401, message: 'Unauthorized' });

  // Forged: the right claims signed with another secret.
  const forged = await new SignJWT({ kind: 'agent' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('hostadm-join')
    .setJti('forged-1')
    .setExpirationTime(Math.floor((await bridge.now()) / 1000) + 600)
    .sign(new TextEncoder().encode('not-the-bridge-secret-not-the-bridge-secret'));
  assert.deepEqual((await agent.enroll(forged, ed25519Key())).args, { code: 401, message: 'Unauthorized' });
  // Not a JWT at all.
  assert.deepEqual((await agent.enroll('garbage', ed25519Key())).args, { code: 401, message: 'Unauthorized' });

  // The same key twice is a conflict; the token of that attempt stays unused.
  const retry = await bridge.token('agent');
  assert.equal(((await agent.enroll(retry, key)).args as { code: number }).code, 409);
  assert.equal((await agent.enroll(retry, ed25519Key())).name, 'response');

  // An agent enrolls its Ed25519 host key, not an RSA key.
  const rsaForAgent = await agent.enroll(await bridge.token('agent'), rsaKey());
  assert.equal((rsaForAgent.args as { code: number }).code, 400);

  const m = await bridge.metrics();
  assert.equal(m.enrollments, 2);
  assert.equal(m.enrollment_failures, 6);
  // Enrollment does not sign the peer in.
  assert.equal(m.signins, 0);
});

test('sign-in: signatures by the registered key (Ed25519 agent, RSA client), then list_ssl_checksums is asked', async (t) => {
  const bridge = await startTestBridge(t);
  const agentKey = ed25519Key();
  const clientKey = rsaKey();

  const agent = await TestPeer.connect(bridge.url, 'server', ['some-user-key-md5']);
  t.after(() => agent.close());
  assert.equal((await agent.enroll(await bridge.token('agent'), agentKey)).name, 'response');
  // Unpinned stage 1 (`""`): the bridge tries every key of the peer's kind.
  const reply = await agent.signIn(agentKey);
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const [token, seconds] = reply.args as [string, number];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  await until(() => agent.bridgeRequests.some((r) => r.id === 'bridge_request_list_keys'), 'list_ssl_checksums request');
  assert.deepEqual(
    agent.bridgeRequests.find((r) => r.id === 'bridge_request_list_keys'),
    {
      id: 'bridge_request_list_keys',
      name: 'settings',
      namespace: 'rpc',
      args: { action: 'list_ssl_checksums' },
    },
  );
  assert.equal(((await agent.request('auth_ssl', '')).args as { code: number }).code, 409, 'no second sign-in on one connection');

  // A client with an RSA key, pinned stage 1 (md5_key).
  const client = await TestPeer.connect(bridge.url, 'client', [md5Of(clientKey)]);
  t.after(() => client.close());
  assert.equal((await client.enroll(await bridge.token('client'), clientKey)).name, 'response');
  assert.equal((await client.signIn(clientKey, true)).name, 'response');

  // The original RSA form (encrypted_string) is accepted too; shown with a second client connection.
  const { originalProof } = await import('../helpers/keys.ts');
  const second = await TestPeer.connect(bridge.url, 'client', [md5Of(clientKey)]);
  t.after(() => second.close());
  const stage1 = await second.request('auth_ssl', '');
  const { test_string } = stage1.args as { test_string: string };
  assert.equal((await second.request('auth_ssl', { encrypted_string: originalProof(clientKey, test_string) })).name, 'response');
  assert.equal((await bridge.metrics()).signins, 3);
  assert.equal((await bridge.metrics()).connections.client, 2, 'clients may hold several connections');
});

test('sign-in fails for a wrong proof, an unknown key, the other kind, a stale test string, and before identify', async (t) => {
  const bridge = await startTestBridge(t);
  const agentKey = ed25519Key();
  const agent = await TestPeer.connect(bridge.url, 'server');
  t.after(() => agent.close());
  await agent.enroll(await bridge.token('agent'), agentKey);
  const unauthorized = { code: 401, message: 'Unauthorized' };

  // Proof made by another key.
  const s1 = await agent.request('auth_ssl', '');
  assert.deepEqual(
    (await agent.request('auth_ssl', { signature: signatureProof(ed25519Key(), 'bridge-signin', (s1.args as { test_string: string }).test_string) })).args,
    unauthorized,
  );
  // Stage 2 without stage 1 (the test string was used up by the failure).
  assert.deepEqual((await agent.request('auth_ssl', { signature: 'AAAA' })).args, unauthorized);
  // A stale test string (past the 30 s window).
  const s2 = await agent.request('auth_ssl', '');
  await bridge.clock.advance(31);
  assert.deepEqual(
    (await agent.request('auth_ssl', { signature: signatureProof(agentKey, 'bridge-signin', (s2.args as { test_string: string }).test_string) })).args,
    unauthorized,
  );

  // A registered agent key used by a peer that identified as a client: kinds must match.
  const client = await TestPeer.connect(bridge.url, 'client');
  t.after(() => client.close());
  assert.deepEqual((await client.signIn(agentKey)).args, unauthorized);
  assert.deepEqual((await client.signIn(agentKey, true)).args, unauthorized);

  // Before answering identify.
  const silent = await TestPeer.connect(bridge.url, 'server', [], false);
  t.after(() => silent.close());
  assert.equal(((await silent.request('auth_ssl', '')).args as { code: number }).code, 400);

  assert.equal((await bridge.metrics()).signin_failures, 5);
  assert.equal((await bridge.metrics()).signins, 0);
});

test('a relay frame before sign-in is dropped (not-permitted); a peer not signed in after 30 s is closed (4001)', async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'client');
  await until(async () => (await bridge.metrics()).connections.client === 1, 'identified');
  const since = peer.received.length;
  peer.ws.send('agent-00000000-0000-0000-0000-000000000000\nhello');
  assert.deepEqual(await peer.nextDropped(since), { destination: '', reason: 'not-permitted' });
  assert.equal((await bridge.metrics()).drops['not-permitted'], 1);

  await bridge.clock.advance(29);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).connections.client, 1, 'still open before 30 s');
  await bridge.clock.advance(1);
  await bridge.sweep();
  const closed = await peer.closed;
  assert.equal(closed.code, 4001);
  assert.equal((await bridge.metrics()).closes['4001'], 1);
  assert.equal((await bridge.metrics()).connections.client, 0);
});

test('blacklist: 5 failed sign-ins close the connection and refuse the address for an hour', async (t) => {
  const bridge = await startTestBridge(t, { config: { blacklist: { exemptLoopback: false } } });
  const key = ed25519Key();
  const peer = await TestPeer.connect(bridge.url, 'server');
  for (let i = 0; i < 4; i++) assert.equal(((await peer.signIn(key)).args as { code: number }).code, 401);
  // Failed enrollments count too: the fifth failure is a forged token.
  const fifth = await peer.enroll('forged', key);
  assert.deepEqual(fifth.args, { code: 401, message: 'Unauthorized' }, 'the 401 is sent before the close');
  assert.equal((await peer.closed).code, 1008);
  assert.equal((await bridge.metrics()).addresses_blocked, 1);

  await assert.rejects(TestPeer.connect(bridge.url, 'server'), /HTTP 429/);
  assert.equal((await bridge.metrics()).refused_blacklisted, 1);
  // The block survives a restart (it is in the database) and ends after an hour.
  const restarted = await bridge.restart();
  await assert.rejects(TestPeer.connect(restarted.url, 'server'), /HTTP 429/);
  await restarted.clock.advance(3601);
  const later = await TestPeer.connect(restarted.url, 'server');
  later.close();
});

test('loopback is never blacklisted by default', async (t) => {
  const bridge = await startTestBridge(t);
  const key = ed25519Key();
  const peer = await TestPeer.connect(bridge.url, 'server');
  t.after(() => peer.close());
  for (let i = 0; i < 7; i++) assert.equal(((await peer.signIn(key)).args as { code: number }).code, 401);
  const again = await TestPeer.connect(bridge.url, 'server');
  again.close();
  assert.equal((await bridge.metrics()).addresses_blocked, 0);
});

test('enrolled keys survive a restart: list, sign-in and the used token', async (t) => {
  const bridge = await startTestBridge(t);
  const key = ed25519Key();
  const token = await bridge.token('agent', { nickname: 'persisted' });
  const peer = await TestPeer.connect(bridge.url, 'server');
  assert.equal((await peer.enroll(token, key)).name, 'response');
  assert.equal((await peer.signIn(key)).name, 'response');
  peer.close();
  const mine = (keys: KeyRecord[]) => keys.filter((k) => k.md5Key === md5Of(key));
  const before = mine(await bridge.keys());
  assert.equal(before.length, 1);
  await until(async () => (await bridge.metrics()).connections.agent === 0, 'disconnect');

  const restarted = await bridge.restart();
  const after = mine(await restarted.keys());
  assert.deepEqual(
    after.map(({ lastSeenAt: _l, ...k }) => k),
    before.map(({ lastSeenAt: _l, ...k }) => k),
  );
  assert.equal(after[0]!.nickname, 'persisted');
  assert.ok(after[0]!.lastSeenAt !== null, 'last_seen_at recorded');
  const again = await TestPeer.connect(restarted.url, 'server');
  t.after(() => again.close());
  assert.equal((await again.signIn(key, true)).name, 'response', 'signs in without enrolling again');
  assert.deepEqual((await again.enroll(token, ed25519Key())).args, { code: 401, message: 'Unauthorized' }, 'the used token stays used');
});

test('sign-in needs a signature made for the bridge: the bare test string or one labelled for an agent is refused', async (t) => {
  // A key signs one kind of thing (docs/protocol.md "Signatures"): a signature a client made to sign in
  // to an agent must not sign it in to a bridge, nor the old unlabelled form.
  const bridge = await startTestBridge(t);
  const agentKey = ed25519Key();
  const agent = await TestPeer.connect(bridge.url, 'server');
  t.after(() => agent.close());
  await agent.enroll(await bridge.token('agent'), agentKey);
  const unauthorized = { code: 401, message: 'Unauthorized' };
  const challenge = async () => ((await agent.request('auth_ssl', '')).args as { test_string: string }).test_string;

  assert.deepEqual((await agent.request('auth_ssl', { signature: rawSignature(agentKey, await challenge()) })).args, unauthorized);
  assert.deepEqual((await agent.request('auth_ssl', { signature: signatureProof(agentKey, 'agent-signin', await challenge()) })).args, unauthorized);
  const reply = await agent.request('auth_ssl', { signature: signatureProof(agentKey, 'bridge-signin', await challenge()) });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
});

test('a host nickname belongs to the key enrolled with it: another agent key cannot claim it until that key is revoked', async (t) => {
  const bridge = await startTestBridge(t);
  const [realKey, rogueKey] = [ed25519Key(), ed25519Key()];
  const real = await TestPeer.connect(bridge.url, 'server');
  const rogue = await TestPeer.connect(bridge.url, 'server');
  t.after(() => {
    real.close();
    rogue.close();
  });
  assert.equal((await real.enroll(await bridge.token('agent', { nickname: 'web1' }), realKey)).name, 'response');

  // Any other agent join token, with the name in the token, in the request, or as the identify hostname.
  const viaToken = await rogue.enroll(await bridge.token('agent', { nickname: 'web1' }), rogueKey);
  assert.equal(viaToken.name, 'error');
  assert.equal((viaToken.args as { code: number }).code, 409);
  assert.match((viaToken.args as { message: string }).message, /nickname "web1" belongs to another host's key/);
  const viaArgs = await rogue.enroll(await bridge.token('agent'), rogueKey, 'web1');
  assert.equal((viaArgs.args as { code: number }).code, 409);

  // Revoking the real key frees the name.
  const res = await fetch(`${bridge.httpUrl}/admin/revoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bridge.adminSecret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: md5Of(realKey) }),
  });
  assert.equal(res.status, 200);
  const after = await rogue.enroll(await bridge.token('agent', { nickname: 'web1' }), rogueKey);
  assert.equal(after.name, 'response', JSON.stringify(after.args));
});
