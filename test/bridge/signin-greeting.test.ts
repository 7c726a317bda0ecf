/**
 * The bridge's greeting (docs/bridge-protocol.md §2.3), on either runtime: every new socket gets a
 * sign-in test string before identify, so a peer holding a ticket (or a key) signs in with one request,
 * stage 2. The test string is this connection's, random, used once and good for 30 s, as stage 1's;
 * stage 1 still works and replaces it; a bridge configured without it sends none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bridgeTicketProof, type BridgeSignInTicket, type BridgeTicketGrant } from '@hostadm/shared/crypto/bridge-ticket.ts';
import { ed25519Key, rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { BRIDGE_RUNTIME, startTestBridge, type TestBridge } from './helpers.ts';
import { md5Of, TestPeer, type Envelope } from './peers.ts';

const unauthorized = { code: 401, message: 'Unauthorized' };

/** The greeting's test string: the first frame the peer got, before the identify request. */
function greetingOf(peer: TestPeer): string {
  const first = peer.received[0];
  assert.ok(first && 'env' in first, 'the first frame is an envelope');
  assert.equal(first.env.name, 'event');
  const event = first.env.args as { name: string; args: { test_string: string; expires_in: number } };
  assert.equal(event.name, 'bridge_greeting');
  assert.match(event.args.test_string, /^[A-Za-z0-9]{32}$/);
  assert.equal(event.args.expires_in, 30);
  const second = peer.received[1];
  assert.ok(second && 'env' in second && second.env.id === 'bridge_request_ident', 'identify follows the greeting');
  return event.args.test_string;
}

/** How many of the peer's calls the bridge has answered so far. */
function replies(peer: TestPeer): number {
  return peer.received.filter((m) => 'env' in m && (m.env.name === 'response' || m.env.name === 'error')).length;
}

async function enrolled(bridge: TestBridge, type: 'server' | 'client', key: TestKey, nickname?: string): Promise<TestPeer> {
  const peer = await TestPeer.connect(bridge.url, type, [md5Of(key)]);
  const reply = await peer.enroll(await bridge.token(type === 'server' ? 'agent' : 'client', { nickname }), key);
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return peer;
}

/** A key proof over the greeting (naming its md5_key) that asks for a ticket; the ticket as a client keeps it. */
async function ticketFromGreeting(peer: TestPeer, key: TestKey): Promise<BridgeSignInTicket> {
  const signature = signatureProof(key, 'bridge-signin', greetingOf(peer));
  const reply = await peer.request('auth_ssl', { signature, md5_key: md5Of(key), want_ticket: true });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const grant = (reply.args as [string, number, BridgeTicketGrant])[2];
  return { ticket: grant.ticket, secret: grant.secret, md5Key: md5Of(key), bridge: '', expiresAt: Date.now() + grant.expires_in * 1000 };
}

async function ticketProof(ticket: BridgeSignInTicket, testString: string): Promise<{ ticket: string; mac: string }> {
  return { ticket: ticket.ticket, mac: await bridgeTicketProof(ticket, testString) };
}

test('a ticket signs in with one request: stage 2 over the greeting, no stage 1', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  t.after(() => first.close());
  const ticket = await ticketFromGreeting(first, key);

  const peer = await TestPeer.connect(bridge.url, 'client', [md5Of(key)]);
  t.after(() => peer.close());
  assert.equal(replies(peer), 0);
  const since = peer.received.length;
  const reply = await peer.request('auth_ssl', { ...(await ticketProof(ticket, greetingOf(peer))), keys: { md5_keys: [md5Of(key)] } });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  assert.equal(replies(peer), 1, 'the bridge answered one request: the sign-in');
  await peer.nextAnnouncement(since);
  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signins_by_ticket, m.signin_failures], [2, 1, 0]);
});

test('a key proof over the greeting: pinned by its md5_key (another key named is refused), or unpinned as the spec has it', async (t) => {
  const bridge = await startTestBridge(t);
  const agentKey = ed25519Key();
  const other = ed25519Key();
  const agent = await enrolled(bridge, 'server', agentKey);
  t.after(() => agent.close());
  const reply = await agent.request('auth_ssl', { signature: signatureProof(agentKey, 'bridge-signin', greetingOf(agent)), md5_key: md5Of(agentKey) });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));

  const otherPeer = await enrolled(bridge, 'server', other, 'other-host');
  t.after(() => otherPeer.close());
  const named = await otherPeer.request('auth_ssl', { signature: signatureProof(other, 'bridge-signin', greetingOf(otherPeer)), md5_key: md5Of(agentKey) });
  assert.deepEqual(named.args, unauthorized, 'a proof by one key naming another');
  const malformed = await otherPeer.request('auth_ssl', { signature: 'AAAA', md5_key: 7 });
  assert.equal((malformed.args as { code: number }).code, 400);

  const client = rsaKey();
  const unpinned = await enrolled(bridge, 'client', client);
  t.after(() => unpinned.close());
  const plain = await unpinned.request('auth_ssl', { signature: signatureProof(client, 'bridge-signin', greetingOf(unpinned)) });
  assert.equal(plain.name, 'response', JSON.stringify(plain.args));
  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signin_failures], [2, 1]);
});

test("a stage 2 over one connection's greeting is refused on another, and on its own once the test string was used", async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const first = await enrolled(bridge, 'client', key);
  t.after(() => first.close());
  const ticket = await ticketFromGreeting(first, key);

  const victim = await TestPeer.connect(bridge.url, 'client');
  t.after(() => victim.close());
  const proof = await ticketProof(ticket, greetingOf(victim));
  // Seen on the wire (without the ticket's secret) and sent first on the attacker's own connection.
  const attacker = await TestPeer.connect(bridge.url, 'client');
  t.after(() => attacker.close());
  assert.notEqual(greetingOf(attacker), greetingOf(victim), 'each connection its own test string');
  assert.deepEqual((await attacker.request('auth_ssl', proof)).args, unauthorized, 'bound to the connection');

  // On the victim's connection, a first stage 2 spends the greeting, whatever its outcome.
  assert.deepEqual((await victim.request('auth_ssl', { ...proof, mac: Buffer.alloc(32).toString('base64') })).args, unauthorized);
  assert.deepEqual((await victim.request('auth_ssl', proof)).args, unauthorized, 'used once');
  const m = await bridge.metrics();
  assert.deepEqual([m.signins_by_ticket, m.signin_failures], [0, 3]);
});

test("the greeting's test string expires after 30 s; stage 1 then gives a fresh one on the same connection", async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const peer = await enrolled(bridge, 'client', key);
  t.after(() => peer.close());
  const greeting = greetingOf(peer);
  await bridge.clock.advance(31);
  const late = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', greeting), md5_key: md5Of(key) });
  assert.deepEqual(late.args, unauthorized);
  const stage1 = await peer.request('auth_ssl', { action: 'auth_ssl', md5_key: md5Of(key) });
  const { test_string } = stage1.args as { test_string: string };
  const reply = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', test_string) });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
});

test('a peer that never signs in is still closed after 30 s (4001)', async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'client');
  greetingOf(peer);
  await bridge.clock.advance(30);
  await bridge.sweep();
  assert.equal((await peer.closed).code, 4001);
  assert.equal((await bridge.metrics()).closes['4001'], 1);
});

test('an old client signs in with stage 1 first, which replaces the greeting', async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const peer = await enrolled(bridge, 'client', key);
  t.after(() => peer.close());
  const greeting = greetingOf(peer);
  await peer.request('auth_ssl', '');
  const stale = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', greeting) });
  assert.deepEqual(stale.args, unauthorized, 'one test string outstanding at a time: the greeting is gone');
  assert.equal((await peer.signIn(key, true)).name, 'response', 'both stages, as before the greeting');
});

test('a bridge configured without the greeting sends identify first and signs in through stage 1', async (t) => {
  const bridge = await startTestBridge(t, { config: { signinGreeting: false } });
  const key = rsaKey();
  const peer = await enrolled(bridge, 'client', key);
  t.after(() => peer.close());
  const first = peer.received[0] as { env: Envelope };
  assert.equal(first.env.id, 'bridge_request_ident');
  assert.ok(!peer.received.some((m) => 'env' in m && (m.env.args as { name?: string } | null)?.name === 'bridge_greeting'));
  assert.deepEqual((await peer.request('auth_ssl', { signature: 'AAAA', md5_key: md5Of(key) })).args, unauthorized, 'no test string');
  assert.equal((await peer.signIn(key, true)).name, 'response');
});

test('the greeting survives the hub sleeping before stage 2 (kept in the socket attachment)', {
  skip: BRIDGE_RUNTIME === 'node' ? 'Workers bridge only: a Durable Object loses its heap between events' : false,
}, async (t) => {
  const bridge = await startTestBridge(t);
  const key = ed25519Key();
  const peer = await enrolled(bridge, 'server', key);
  t.after(() => peer.close());
  const res = await fetch(`${bridge.httpUrl}/__test/hibernate`, { method: 'POST' });
  assert.equal(res.status, 200);
  const reply = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', greetingOf(peer)), md5_key: md5Of(key) });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
});

test('a signed-in peer keeps no test string (an idle agent holds nothing more than before)', {
  skip: BRIDGE_RUNTIME === 'workers' ? 'Node bridge only: reads the in-process relay' : false,
}, async (t) => {
  const bridge = await startTestBridge(t);
  const key = ed25519Key();
  const peer = await enrolled(bridge, 'server', key);
  t.after(() => peer.close());
  const reply = await peer.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', greetingOf(peer)), md5_key: md5Of(key) });
  assert.equal(reply.name, 'response');
  const relay = bridge.node!.relay as unknown as { byId: Map<string, { challenge: string | null; challengeMd5: string }> };
  const peers = [...relay.byId.values()];
  assert.equal(peers.length, 1);
  assert.equal(peers[0]!.challenge, null);
  assert.equal(peers[0]!.challengeMd5, '');
});
