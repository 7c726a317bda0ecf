/**
 * A signed-in peer's frames on the Node bridge's relay path (runtime/node/frame-reader.ts reads plain
 * relay frames itself; `ws` everything else), seen from the peers: bursts of frames in one write and
 * frames cut across writes arrive whole and in order; a frame the bridge must refuse in the middle of a
 * burst (invalid UTF-8, unmasked, a 64-bit length over the bound, an unknown opcode, an oversized ping)
 * closes its sender with the RFC 6455 code after the frames before it were relayed, and nothing after
 * it is; the receiving peer never gets a frame its own WebSocket would refuse (it stays open). What
 * `ws` itself would do with the same bytes is bridge/src/runtime/node/frame-reader.test.ts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { ed25519Key, rsaKey } from '../helpers/keys.ts';
import { nodeOnly, startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, signedInPeer, type TestPeer } from './peers.ts';

const NODE_ONLY = { skip: nodeOnly("the frame reader is the Node runtime's; workerd parses the frames of a Durable Object's sockets") };

async function matched(t: TestContext, bridge: TestBridge) {
  const clientKey = rsaKey();
  const { peer: agent } = await signedInPeer(bridge, 'server', ed25519Key(), { md5Keys: [md5Of(clientKey)], nickname: 'web-1' });
  t.after(() => agent.close());
  const { peer: client } = await signedInPeer(bridge, 'client', clientKey, { nickname: 'alice' });
  t.after(() => client.close());
  const agentId = (await client.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  const clientId = (await agent.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  return { agent, client, agentId, clientId };
}

const rawSocket = (peer: TestPeer) => (peer.ws as unknown as { _socket: Socket })._socket;

/** A client frame (masked unless told), final unless told, with the shortest length field unless `length64` claims one. */
function clientFrame(payload: Buffer, options: { opcode?: number; masked?: boolean; length64?: bigint } = {}): Buffer {
  const { opcode = 1, masked = true } = options;
  const length = payload.length;
  const maskBit = masked ? 0x80 : 0;
  let header: Buffer;
  if (options.length64 !== undefined) {
    header = Buffer.alloc(10);
    header[1] = maskBit | 127;
    header.writeBigUInt64BE(options.length64, 2);
  } else if (length < 126) header = Buffer.from([0, maskBit | length]);
  else {
    header = Buffer.alloc(4);
    header[1] = maskBit | 126;
    header.writeUInt16BE(length, 2);
  }
  header[0] = 0x80 | opcode;
  if (!masked) return Buffer.concat([header, payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i % 4]!;
  return Buffer.concat([header, mask, body]);
}

/** Relay frames for `dest`, text and binary, some with non-ASCII text, some over 125 bytes. */
function burst(dest: string, from: number, n: number): { bytes: Buffer; expected: Array<{ frame: string; binary: boolean }> } {
  const frames: Buffer[] = [];
  const expected: Array<{ frame: string; binary: boolean }> = [];
  for (let i = from; i < from + n; i++) {
    const body = i % 3 === 0 ? `{"i":${i},"text":"${'é'.repeat(i % 50)}"}` : i % 3 === 1 ? `{"i":${i},"pad":"${'x'.repeat(200)}"}` : `bin-${i}`;
    const binary = i % 3 === 2;
    frames.push(clientFrame(Buffer.from(`${dest}\n${body}`), { opcode: binary ? 2 : 1 }));
    expected.push({ frame: `${'%SENDER%'}\n${body}`, binary });
  }
  return { bytes: Buffer.concat(frames), expected };
}

const relayed = (peer: TestPeer) => peer.received.filter((m): m is { frame: string; binary: boolean } => 'frame' in m);

test('a burst in one write and a burst cut into one-byte writes arrive whole, in order, text and binary', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client, agentId, clientId } = await matched(t, bridge);
  const socket = rawSocket(client);
  const one = burst(agentId, 0, 60);
  socket.write(one.bytes);
  const cut = burst(agentId, 60, 6);
  for (let i = 0; i < cut.bytes.length; i++) socket.write(cut.bytes.subarray(i, i + 1));
  const expected = [...one.expected, ...cut.expected].map((e) => ({ ...e, frame: e.frame.replace('%SENDER%', clientId) }));
  await until(async () => relayed(agent).length >= expected.length, 'every frame to reach the agent');
  assert.deepEqual(relayed(agent), expected);
  assert.equal((await bridge.metrics()).frames_relayed, expected.length);
  assert.equal(agent.ws.readyState, WebSocket.OPEN);
  assert.equal(client.ws.readyState, WebSocket.OPEN);
});

test(
  'a frame the bridge must refuse in the middle of a burst: the frames before it are relayed, its sender is closed with its code, nothing after it goes on',
  NODE_ONLY,
  async (t) => {
    const attacks: Array<[string, (dest: string) => Buffer, number]> = [
      ['invalid UTF-8', (dest) => clientFrame(Buffer.concat([Buffer.from(`${dest}\n`), Buffer.from([0xc3, 0x28, 0x41])])), 1007],
      [
        'invalid UTF-8 in a long frame',
        (dest) => clientFrame(Buffer.concat([Buffer.from(`${dest}\n${'a'.repeat(600)}`), Buffer.from([0xed, 0xa0, 0x80])])),
        1007,
      ],
      ['unmasked', (dest) => clientFrame(Buffer.from(`${dest}\nplain`), { masked: false }), 1002],
      ['a 64-bit length over the bound', () => clientFrame(Buffer.alloc(0), { length64: 1n << 40n }), 1009],
      ['a 64-bit length of 2^64 - 1', () => clientFrame(Buffer.alloc(0), { length64: (1n << 64n) - 1n }), 1009],
      ['an unknown opcode', (dest) => clientFrame(Buffer.from(`${dest}\nx`), { opcode: 3 }), 1002],
      ['a ping over 125 bytes', () => clientFrame(Buffer.alloc(126), { opcode: 9 }), 1002],
    ];
    for (const [name, attack, code] of attacks) {
      await t.test(name, async (st) => {
        const bridge = await startTestBridge(st);
        const { agent, client, agentId, clientId } = await matched(st, bridge);
        const before = burst(agentId, 0, 20);
        const after = burst(agentId, 20, 5);
        rawSocket(client).write(Buffer.concat([before.bytes, attack(agentId), after.bytes]));
        assert.equal((await client.closed).code, code);
        await until(async () => (await bridge.metrics()).connections.client === 0, 'the client to be gone');
        assert.deepEqual(
          relayed(agent),
          before.expected.map((e) => ({ ...e, frame: e.frame.replace('%SENDER%', clientId) })),
        );
        assert.equal(agent.ws.readyState, WebSocket.OPEN, 'the agent got nothing its WebSocket refuses');
        if (code === 1009) assert.equal((await bridge.metrics()).drops['too-large'], 1);
      });
    }
  },
);

test('a frame cut across writes, then a burst: the cut frame and the burst arrive whole; an oversized 16-bit frame is refused (1009)', NODE_ONLY, async (t) => {
  const bridge = await startTestBridge(t, { config: { maxFrameBytes: 2048 } });
  const { agent, client, agentId, clientId } = await matched(t, bridge);
  const socket = rawSocket(client);
  const big = clientFrame(Buffer.from(`${agentId}\n${'z'.repeat(1500)}`));
  const tail = burst(agentId, 0, 10);
  socket.write(big.subarray(0, 700));
  await new Promise((r) => setTimeout(r, 20));
  socket.write(Buffer.concat([big.subarray(700), tail.bytes]));
  const expected = [
    { frame: `${clientId}\n${'z'.repeat(1500)}`, binary: false },
    ...tail.expected.map((e) => ({ ...e, frame: e.frame.replace('%SENDER%', clientId) })),
  ];
  await until(async () => relayed(agent).length >= expected.length, 'every frame to reach the agent');
  assert.deepEqual(relayed(agent), expected);

  socket.write(clientFrame(Buffer.from(`${agentId}\n${'o'.repeat(2100)}`)));
  assert.equal((await client.closed).code, 1009);
  assert.equal((await bridge.metrics()).drops['too-large'], 1);
  assert.equal(relayed(agent).length, expected.length);
});
