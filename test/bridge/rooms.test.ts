/**
 * Bridge conformance, rooms (docs/bridge-protocol.md §2.10), on both runtimes: an agent in its own
 * host room, a client that finds it through the directory and reaches it in that room, hosts coming
 * and going in the directory, an agent refused in another host's room and in the directory, and
 * peers of two rooms never matched. On Workers each room is an object of its own and the directory
 * learns of hosts by polling D1 (the test's sweep runs that poll); on Node it is told at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { ed25519Key, rsaKey, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, roomUrl, signedInPeer, TestPeer } from './peers.ts';

function hostRoom(key: TestKey): string {
  const pem = Buffer.from(key.pubKeyB64, 'base64').toString();
  const raw = Buffer.from(createPublicKey(pem).export({ format: 'jwk' }).x!, 'base64url');
  return `host/${createHash('sha256').update(raw).digest('base64url')}`;
}

async function agentInRoom(t: Parameters<typeof startTestBridge>[0], bridge: TestBridge, md5Keys: string[], nickname: string) {
  const key = ed25519Key();
  const { peer } = await signedInPeer(bridge, 'server', key, { md5Keys, nickname, url: roomUrl(bridge, hostRoom(key)) });
  t.after(() => peer.close());
  return { key, agent: peer, room: hostRoom(key) };
}

test('a client finds a host through the directory and reaches it in its room; the directory follows hosts coming and going', async (t) => {
  const bridge = await startTestBridge(t);
  const clientKey = rsaKey();
  const { peer: directory, announcement: first } = await signedInPeer(bridge, 'client', clientKey, { url: roomUrl(bridge, 'directory'), nickname: 'alice' });
  t.after(() => directory.close());
  assert.deepEqual(first, { available_connections: [], peers: [] });

  const web1 = await agentInRoom(t, bridge, [md5Of(clientKey)], 'web-1');
  await bridge.sweep();
  const listed = await directory.nextAnnouncement(0, (a) => a.peers.length === 1);
  const entry = listed.peers[0] as (typeof listed.peers)[0] & { room: string; access: string };
  assert.equal(entry.nickname, 'web-1');
  assert.equal(entry.room, web1.room, 'the directory says where the host is');
  assert.equal(entry.access, 'key');

  // In the host's room: the same protocol as anywhere (sign-in per socket), relaying both ways.
  const { peer: client, announcement } = await signedInPeer(bridge, 'client', clientKey, { enroll: false, url: roomUrl(bridge, entry.room) });
  t.after(() => client.close());
  assert.deepEqual(announcement.available_connections, [entry.id], 'the id the directory gave is the agent in that room');
  const atAgent = web1.agent.nextFrame();
  client.ws.send(`${entry.id}\nhello`);
  const frame = await atAgent;
  const clientId = frame.slice(0, frame.indexOf('\n'));
  const atClient = client.nextFrame();
  web1.agent.ws.send(`${clientId}\nhello back`);
  assert.equal(await atClient, `${entry.id}\nhello back`);
  // The directory relays nothing.
  const since = directory.received.length;
  directory.ws.send(`${entry.id}\nnot here`);
  assert.equal((await directory.nextDropped(since)).reason, 'unknown-destination');

  const web2 = await agentInRoom(t, bridge, [md5Of(clientKey)], 'web-2');
  await bridge.sweep();
  await directory.nextAnnouncement(0, (a) => a.peers.length === 2);
  web1.agent.close();
  await web1.agent.closed;
  await until(async () => {
    await bridge.sweep();
    const last = directory.lastAnnouncement();
    return last?.peers.length === 1 && last.peers[0]!.nickname === 'web-2';
  }, 'the directory announcing web-1 gone');
  void web2;
});

test("an agent is refused (403, closed) in another host's room and in the directory", async (t) => {
  const bridge = await startTestBridge(t);
  const owner = await agentInRoom(t, bridge, [], 'web-1');
  const intruderKey = ed25519Key();
  const intruder = await TestPeer.connect(roomUrl(bridge, owner.room), 'server');
  t.after(() => intruder.close());
  assert.equal((await intruder.enroll(await bridge.token('agent', { nickname: 'web-2' }), intruderKey)).name, 'response');
  const reply = await intruder.signIn(intruderKey, true);
  assert.equal(reply.name, 'error');
  assert.match(JSON.stringify(reply.args), /403.*relay of host SHA256:/);
  assert.equal((await intruder.closed).code, 1008);
  const inDirectory = await TestPeer.connect(roomUrl(bridge, 'directory'), 'server');
  t.after(() => inDirectory.close());
  assert.match(JSON.stringify((await inDirectory.signIn(intruderKey, true)).args), /403.*directory is for clients/);
  // Nor is a room that names no host a room.
  const res = await fetch(`${bridge.url.replace(/^ws/, 'http')}/host/not-a-fingerprint`);
  assert.equal(res.status, 404);
});

test('peers in two rooms are never matched, whatever keys they share', async (t) => {
  const bridge = await startTestBridge(t);
  const clientKey = rsaKey();
  const web1 = await agentInRoom(t, bridge, [md5Of(clientKey)], 'web-1');
  const { peer: shared, announcement } = await signedInPeer(bridge, 'client', clientKey, { nickname: 'alice' });
  t.after(() => shared.close());
  assert.deepEqual(announcement, { available_connections: [], binary_frames: true, peers: [] }, 'the shared room does not see the host in its own room');
  const { peer: inRoom, announcement: there } = await signedInPeer(bridge, 'client', clientKey, { enroll: false, url: roomUrl(bridge, web1.room) });
  t.after(() => inRoom.close());
  const since = shared.received.length;
  shared.ws.send(`${there.available_connections[0]}\nacross rooms`);
  assert.equal((await shared.nextDropped(since)).reason, 'unknown-destination');
});
