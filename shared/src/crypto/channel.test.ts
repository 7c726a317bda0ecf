/**
 * Sealed frames (docs/bridge-protocol.md §3.5–6), with the tests playing the bridge: it may flip bits,
 * replay, drop, reorder, reflect or splice frames between sessions, and each must kill the channel with
 * the right reason, after which every call fails `closed`.
 */
import assert from 'node:assert/strict';
import { createDecipheriv } from 'node:crypto';
import { describe, test } from 'node:test';
import { ChannelError, FRAME_PREFIX, MAX_SEALED_PLAINTEXT_BYTES, SecureChannel, type ChannelErrorReason } from './channel.ts';
import { fromBase64, randomBytes, toBase64 } from './subtle.ts';
import type { SessionSecrets } from './transcript.ts';
import { LIMITS } from '../protocol/limits.ts';

const secrets = (): SessionSecrets => ({ kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) });

async function pair(s = secrets()) {
  // Copies: SecureChannel.create does not keep the arrays, but the test reuses them below.
  const copy = (x: SessionSecrets) => ({ kC2a: x.kC2a.slice(), kA2c: x.kA2c.slice(), sid: x.sid.slice() });
  return { client: await SecureChannel.create('client', copy(s)), agent: await SecureChannel.create('agent', copy(s)), s };
}

const env = (i: number) => JSON.stringify({ id: String(i), name: 'identify', namespace: 'rpc', args: {} });

async function rejectsWith(p: Promise<unknown>, reason: ChannelErrorReason): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof ChannelError && e.reason === reason);
}

/** The channel is dead: both directions now fail `closed`. */
async function assertDead(channel: SecureChannel, validFrame: string): Promise<void> {
  assert.equal(channel.closed, true);
  await rejectsWith(channel.seal(env(99)), 'closed');
  await rejectsWith(channel.open(validFrame), 'closed');
}

function flipBit(frame: string, byteIndex: number, bit = 0): string {
  const bytes = fromBase64(frame.slice(FRAME_PREFIX.length));
  bytes[byteIndex] = (bytes[byteIndex] ?? 0) ^ (1 << bit);
  return FRAME_PREFIX + toBase64(bytes);
}

describe('sealed frames', () => {
  test('round trip in both directions, in order, with the documented layout', async () => {
    const { client, agent, s } = await pair();
    for (let i = 0; i < 5; i++) {
      const f = await client.seal(env(i));
      assert.ok(f.startsWith('hsc1.'));
      assert.equal(await agent.open(f), env(i));
      assert.equal(await client.open(await agent.seal(env(100 + i))), env(100 + i));
    }
    // Layout check against node:crypto: seq ‖ ct ‖ tag, nonce 0000‖seq, AAD label‖sid‖dir‖seq.
    const frame = fromBase64((await client.seal('{"x":1}')).slice(5));
    const seq = frame.subarray(0, 8);
    assert.deepEqual([...seq], [0, 0, 0, 0, 0, 0, 0, 5]);
    const d = createDecipheriv('aes-256-gcm', s.kC2a, Buffer.concat([Buffer.alloc(4), seq]));
    d.setAAD(Buffer.concat([Buffer.from('hostadm-hsc1'), s.sid, Buffer.of(1), seq]));
    d.setAuthTag(frame.subarray(frame.length - 16));
    assert.equal(Buffer.concat([d.update(frame.subarray(8, frame.length - 16)), d.final()]).toString(), '{"x":1}');
  });

  test('non-ASCII envelopes survive byte for byte (UTF-8, astral characters included)', async () => {
    const { client, agent } = await pair();
    const text = JSON.stringify({ id: 'ü', name: 'fs', namespace: 'admin', args: { path: '/home/Zoë/文件/🚀', pad: 'é'.repeat(30000) } });
    assert.equal(await agent.open(await client.seal(text)), text);
    assert.equal(await client.open(await agent.seal(text)), text);
  });

  test('a sealed frame shows no plaintext', async () => {
    const { client } = await pair();
    const marker = 'PLAINTEXT-MARKER-4b1d';
    const frame = await client.seal(JSON.stringify({ id: marker, name: marker, namespace: 'rpc', args: { secret: marker.repeat(20) } }));
    assert.equal(frame.includes(marker), false);
    const raw = Buffer.from(fromBase64(frame.slice(5)));
    assert.equal(raw.includes(marker), false);
    assert.equal(raw.toString('latin1').includes('namespace'), false);
  });

  test('many seals and opens in flight keep exact order', async () => {
    const { client, agent } = await pair();
    const frames = await Promise.all(Array.from({ length: 200 }, (_, i) => client.seal(env(i))));
    const opened = await Promise.all(frames.map((f) => agent.open(f)));
    assert.deepEqual(
      opened,
      frames.map((_, i) => env(i)),
    );
  });

  test('an envelope too big for one relay frame is refused without killing the channel', async () => {
    const { client, agent } = await pair();
    await assert.rejects(client.seal('x'.repeat(MAX_SEALED_PLAINTEXT_BYTES + 1)), RangeError);
    assert.equal(client.closed, false);
    const f = await client.seal('x'.repeat(MAX_SEALED_PLAINTEXT_BYTES));
    // The largest frame plus the longest destination line stays within the bridge limit.
    assert.ok(f.length + 'client-00000000-0000-0000-0000-000000000000\n'.length <= LIMITS.maxRelayFrameBytes);
    assert.equal((await agent.open(f)).length, MAX_SEALED_PLAINTEXT_BYTES);
  });
});

describe('the bridge as attacker', () => {
  test('flipping one bit of ciphertext or tag: tampered, then dead', async () => {
    for (const where of ['ciphertext', 'tag'] as const) {
      const { client, agent } = await pair();
      const f = await client.seal(env(1));
      const len = fromBase64(f.slice(5)).length;
      await rejectsWith(agent.open(flipBit(f, where === 'ciphertext' ? 9 : len - 1, 3)), 'tampered');
      await assertDead(agent, f);
    }
  });

  test('a replayed frame: replay', async () => {
    const { client, agent } = await pair();
    const f0 = await client.seal(env(0));
    assert.equal(await agent.open(f0), env(0));
    await rejectsWith(agent.open(f0), 'replay');
    await assertDead(agent, await client.seal(env(1)));
  });

  test('a dropped frame (n+1 delivered instead of n): gap', async () => {
    const { client, agent } = await pair();
    await client.seal(env(0)); // dropped by the bridge
    const f1 = await client.seal(env(1));
    await rejectsWith(agent.open(f1), 'gap');
    await assertDead(agent, f1);
  });

  test('two frames swapped: the first delivered fails (gap) and the second is refused', async () => {
    const { client, agent } = await pair();
    const [f0, f1] = [await client.seal(env(0)), await client.seal(env(1))];
    const first = agent.open(f1);
    const second = agent.open(f0);
    await rejectsWith(first, 'gap');
    await rejectsWith(second, 'closed');
  });

  test('a frame reflected back to its sender: tampered (direction is in the AAD and keys)', async () => {
    const { client } = await pair();
    const f = await client.seal(env(0));
    await rejectsWith(client.open(f), 'tampered');
    await assertDead(client, f);
  });

  test('an agent frame reflected to the agent: tampered', async () => {
    const { agent } = await pair();
    await rejectsWith(agent.open(await agent.seal(env(0))), 'tampered');
  });

  test('a frame spliced in from another session with the same keys but another sid: tampered', async () => {
    const s = secrets();
    const other = { ...s, sid: randomBytes(16) };
    const a = await pair(s);
    const b = await pair(other);
    await rejectsWith(a.agent.open(await b.client.seal(env(0))), 'tampered');
  });

  test('rewriting the seq field: replay or gap, never accepted', async () => {
    const { client, agent } = await pair();
    assert.equal(await agent.open(await client.seal(env(0))), env(0));
    const f1 = await client.seal(env(1));
    await rejectsWith(agent.open(flipBit(f1, 7, 0)), 'replay'); // seq 1 → 0
    const p = await pair();
    const g0 = await p.client.seal(env(0));
    await rejectsWith(p.agent.open(flipBit(g0, 7, 1)), 'gap'); // seq 0 → 2
  });

  test('malformed bodies: malformed', async () => {
    for (const bad of [
      '{"id":"1","name":"identify"}',
      'hsc1.',
      'hsc1.AAAA',
      'hsc1.!!!!',
      `hsc1.${toBase64(randomBytes(23))}`,
      `hsc2.${toBase64(randomBytes(40))}`,
    ]) {
      const { agent } = await pair();
      await rejectsWith(agent.open(bad), 'malformed');
      assert.equal(agent.closed, true);
    }
  });

  test('a frame already in flight when an earlier one fails is not delivered', async () => {
    const { client, agent } = await pair();
    const frames = await Promise.all([0, 1, 2].map((i) => client.seal(env(i))));
    const results = await Promise.allSettled([agent.open(frames[0] ?? ''), agent.open(flipBit(frames[1] ?? '', 10)), agent.open(frames[2] ?? '')]);
    assert.equal(results[0]?.status, 'fulfilled');
    assert.equal(results[1]?.status === 'rejected' && (results[1].reason as ChannelError).reason, 'tampered');
    assert.equal(results[2]?.status === 'rejected' && (results[2].reason as ChannelError).reason, 'closed');
  });

  test('close() kills the channel on purpose', async () => {
    const { client, agent } = await pair();
    const f = await client.seal(env(0));
    agent.close('session ended');
    await rejectsWith(agent.open(f), 'closed');
    assert.equal(agent.error?.reason, 'closed');
  });
});
