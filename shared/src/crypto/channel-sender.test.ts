/**
 * The sending half (channel-sender.ts): what one tick sends leaves as one hsc3 record at the tick's
 * end, a full queue leaves at once, a burst larger than a record is split with every envelope whole,
 * frames keep their order on the asynchronous engine, and hsc1/hsc2 still send a frame per envelope.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SecureChannel } from './channel.ts';
import { ChannelSender } from './channel-sender.ts';
import { MAX_RECORD_ENVELOPES, MAX_RECORD_PLAINTEXT_BYTES } from './channel-records.ts';
import { openBinaryBody } from './channel-receiver.ts';
import { randomBytes } from './subtle.ts';
import type { ChannelVersion, SessionSecrets } from './transcript.ts';

const copy = (x: SessionSecrets) => ({ kC2a: x.kC2a.slice(), kA2c: x.kA2c.slice(), sid: x.sid.slice() });
const env = (i: number, pad = 0) => JSON.stringify({ id: String(i), name: 'query', namespace: 'rpc', args: { pad: 'x'.repeat(pad) } });
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function rig(version: ChannelVersion, engine: 'auto' | 'webcrypto' = 'auto', flushBytes?: number) {
  const s: SessionSecrets = { kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) };
  const client = await SecureChannel.create('client', copy(s), { engine, version });
  const agent = await SecureChannel.create('agent', copy(s), { engine, version });
  const frames: (string | Uint8Array)[] = [];
  const failures: unknown[] = [];
  const sender = new ChannelSender(
    client,
    new Uint8Array(0),
    { text: (f) => frames.push(f), binary: (f) => frames.push(f), failed: (c) => failures.push(c) },
    flushBytes === undefined ? {} : { flushBytes },
  );
  /** Every envelope the agent opens from the frames so far, in order. */
  const opened = async () => {
    const out: string[] = [];
    for (const f of frames.splice(0)) out.push(...(typeof f === 'string' ? [await agent.open(f)] : await openBinaryBody(agent, f)));
    return out;
  };
  return { client, sender, frames, failures, opened };
}

test('hsc3: one tick, one record, sent once the sending code has returned; the next tick another', async () => {
  const { sender, frames, opened, failures } = await rig('hsc3');
  for (let i = 0; i < 5; i++) sender.send(env(i));
  assert.equal(frames.length, 0);
  await Promise.resolve();
  assert.equal(frames.length, 1, 'flushed by a microtask: no timer, no wait for more');
  sender.send(env(5));
  await tick();
  assert.equal(frames.length, 2);
  assert.deepEqual(
    await opened(),
    [0, 1, 2, 3, 4, 5].map((i) => env(i)),
  );
  assert.deepEqual(failures, []);
});

test('hsc3: a queue that reaches its bound leaves at once; entries over the per-record count go in the next record', async () => {
  const small = await rig('hsc3', 'auto', 1000);
  for (let i = 0; i < 6; i++) small.sender.send(env(i, 300));
  assert.ok(small.frames.length >= 1, 'flushed before the tick ended');
  await tick();
  assert.deepEqual(
    await small.opened(),
    [0, 1, 2, 3, 4, 5].map((i) => env(i, 300)),
  );

  const many = await rig('hsc3');
  const texts = Array.from({ length: MAX_RECORD_ENVELOPES + 3 }, (_, i) => env(i));
  for (const text of texts) many.sender.send(text);
  await tick();
  assert.equal(many.frames.length, 2);
  assert.deepEqual(await many.opened(), texts);
});

test('hsc3: a burst larger than a record is split over records, every envelope whole in one', async () => {
  const { sender, frames, opened } = await rig('hsc3', 'auto', Number.MAX_SAFE_INTEGER);
  const big = Math.floor(MAX_RECORD_PLAINTEXT_BYTES * 0.4);
  const texts = [env(0, big), env(1, big), env(2, big), env(3)];
  for (const text of texts) sender.send(text);
  await tick();
  assert.equal(frames.length, 2);
  for (const f of frames) assert.ok(f.length <= MAX_RECORD_PLAINTEXT_BYTES + 24);
  assert.deepEqual(await opened(), texts);
});

test('hsc3: a too-large or empty envelope throws RangeError and the channel goes on', async () => {
  const { client, sender, opened } = await rig('hsc3');
  assert.throws(() => sender.send('x'.repeat(MAX_RECORD_PLAINTEXT_BYTES)), RangeError);
  assert.throws(() => sender.send(''), RangeError);
  sender.send(env(1));
  await tick();
  assert.equal(client.closed, false);
  assert.deepEqual(await opened(), [env(1)]);
});

test('hsc3 on WebCrypto: records of several ticks reach the wire in order', async () => {
  const { sender, frames, opened, failures } = await rig('hsc3', 'webcrypto');
  const sent: string[] = [];
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 3; i++) sender.send(env(round * 10 + i));
    sent.push(...[0, 1, 2].map((i) => env(round * 10 + i)));
    await Promise.resolve();
  }
  await sender.drained();
  assert.equal(frames.length, 5);
  assert.deepEqual(await opened(), sent);
  assert.deepEqual(failures, []);
});

test('hsc1 and hsc2 still send one frame per envelope, at once on an inline engine', async () => {
  const hsc2 = await rig('hsc2');
  hsc2.sender.send(env(0));
  hsc2.sender.send(env(1));
  assert.equal(hsc2.frames.length, 2);
  assert.deepEqual(await hsc2.opened(), [env(0), env(1)]);
  const hsc1 = await rig('hsc1');
  hsc1.sender.send(env(0));
  hsc1.sender.send(env(1));
  await hsc1.sender.drained();
  assert.equal(hsc1.frames.length, 2);
  assert.deepEqual(await hsc1.opened(), [env(0), env(1)]);
});

test('a closed channel sends nothing more; a queued record is dropped, not sealed', async () => {
  const { client, sender, frames } = await rig('hsc3');
  sender.send(env(0));
  client.close();
  await tick();
  assert.equal(frames.length, 0);
});

for (const engine of ['auto', 'webcrypto'] as const) {
  test(`hsc3 (${engine}): an output that throws as a record leaves (its socket gone) fails the channel through \`failed\`, never as an uncaught error`, async () => {
    const s: SessionSecrets = { kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) };
    const client = await SecureChannel.create('client', copy(s), { engine, version: 'hsc3' });
    const uncaught: unknown[] = [];
    const record = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
    try {
      let handed = 0;
      const failures: unknown[] = [];
      const sender = new ChannelSender(client, new Uint8Array(0), {
        text: () => assert.fail('no text frames on hsc3'),
        binary: () => {
          handed++;
          throw new Error('socket gone');
        },
        failed: (cause) => failures.push(cause),
      });
      sender.send(env(0));
      await sender.drained().catch(() => undefined);
      await tick();
      assert.deepEqual(uncaught, []);
      assert.deepEqual(
        failures.map((f) => (f as Error).message),
        ['socket gone'],
      );
      assert.equal(client.closed, true, 'whether that record left is unknown: the channel cannot go on');
      sender.send(env(1));
      await sender.drained().catch(() => undefined);
      assert.equal(handed, 1, 'nothing is sent after the failure');
    } finally {
      process.off('uncaughtException', record);
      process.off('unhandledRejection', record);
    }
  });
}
