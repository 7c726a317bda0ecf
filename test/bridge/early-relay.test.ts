/**
 * Relay in the sign-in's flight (docs/bridge-protocol.md §2.3), on either runtime: the greeting says
 * the bridge holds relay frames sent behind a stage 2 until it is judged, and in a host's room the
 * destination `@host` names that room's agent. So a client's first frame to its host leaves with its
 * sign-in, one round trip earlier. Played as the attacker too: a frame behind a refused sign-in reaches
 * nobody, `@host` names nobody outside a host's room or for a key the host does not list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { ed25519Key, rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, type TestBridge } from './helpers.ts';
import { md5Of, roomUrl, signedInPeer, TestPeer } from './peers.ts';

function hostRoom(key: TestKey): string {
  const pem = Buffer.from(key.pubKeyB64, 'base64').toString();
  const raw = Buffer.from(createPublicKey(pem).export({ format: 'jwk' }).x!, 'base64url');
  return `host/${createHash('sha256').update(raw).digest('base64url')}`;
}

/** The greeting's arguments: the first frame a peer gets. */
function greeting(peer: TestPeer): { test_string: string; expires_in: number; early_relay?: boolean } {
  const first = peer.received[0];
  assert.ok(first && 'env' in first && first.env.name === 'event', 'the greeting comes first');
  const event = first.env.args as { name: string; args: { test_string: string; expires_in: number; early_relay?: boolean } };
  assert.equal(event.name, 'bridge_greeting');
  return event.args;
}

/** An agent signed in to its own room, listing `clientKeys`. */
async function hostInItsRoom(t: Parameters<typeof startTestBridge>[0], bridge: TestBridge, clientKeys: TestKey[]) {
  const key = ed25519Key();
  const room = hostRoom(key);
  const { peer } = await signedInPeer(bridge, 'server', key, {
    md5Keys: clientKeys.map(md5Of),
    nickname: `host-${room.slice(5, 13)}`,
    url: roomUrl(bridge, room),
  });
  t.after(() => peer.close());
  return { agent: peer, room };
}

/** A client key enrolled at the bridge (through a socket of its own, closed after). */
async function enrolledClient(bridge: TestBridge): Promise<TestKey> {
  const key = rsaKey();
  const peer = await TestPeer.connect(bridge.url, 'client');
  try {
    assert.equal((await peer.enroll(await bridge.token('client'), key)).name, 'response');
  } finally {
    peer.close();
  }
  return key;
}

/** A bridge, a client key enrolled there, its host in its own room listing it, and a client socket in that room. */
async function clientInHostRoom(t: Parameters<typeof startTestBridge>[0]) {
  const bridge = await startTestBridge(t);
  const key = await enrolledClient(bridge);
  const { agent, room } = await hostInItsRoom(t, bridge, [key]);
  const client = await TestPeer.connect(roomUrl(bridge, room), 'client', [md5Of(key)]);
  t.after(() => client.close());
  return { bridge, key, agent, room, client };
}

/** Stage 2 over the greeting (the key list with it) and, in the same flight, `frame`; no wait between. */
function signInWith(peer: TestPeer, key: TestKey, frame: string, proofKey: TestKey = key): void {
  const signature = signatureProof(proofKey, 'bridge-signin', greeting(peer).test_string);
  peer.send({ id: 's2', name: 'auth_ssl', namespace: 'rpc', args: { signature, md5_key: md5Of(key), keys: { md5_keys: [md5Of(key)] } } });
  peer.ws.send(frame);
}

test('a frame to @host sent right behind stage 2 waits for the sign-in and reaches the room’s agent', async (t) => {
  const { key, agent, client } = await clientInHostRoom(t);
  assert.equal(greeting(client).early_relay, true, 'the greeting says frames behind stage 2 are held');

  const atAgent = agent.nextFrame();
  signInWith(client, key, '@host\n{"early":"R1"}');
  const frame = await atAgent;
  const clientId = frame.slice(0, frame.indexOf('\n'));
  assert.match(clientId, /^client-/);
  assert.equal(frame.slice(clientId.length + 1), '{"early":"R1"}', 'the body as sent, the sender named');

  // The client saw its sign-in accepted and the host announced, and nothing dropped.
  const announcement = await client.nextAnnouncement(0);
  const reply = client.received.find((m) => 'env' in m && m.env.id === 's2');
  assert.ok(reply && 'env' in reply && reply.env.name === 'response', 'signed in');
  assert.equal(announcement.available_connections.length, 1);
  // Later frames go by the agent's id as before, and the agent's answer comes back by the client's.
  const answer = client.nextFrame();
  agent.ws.send(`${clientId}\n{"early":"RA"}`);
  assert.equal(await answer, `${announcement.available_connections[0]}\n{"early":"RA"}`);
  assert.equal(
    client.received.some((m) => 'env' in m && JSON.stringify(m.env.args).includes('dropped')),
    false,
    'no drop notice',
  );
});

test('attacker: a frame behind a refused stage 2 reaches nobody; the next signed-in client’s does', async (t) => {
  const { bridge, key, agent, room, client: intruder } = await clientInHostRoom(t);
  // It names the listed key but signs with another: refused, and its frame with it.
  const refusedAt = intruder.received.length;
  signInWith(intruder, key, '@host\n{"from":"intruder"}', rsaKey());
  const verdict = await new Promise<string>((resolve) => {
    const check = () => {
      const reply = intruder.received.slice(refusedAt).find((m) => 'env' in m && m.env.id === 's2');
      if (reply && 'env' in reply) resolve(reply.env.name);
      else setTimeout(check, 10);
    };
    check();
  });
  assert.equal(verdict, 'error', 'the forged proof is refused');
  assert.deepEqual(await intruder.nextDropped(refusedAt), { destination: '', reason: 'not-permitted' });

  // The agent's next frame is the honest client's, sent after: the intruder's never came.
  const honest = await TestPeer.connect(roomUrl(bridge, room), 'client', [md5Of(key)]);
  t.after(() => honest.close());
  const atAgent = agent.nextFrame(0);
  signInWith(honest, key, '@host\n{"from":"honest"}');
  const first = await atAgent;
  assert.equal(first.slice(first.indexOf('\n') + 1), '{"from":"honest"}');
});

test('attacker: @host names no one in the shared room, nor a host that does not list the key', async (t) => {
  const bridge = await startTestBridge(t);
  const listed = await enrolledClient(bridge);
  const stranger = await enrolledClient(bridge);
  const { room } = await hostInItsRoom(t, bridge, [listed]);

  const shared = await TestPeer.connect(bridge.url, 'client', [md5Of(listed)]);
  t.after(() => shared.close());
  signInWith(shared, listed, '@host\n{"x":1}');
  assert.deepEqual(await shared.nextDropped(0), { destination: '@host', reason: 'unknown-destination' });

  const unlisted = await TestPeer.connect(roomUrl(bridge, room), 'client', [md5Of(stranger)]);
  t.after(() => unlisted.close());
  signInWith(unlisted, stranger, '@host\n{"x":2}');
  assert.deepEqual(await unlisted.nextDropped(0), { destination: '@host', reason: 'unknown-destination' });
  assert.deepEqual((await unlisted.nextAnnouncement(0)).available_connections, [], 'the host is not announced to that key');
});
