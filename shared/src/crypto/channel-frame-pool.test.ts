/**
 * Sealed frames in reused buffers (channel-frame-pool.ts): an output that releases its frames gets
 * later frames in the same buffers, and every frame still opens as sent; a frame not yet released is
 * never written over; an output that does not release, or throws, keeps fresh buffers each.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SecureChannel } from './channel.ts';
import { POOL_BUFFER_BYTES, pooledFrames, takeFrame } from './channel-frame-pool.ts';
import { ChannelSender, type ChannelSenderOutput } from './channel-sender.ts';
import { openBinaryBody } from './channel-receiver.ts';
import { randomBytes } from './subtle.ts';
import type { ChannelVersion, SessionSecrets } from './transcript.ts';

const copy = (x: SessionSecrets) => ({ kC2a: x.kC2a.slice(), kA2c: x.kA2c.slice(), sid: x.sid.slice() });
const env = (i: number, pad = 0) => JSON.stringify({ id: String(i), name: 'query', namespace: 'rpc', args: { pad: 'x'.repeat(pad) } });

async function pair(version: ChannelVersion) {
  const s: SessionSecrets = { kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) };
  const client = await SecureChannel.create('client', copy(s), { version });
  const agent = await SecureChannel.create('agent', copy(s), { version });
  return { client, agent };
}

interface Sent {
  frame: Uint8Array;
  release: (() => void) | undefined;
}

function sending(client: SecureChannel, output: Partial<ChannelSenderOutput> & { binary: ChannelSenderOutput['binary'] }) {
  const failures: unknown[] = [];
  const sender = new ChannelSender(client, new TextEncoder().encode('agent-x\n'), {
    text: () => failures.push(new Error('a text frame')),
    failed: (cause) => failures.push(cause),
    ...output,
  });
  return { sender, failures };
}

for (const version of ['hsc2', 'hsc3'] as const) {
  test(`${version}: a releasing output gets its later frames in the buffers it gave back, each opening as sent`, async () => {
    const { client, agent } = await pair(version);
    const sent: Sent[] = [];
    const { sender, failures } = sending(client, { binary: (frame, release) => sent.push({ frame, release }), releasesFrames: true });
    const opened: string[] = [];
    const texts = Array.from({ length: 6 }, (_, i) => env(i, 100 * i));
    const buffers = new Set<ArrayBufferLike>();
    for (const text of texts) {
      sender.send(text);
      sender.flush();
      const { frame, release } = sent.shift()!;
      assert.equal(typeof release, 'function');
      buffers.add(frame.buffer);
      // As `ws` does: the frame is read (here opened) before its buffer goes back, never after.
      opened.push(...(openBinaryBody(agent, frame.subarray('agent-x\n'.length)) as string[]));
      release!();
    }
    assert.deepEqual(opened, texts);
    assert.ok(buffers.size < texts.length, `${buffers.size} buffers for ${texts.length} frames: the released ones were reused`);
    assert.deepEqual(failures, []);
  });
}

test('hsc3: a frame not yet released is never written over by later ones', async () => {
  const { client, agent } = await pair('hsc3');
  const sent: Sent[] = [];
  const { sender } = sending(client, { binary: (frame, release) => sent.push({ frame, release }), releasesFrames: true });
  for (let i = 0; i < 4; i++) {
    sender.send(env(i, 500));
    sender.flush();
  }
  const held = sent.map((s) => s.frame.slice());
  // Released only now, after every frame was sealed: each must still be what was sealed into it.
  sent.forEach((s, i) => assert.deepEqual(s.frame, held[i]));
  for (const s of sent) assert.deepEqual(openBinaryBody(agent, s.frame.subarray('agent-x\n'.length)), [env(sent.indexOf(s), 500)]);
  for (const s of sent) s.release!();
});

test('an output that does not release gets no release and a new buffer for every frame', async () => {
  const { client } = await pair('hsc3');
  const sent: Sent[] = [];
  const { sender } = sending(client, { binary: (frame, release) => sent.push({ frame, release }) });
  for (let i = 0; i < 3; i++) {
    // Over half of Buffer.poolSize (Node 24: 64 KiB): allocUnsafe carves smaller ones out of one shared slab.
    sender.send(env(i, 33_000));
    sender.flush();
  }
  assert.deepEqual(
    sent.map((s) => s.release),
    [undefined, undefined, undefined],
  );
  assert.equal(new Set(sent.map((s) => s.frame.buffer)).size, 3);
});

test('an output that throws keeps its frame: the buffer does not go back to the pool', async () => {
  const { client } = await pair('hsc3');
  const before = pooledFrames();
  const { sender, failures } = sending(client, {
    binary: () => {
      throw new Error('socket gone');
    },
    releasesFrames: true,
  });
  sender.send(env(1));
  sender.flush();
  assert.equal(failures.length, 1);
  assert.ok(pooledFrames() <= before, 'the thrown frame was not handed back');
  assert.equal(client.closed, true);
});

test('the pool: a buffer goes back once however often it is released; frames over its size get their own', () => {
  const before = pooledFrames();
  const a = takeFrame(100);
  const afterTake = pooledFrames();
  a.release();
  a.release();
  assert.equal(pooledFrames(), afterTake + 1);
  const big = takeFrame(POOL_BUFFER_BYTES + 1);
  assert.equal(big.frame.length, POOL_BUFFER_BYTES + 1);
  big.release();
  assert.equal(pooledFrames(), afterTake + 1, 'a large frame is not pooled');
  assert.ok(pooledFrames() >= before);
});
