/**
 * Bridge sign-in tickets (docs/bridge-protocol.md §2.3, "Sign-in tickets"), on either runtime: a key
 * sign-in that asks gets a ticket, a later connection signs in with it and an HMAC over the fresh test
 * string, and every way an attacker could use a ticket fails and counts as a failed sign-in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { bridgeTicketProof, type BridgeSignInTicket, type BridgeTicketGrant } from '@hostadm/shared/crypto/bridge-ticket.ts';
import { SignInTickets } from '@hostadm/bridge/relay/signin-tickets.ts';
import type { KeyRecord } from '@hostadm/bridge/relay/ports.ts';
import { ed25519Key, rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, TestPeer } from './peers.ts';

const unauthorized = { code: 401, message: 'Unauthorized' };

/** Connects as `type` and enrolls `key` with a fresh token. */
async function enrolled(bridge: TestBridge, type: 'server' | 'client', key: TestKey): Promise<TestPeer> {
  const peer = await TestPeer.connect(bridge.url, type, [md5Of(key)]);
  const reply = await peer.enroll(await bridge.token(type === 'server' ? 'agent' : 'client'), key);
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return peer;
}

/** A key sign-in asking for a ticket; the ticket as a client keeps it. */
async function keySignInWithTicket(peer: TestPeer, key: TestKey): Promise<BridgeSignInTicket> {
  const stage1 = await peer.request('auth_ssl', { action: 'auth_ssl', md5_key: md5Of(key) });
  const { test_string } = stage1.args as { test_string: string };
  const reply = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', test_string), want_ticket: true });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const [token, seconds, grant] = reply.args as [string, number, BridgeTicketGrant];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  assert.match(grant.ticket, /^bst1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(grant.secret, 'base64').length, 32);
  assert.equal(grant.expires_in, 8 * 3600);
  return { ticket: grant.ticket, secret: grant.secret, md5Key: md5Of(key), bridge: '', expiresAt: Date.now() + grant.expires_in * 1000 };
}

/** Stage 1 (pinned to `pin` when given) and a ticket proof over its test string. */
async function ticketSignIn(peer: TestPeer, ticket: BridgeSignInTicket, pin?: string): Promise<{ reply: { name: string; args: unknown }; mac: string }> {
  const stage1 = await peer.request('auth_ssl', pin ? { action: 'auth_ssl', md5_key: pin } : '');
  const mac = await bridgeTicketProof(ticket, (stage1.args as { test_string: string }).test_string);
  return { reply: await peer.request('auth_ssl', { ticket: ticket.ticket, mac }), mac };
}

async function keyRecord(bridge: TestBridge, key: TestKey): Promise<KeyRecord> {
  const record = (await bridge.keys()).find((k) => k.md5Key === md5Of(key));
  assert.ok(record, 'the key is registered');
  return record;
}

test('a key sign-in that asks gets a ticket; later connections sign in with it and no key proof, and are matched as usual', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  t.after(() => first.close());
  const ticket = await keySignInWithTicket(first, key);

  for (const pin of [md5Of(key), undefined]) {
    const later = await TestPeer.connect(bridge.url, 'client', [md5Of(key)]);
    t.after(() => later.close());
    const since = later.received.length;
    const { reply } = await ticketSignIn(later, ticket, pin);
    assert.equal(reply.name, 'response', JSON.stringify(reply.args));
    assert.equal((reply.args as unknown[]).length, 2, 'a ticket sign-in gives no new ticket: the key must prove itself again within 8 hours');
    await later.nextAnnouncement(since);
    assert.ok(
      later.bridgeRequests.some((r) => r.id === 'bridge_request_list_keys'),
      'the bridge asked for its keys as after any sign-in',
    );
  }
  // Without want_ticket the reply is the spec's [token, seconds].
  const plain = await TestPeer.connect(bridge.url, 'client', [md5Of(key)]);
  t.after(() => plain.close());
  assert.equal(((await plain.signIn(key, true)).args as unknown[]).length, 2);

  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signins_by_ticket, m.signin_tickets_issued, m.signin_failures], [4, 2, 1, 0]);
});

test('a captured ticket proof does not sign in again: the MAC covers a test string used once', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  t.after(() => first.close());
  const ticket = await keySignInWithTicket(first, key);
  const victim = await TestPeer.connect(bridge.url, 'client');
  t.after(() => victim.close());
  const { reply, mac } = await ticketSignIn(victim, ticket, md5Of(key));
  assert.equal(reply.name, 'response');

  // The attacker saw `ticket` and `mac` on the wire, not the secret.
  const attacker = await TestPeer.connect(bridge.url, 'client');
  t.after(() => attacker.close());
  assert.deepEqual((await attacker.request('auth_ssl', { ticket: ticket.ticket, mac })).args, unauthorized, 'no test string outstanding');
  await attacker.request('auth_ssl', { action: 'auth_ssl', md5_key: md5Of(key) });
  assert.deepEqual((await attacker.request('auth_ssl', { ticket: ticket.ticket, mac })).args, unauthorized, 'a fresh test string');
  // The ticket alone, with a MAC under a guessed secret, is no better.
  const guessed = { ...ticket, secret: randomBytes(32).toString('base64') };
  assert.deepEqual((await ticketSignIn(attacker, guessed, md5Of(key))).reply.args, unauthorized);
  assert.equal((await bridge.metrics()).signin_failures, 3);
});

test("a ticket is refused for another key, the other kind, when altered, and when another bridge's secret made it", async (t) => {
  const bridge = await startTestBridge(t);
  const mine = rsaKey();
  const other = rsaKey();
  const agentKey = ed25519Key();
  const client = await enrolled(bridge, 'client', mine);
  t.after(() => client.close());
  const ticket = await keySignInWithTicket(client, mine);
  const otherPeer = await enrolled(bridge, 'client', other);
  t.after(() => otherPeer.close());
  const agent = await enrolled(bridge, 'server', agentKey);
  t.after(() => agent.close());
  const agentTicket = await keySignInWithTicket(agent, agentKey);

  const attacker = await TestPeer.connect(bridge.url, 'client');
  t.after(() => attacker.close());
  // Pinned to another key than the ticket's.
  assert.deepEqual((await ticketSignIn(attacker, ticket, md5Of(other))).reply.args, unauthorized);
  // An agent's ticket presented by a peer that identified as a client.
  assert.deepEqual((await ticketSignIn(attacker, agentTicket)).reply.args, unauthorized);
  // The payload altered to name the other key (same tag).
  const [, payload, tag] = ticket.ticket.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as { m: string };
  const altered = Buffer.from(JSON.stringify({ ...claims, m: md5Of(other) })).toString('base64url');
  assert.deepEqual((await ticketSignIn(attacker, { ...ticket, ticket: `bst1.${altered}.${tag}` })).reply.args, unauthorized);
  // Well made for this very key, by a bridge with another join secret.
  const elsewhere = await new SignInTickets(randomBytes(32)).issue(await keyRecord(bridge, mine), await bridge.now(), 3600);
  assert.ok(elsewhere);
  const foreign = { ...ticket, ticket: elsewhere.ticket, secret: elsewhere.secret };
  assert.deepEqual((await ticketSignIn(attacker, foreign, md5Of(mine))).reply.args, unauthorized);
  // Not a ticket at all.
  assert.deepEqual((await ticketSignIn(attacker, { ...ticket, ticket: 'bst1.e30.AAAA' })).reply.args, unauthorized);
  assert.equal((await bridge.metrics()).signin_failures, 5);
  assert.equal((await bridge.metrics()).signins_by_ticket, 0);
});

test('a ticket is refused once expired, and once its key is revoked', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  const ticket = await keySignInWithTicket(first, key);
  first.close();

  await bridge.clock.advance(8 * 3600 - 120);
  const early = await TestPeer.connect(bridge.url, 'client');
  t.after(() => early.close());
  assert.equal((await ticketSignIn(early, ticket, md5Of(key))).reply.name, 'response', 'good until its 8 hours are over');
  await bridge.clock.advance(121);
  const late = await TestPeer.connect(bridge.url, 'client');
  t.after(() => late.close());
  assert.deepEqual((await ticketSignIn(late, ticket, md5Of(key))).reply.args, unauthorized);
  // The key still signs in, and gets a new ticket.
  const fresh = await keySignInWithTicket(late, key);

  const res = await fetch(`${bridge.httpUrl}/admin/revoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bridge.adminSecret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: md5Of(key) }),
  });
  assert.equal(res.status, 200);
  const afterRevoke = await TestPeer.connect(bridge.url, 'client');
  t.after(() => afterRevoke.close());
  assert.deepEqual((await ticketSignIn(afterRevoke, fresh, md5Of(key))).reply.args, unauthorized);
  assert.deepEqual((await ticketSignIn(afterRevoke, fresh)).reply.args, unauthorized, 'unpinned too');
  const m = await bridge.metrics();
  assert.deepEqual([m.signins_by_ticket, m.signin_failures], [1, 3]);
});

test('forged tickets count as failed sign-ins: the fifth closes the connection and blocks the address', async (t) => {
  const bridge = await startTestBridge(t, { config: { blacklist: { exemptLoopback: false } } });
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  const ticket = await keySignInWithTicket(first, key);
  first.close();
  const [, payload] = ticket.ticket.split('.');
  const forged = { ...ticket, ticket: `bst1.${payload}.${Buffer.alloc(32).toString('base64url')}` };
  const attacker = await TestPeer.connect(bridge.url, 'client');
  for (let i = 0; i < 4; i++) assert.deepEqual((await ticketSignIn(attacker, forged, md5Of(key))).reply.args, unauthorized);
  assert.deepEqual((await ticketSignIn(attacker, forged, md5Of(key))).reply.args, unauthorized, 'the 401 is sent before the close');
  assert.equal((await attacker.closed).code, 1008);
  await until(async () => (await bridge.metrics()).addresses_blocked === 1, 'the address blocked');
  await assert.rejects(TestPeer.connect(bridge.url, 'client'), /HTTP 429/);
});

test('stage 2 may carry the key list: the bridge then announces at once and does not ask for it', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const peer = await enrolled(bridge, 'client', key);
  t.after(() => peer.close());
  const stage1 = await peer.request('auth_ssl', { action: 'auth_ssl', md5_key: md5Of(key) });
  const { test_string } = stage1.args as { test_string: string };
  const signature = signatureProof(key, 'bridge-signin', test_string);
  // A malformed list is a 400 before the test string is looked at: the same proof then still works.
  const bad = await peer.request('auth_ssl', { signature, keys: { md5_keys: 'not a list' } });
  assert.equal((bad.args as { code: number }).code, 400);
  const since = peer.received.length;
  const reply = await peer.request('auth_ssl', { signature, keys: { md5_keys: [md5Of(key)], reach: ['somehost'] } });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  await peer.nextAnnouncement(since);
  assert.ok(!peer.bridgeRequests.some((r) => r.id === 'bridge_request_list_keys'), 'no list_ssl_checksums request');
  assert.equal((await bridge.metrics()).signin_failures, 0);
});
