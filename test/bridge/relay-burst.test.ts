/**
 * Bursts through the relay (docs/bridge-protocol.md §2.7, write coalescing): many frames arriving in
 * one TCP read at the bridge, which the Node bridge sends on with one write per destination. Each
 * burst here leaves its sender as ONE write (the sender's socket corked around it), so the bridge
 * reads many frames at once. Whatever the bridge batches, every frame must arrive whole and in order
 * per destination, a full queue must still drop by reason without touching other destinations, and
 * a socket that closes mid-burst must neither crash the bridge nor leave anything behind.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type WebSocket from 'ws';
import { ed25519Key, rsaKey } from '../helpers/keys.ts';
import { nodeOnly, startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, signedInPeer, type TestPeer } from './peers.ts';

type Frame = { to: string; body: string; binary?: boolean };

/** A client and two agents (web-1, db-1) that both accept its key, signed in and matched. */
async function fanOut(t: TestContext, bridge: TestBridge) {
  const clientKey = rsaKey();
  const agents: Array<{ peer: TestPeer; id: string; clientId: string }> = [];
  for (const nickname of ['web-1', 'db-1']) {
    const { peer } = await signedInPeer(bridge, 'server', ed25519Key(), { md5Keys: [md5Of(clientKey)], nickname });
    t.after(() => peer.close());
    agents.push({ peer, id: '', clientId: '' });
  }
  const { peer: client } = await signedInPeer(bridge, 'client', clientKey, { nickname: 'alice' });
  t.after(() => client.close());
  const offer = await client.nextAnnouncement(0, (a) => a.available_connections.length === 2);
  for (const agent of agents) {
    agent.id = offer.peers.find((p) => p.nickname === (agent === agents[0] ? 'web-1' : 'db-1'))!.id;
    agent.clientId = (await agent.peer.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  }
  const [web, db] = agents as [(typeof agents)[0], (typeof agents)[0]];
  return { client, web, db, clientKey };
}

/** Sends `frames` as one write of the sender's socket: the bridge reads them together. */
function burst(ws: WebSocket, frames: Frame[]): void {
  const socket = (ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
  socket.cork();
  for (const f of frames) ws.send(f.binary ? Buffer.from(`${f.to}\n${f.body}`) : `${f.to}\n${f.body}`, { binary: f.binary === true });
  socket.uncork();
}

/** The relay frames `peer` received after `since`, as text with whether each came binary. */
function framesOf(peer: TestPeer, since = 0): Array<{ frame: string; binary: boolean }> {
  return peer.received.slice(since).filter((m): m is { frame: string; binary: boolean } => 'frame' in m);
}

const droppedCount = (peer: TestPeer, reason: string) =>
  peer.received.filter((m) => 'env' in m && JSON.stringify(m.env.args).includes(`"reason":"${reason}"`)).length;

/** A frame body carrying its sequence number, `size` characters long. */
const body = (seq: number, size: number) => `#${String(seq).padStart(6, '0')} ${'b'.repeat(Math.max(0, size - 8))}`;
const seqOf = (frame: string) => Number(/\n#(\d{6}) /.exec(frame)?.[1] ?? NaN);

test('a burst of frames to one destination arrives complete and in order (text and binary, small and over 8 KiB)', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, web } = await fanOut(t, bridge);
  const frames: Frame[] = [];
  for (let seq = 0; seq < 300; seq++) {
    const size = seq % 50 === 7 ? 9000 : seq % 13 === 0 ? 1 : 200;
    frames.push({ to: web.id, body: body(seq, size), binary: seq % 5 === 3 });
  }
  burst(client.ws, frames.slice(0, 150));
  burst(client.ws, frames.slice(150));
  await until(() => framesOf(web.peer).length >= frames.length, 'every frame of the burst');
  assert.deepEqual(
    framesOf(web.peer),
    frames.map((f) => ({ frame: `${web.clientId}\n${f.body}`, binary: f.binary === true })),
  );
  const m = await bridge.metrics();
  assert.equal(m.frames_relayed, frames.length);
  assert.equal(
    Object.values(m.drops).reduce((a, b) => a + b, 0),
    0,
  );
});

test('frames to two destinations interleaved in one burst keep each destination’s order', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, web, db } = await fanOut(t, bridge);
  const frames: Frame[] = [];
  // A fixed irregular pattern (runs of one destination, then the other, then alternating).
  for (let seq = 0; seq < 400; seq++) frames.push({ to: (seq * 7) % 11 < 5 ? web.id : db.id, body: body(seq, seq % 40 === 0 ? 10_000 : 150) });
  burst(client.ws, frames);
  for (const agent of [web, db]) {
    const expected = frames.filter((f) => f.to === agent.id).map((f) => `${agent.clientId}\n${f.body}`);
    await until(() => framesOf(agent.peer).length >= expected.length, `the frames for ${agent.id}`);
    assert.deepEqual(
      framesOf(agent.peer).map((f) => f.frame),
      expected,
    );
  }
  // And back: both agents burst to the client at once; each agent's frames stay in its order.
  const since = client.received.length;
  for (const agent of [web, db])
    burst(
      agent.peer.ws,
      [...Array(100).keys()].map((seq) => ({ to: agent.clientId, body: body(seq, 300) })),
    );
  await until(() => framesOf(client, since).length >= 200, 'the replies');
  for (const agent of [web, db]) {
    const seqs = framesOf(client, since)
      .filter((f) => f.frame.startsWith(`${agent.id}\n`))
      .map((f) => seqOf(f.frame));
    assert.deepEqual(seqs, [...Array(100).keys()]);
  }
});

test('a destination over its queue bound: its frames are dropped as queue-full and counted, the other destination gets all of its own', {
  skip: nodeOnly('Workers sockets expose no bufferedAmount; the runtime applies back-pressure'),
}, async (t) => {
  const bridge = await startTestBridge(t, { config: { maxQueueBytes: 256 * 1024 } });
  const { client, web, db } = await fanOut(t, bridge);
  // web stops reading: kernel buffers fill, then the bridge's queue for it.
  (web.peer.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
  const sent: Frame[] = [];
  let seq = 0;
  const oneBurst = () => {
    const frames: Frame[] = [];
    for (let i = 0; i < 8; i++) {
      frames.push({ to: web.id, body: body(seq++, 64 * 1024) });
      frames.push({ to: db.id, body: body(seq++, 100) });
    }
    sent.push(...frames);
    burst(client.ws, frames);
  };
  const handled = async () => {
    const m = await bridge.metrics();
    return m.frames_relayed + m.drops['queue-full'] >= sent.length;
  };
  for (let n = 0; n < 400 && (await bridge.metrics()).drops['queue-full'] === 0; n++) {
    oneBurst();
    await until(handled, 'the bridge to handle the burst');
  }
  oneBurst(); // one more, entirely while web is over the bound
  await until(handled, 'the bridge to handle the last burst');

  const m = await bridge.metrics();
  const toWeb = sent.filter((f) => f.to === web.id);
  const toDb = sent.filter((f) => f.to === db.id);
  assert.ok(m.drops['queue-full'] >= 8, 'the last burst to web was dropped');
  assert.deepEqual(m.drops, { 'unknown-destination': 0, 'not-permitted': 0, 'queue-full': m.drops['queue-full'], 'too-large': 0, malformed: 0 });
  assert.equal(m.frames_relayed, toDb.length + toWeb.length - m.drops['queue-full']);
  // The sender is told of each drop; db got every frame meant for it, in order.
  await until(() => droppedCount(client, 'queue-full') === m.drops['queue-full'], 'a drop notice per dropped frame');
  await until(() => framesOf(db.peer).length >= toDb.length, "db's frames");
  assert.deepEqual(
    framesOf(db.peer).map((f) => seqOf(f.frame)),
    toDb.map((f) => seqOf(`\n${f.body}`)),
  );
  // web reads again: it gets exactly the frames that were not dropped, in order and whole.
  (web.peer.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  const delivered = toWeb.length - m.drops['queue-full'];
  await until(() => framesOf(web.peer).length >= delivered, "web's queued frames");
  const got = framesOf(web.peer).map((f) => f.frame);
  assert.equal(got.length, delivered);
  assert.ok(
    got.every((f, i) => f.length === web.clientId.length + 1 + 64 * 1024 && (i === 0 || seqOf(f) > seqOf(got[i - 1]!))),
    'whole frames in order',
  );
});

test('a sender closed mid-burst (a frame over the limit): the frames before it arrive, none after, and the bridge goes on', async (t) => {
  const bridge = await startTestBridge(t, { config: { maxFrameBytes: 64 * 1024 } });
  const { client, web, db, clientKey } = await fanOut(t, bridge);
  const ghost = 'agent-00000000-0000-4000-8000-000000000000';
  const before: Frame[] = [...Array(20).keys()].map((seq) => ({ to: seq % 2 ? web.id : db.id, body: body(seq, 200) }));
  // The drop notice for the ghost is written to the sender's socket in the same read that closes it.
  burst(client.ws, [...before, { to: ghost, body: 'x' }, { to: web.id, body: 'y'.repeat(70 * 1024) }, { to: web.id, body: body(99, 200) }]);
  assert.equal((await client.closed).code, 1009);
  assert.equal(droppedCount(client, 'unknown-destination'), 1, 'the drop notice left before the close');
  for (const agent of [web, db]) {
    const expected = before.filter((f) => f.to === agent.id).map((f) => `${agent.clientId}\n${f.body}`);
    await until(() => framesOf(agent.peer).length >= expected.length, `the frames for ${agent.id}`);
    assert.deepEqual(
      framesOf(agent.peer).map((f) => f.frame),
      expected,
    );
  }
  await until(async () => (await bridge.metrics()).connections.client === 0, 'the client gone');
  const m = await bridge.metrics();
  assert.equal(m.frames_relayed, before.length, 'nothing after the oversized frame');
  assert.equal(m.drops['too-large'], 1);
  // The bridge relays for the next connection of that client as before.
  const { peer: next, announcement } = await signedInPeer(bridge, 'client', clientKey, { enroll: false });
  t.after(() => next.close());
  assert.ok(announcement.available_connections.includes(web.id));
  burst(next.ws, [{ to: web.id, body: body(1, 100) }]);
  await until(() => framesOf(web.peer).some((f) => f.frame.endsWith(`\n${body(1, 100)}`) && !f.frame.startsWith(web.clientId)), 'a frame from the next client');
});

test('a destination that goes away mid-burst: the bridge neither crashes nor loses count, and the other destination is unaffected', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, web, db } = await fanOut(t, bridge);
  const sent: Frame[] = [];
  const send = (n: number) => {
    const frames = [...Array(n).keys()].map((i) => ({ to: i % 2 ? web.id : db.id, body: body(sent.length + i, 2000) }));
    sent.push(...frames);
    burst(client.ws, frames);
  };
  send(100);
  await until(() => framesOf(web.peer).length > 0, 'web receiving');
  web.peer.ws.terminate(); // gone without a close handshake, while frames for it are in flight
  for (let i = 0; i < 5; i++) send(100);
  await until(async () => (await bridge.metrics()).connections.agent === 1, 'web gone');
  send(100); // web is known to be gone now: these are unknown-destination for certain
  const toDb = sent.filter((f) => f.to === db.id);
  await until(() => framesOf(db.peer).length >= toDb.length, "db's frames");
  assert.deepEqual(
    framesOf(db.peer).map((f) => seqOf(f.frame)),
    toDb.map((f) => seqOf(`\n${f.body}`)),
  );
  // Every frame is accounted for: relayed (some into web's dying socket) or dropped as unknown-destination.
  await until(async () => {
    const m = await bridge.metrics();
    return m.frames_relayed + m.drops['unknown-destination'] === sent.length;
  }, 'every frame relayed or dropped');
  const m = await bridge.metrics();
  assert.ok(m.drops['unknown-destination'] >= 50, 'the burst sent after web was gone');
  assert.deepEqual(m.drops, { 'unknown-destination': m.drops['unknown-destination'], 'not-permitted': 0, 'queue-full': 0, 'too-large': 0, malformed: 0 });
  await until(() => droppedCount(client, 'unknown-destination') === m.drops['unknown-destination'], 'a drop notice per drop');
  // The bridge goes on relaying to db.
  burst(client.ws, [{ to: db.id, body: body(999_999, 10) }]);
  await until(() => framesOf(db.peer).some((f) => seqOf(f.frame) === 999_999), 'a frame after the burst');
});
