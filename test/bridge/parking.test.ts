/**
 * Parked sockets on the Node bridge (docs/bridge-protocol.md §2, "Parked sockets"; runtime/node/parking.ts):
 * a signed-in peer quiet for `parkQuietSeconds` loses its `ws` objects until its next byte. Whatever
 * is parked, a peer must see no difference: relayed frames in both directions, frames split across
 * the wake, the frame size limit, heartbeats, silent peers and disconnects all behave as when awake.
 * The metrics' `parking` counts show that parking happens (it must not silently stop).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519Key, rsaKey } from '../helpers/keys.ts';
import { loopbackCertificate } from '../helpers/tls.ts';
import { nodeOnly, startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, signedInPeer, TestPeer } from './peers.ts';

const NODE_ONLY = { skip: nodeOnly('parking is how the Node bridge keeps idle sockets small; a Durable Object hibernates') };

/** A client and an agent that accepts its key, signed in and matched, with each other's connection ids. */
async function matched(t: TestContext, bridge: TestBridge, ca?: string) {
  const clientKey = rsaKey();
  const { peer: agent } = await signedInPeer(bridge, 'server', ed25519Key(), { md5Keys: [md5Of(clientKey)], nickname: 'web-1', ...(ca ? { ca } : {}) });
  t.after(() => agent.close());
  const { peer: client } = await signedInPeer(bridge, 'client', clientKey, { nickname: 'alice', ...(ca ? { ca } : {}) });
  t.after(() => client.close());
  const agentId = (await client.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  const clientId = (await agent.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  return { agent, client, agentId, clientId };
}

/** Past the quiet period, then the sweep (which parks): both peers' sockets are parked. */
async function parkAll(bridge: TestBridge, expected: number): Promise<void> {
  await bridge.clock.advance(6);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).parking.parked, expected, 'every quiet signed-in socket is parked');
}

const rawSocket = (peer: TestPeer) => (peer.ws as unknown as { _socket: Socket })._socket;

/** A client-to-server frame (masked, RFC 6455 §5.2) carrying `payload` as one text frame. */
function maskedFrame(payload: Buffer, opcode = 0x1): Buffer {
  const length = payload.length;
  const header = length < 126 ? Buffer.from([0x80 | opcode, 0x80 | length]) : Buffer.alloc(length < 65536 ? 4 : 10);
  if (length >= 126 && length < 65536) {
    header[0] = 0x80 | opcode;
    header[1] = 0x80 | 126;
    header.writeUInt16BE(length, 2);
  } else if (length >= 65536) {
    header[0] = 0x80 | opcode;
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i % 4]!;
  return Buffer.concat([header, mask, body]);
}

test('a parked agent receives a relayed request and its reply reaches the client; both park again once quiet', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client, agentId, clientId } = await matched(t, bridge);
  await parkAll(bridge, 2);
  const before = (await bridge.metrics()).parking;

  const request = agent.nextFrame();
  client.ws.send(`${agentId}\n{"id":"q-1","name":"status"}`);
  assert.equal(await request, `${clientId}\n{"id":"q-1","name":"status"}`);
  const reply = client.nextFrame();
  agent.ws.send(`${clientId}\n{"id":"q-1","name":"response","args":{"ok":true}}`);
  assert.equal(await reply, `${agentId}\n{"id":"q-1","name":"response","args":{"ok":true}}`);

  const woken = (await bridge.metrics()).parking;
  assert.equal(woken.parked, 0, 'both woke: the client by its frame, the agent by the frame for it');
  assert.equal(woken.wakes - before.wakes, 2);
  assert.equal((await bridge.metrics()).frames_relayed, 2);
  await parkAll(bridge, 2);
  assert.equal((await bridge.metrics()).parking.parks, before.parks + 2);
});

test('a frame split across the wake arrives whole; an oversized one from a parked peer is refused (1009, too-large) as when awake', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client, agentId, clientId } = await matched(t, bridge);
  await parkAll(bridge, 2);

  // 100 KB: a 64-bit length, so the first read holds only part of the header.
  const body = 'x'.repeat(100_000);
  const frame = maskedFrame(Buffer.from(`${clientId}\n${body}`));
  const arrived = client.nextFrame();
  const socket = rawSocket(agent);
  socket.write(frame.subarray(0, 3));
  await until(async () => (await bridge.metrics()).parking.wakes === 1, 'the first bytes to wake the agent');
  socket.write(frame.subarray(3, 5000));
  await new Promise((r) => setTimeout(r, 20));
  socket.write(frame.subarray(5000));
  assert.equal(await arrived, `${agentId}\n${body}`);

  await parkAll(bridge, 2);
  const closed = agent.closed;
  // A header announcing more than the limit (4 MiB + 128): refused from the header, before any payload.
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(8 * 1024 * 1024), 2);
  socket.write(header);
  assert.equal((await closed).code, 1009);
  const m = await bridge.metrics();
  assert.equal(m.drops['too-large'], 1);
  assert.equal(m.closes['1009'], 1);
  await until(async () => (await bridge.metrics()).connections.agent === 0, 'the agent to be gone');
});

test('a parked peer that disconnects is removed once: by a reset, and by a half-close without a close frame', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client } = await matched(t, bridge);
  const { peer: second } = await signedInPeer(bridge, 'server', ed25519Key(), { nickname: 'db-1' });
  t.after(() => second.close());
  await parkAll(bridge, 3);
  const since = client.received.length;

  rawSocket(agent).resetAndDestroy();
  await client.nextAnnouncement(since, (a) => a.available_connections.length === 0);
  await until(async () => (await bridge.metrics()).connections.agent === 1, 'the first agent to be forgotten');
  rawSocket(second).end();
  await until(async () => (await bridge.metrics()).connections.agent === 0, 'the second agent to be forgotten');
  await second.closed;

  const m = await bridge.metrics();
  assert.deepEqual(m.connections, { agent: 0, client: 1, pending: 0 }, 'each counted out once');
  assert.equal(m.parking.parked, 0, 'the client woke to be told its agent left');
  assert.equal(m.parking.wakes, 1, 'the client alone: a parked socket that goes is not woken for it');
  assert.equal((await client.request('identify', '')).name, 'response');
});

test('heartbeats keep a parked peer parked and alive; a silent parked peer is still closed (4000); its own pings are answered', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client } = await matched(t, bridge);
  await parkAll(bridge, 2);
  let pings = 0;
  client.ws.on('ping', () => pings++);
  // The agent stops reading: it neither sees the pings nor answers them.
  rawSocket(agent).pause();

  const pong = new Promise<Buffer>((resolve) => client.ws.once('pong', resolve));
  client.ws.ping();
  assert.equal((await pong).length, 0, "the client's heartbeat is answered while parked");

  await bridge.clock.advance(20);
  await bridge.sweep();
  await until(async () => pings === 1 && (await bridge.metrics()).pongs === 1, 'the client to be pinged and answer');
  assert.equal((await bridge.metrics()).parking.wakes, 0, 'pings and pongs do not wake a parked socket');
  await bridge.clock.advance(20);
  await bridge.sweep();
  await until(async () => pings === 2 && (await bridge.metrics()).pongs === 2, 'the second ping and pong');
  await bridge.clock.advance(15);
  await bridge.sweep();

  const m = await bridge.metrics();
  assert.equal(m.closes['4000'], 1, 'the agent sent nothing for 60 s');
  assert.deepEqual(m.connections, { agent: 0, client: 1, pending: 0 });
  assert.equal(m.parking.wakes, 2, 'the agent woke to be closed, and then the client to be told it left');
});

test('a peer that has not signed in is never parked', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const pending = await TestPeer.connect(bridge.url, 'server');
  t.after(() => pending.close());
  await until(async () => (await bridge.metrics()).connections.agent === 1, 'the peer to identify');
  await bridge.clock.advance(6);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).parking.parks, 0);
  assert.equal((await pending.request('identify', '')).name, 'response');
});

test('over TLS (wss): parked peers wake for relayed frames both ways, heartbeats leave them parked, and they park again', NODE_ONLY, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-parking-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { certFile, keyFile, certPem } = loopbackCertificate(dir);
  const bridge = await startTestBridge(t, { tls: { certFile, keyFile } });
  assert.match(bridge.url, /^wss:/);
  const { agent, client, agentId, clientId } = await matched(t, bridge, certPem);
  await parkAll(bridge, 2);

  // Heartbeats (the bridge's ping, the client's own) are answered under TLS without waking anyone.
  const pong = new Promise<Buffer>((resolve) => client.ws.once('pong', resolve));
  client.ws.ping();
  assert.equal((await pong).length, 0);
  await bridge.clock.advance(20);
  await bridge.sweep();
  await until(async () => (await bridge.metrics()).pongs === 2, 'both peers to answer the ping');
  assert.equal((await bridge.metrics()).parking.wakes, 0);

  // A frame split across records wakes the agent's side whole; the reply wakes the client's.
  const body = 'y'.repeat(40_000);
  const request = agent.nextFrame();
  client.ws.send(`${agentId}\n${body}`);
  assert.equal(await request, `${clientId}\n${body}`);
  const reply = client.nextFrame();
  agent.ws.send(`${clientId}\n{"ok":true}`);
  assert.equal(await reply, `${agentId}\n{"ok":true}`);
  const woken = (await bridge.metrics()).parking;
  assert.equal(woken.parked, 0);
  assert.equal(woken.wakes, 2);
  await parkAll(bridge, 2);
});
