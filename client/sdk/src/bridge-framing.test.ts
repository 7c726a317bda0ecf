/**
 * Closing a channel on purpose: what the caller sent in the same tick still leaves, sealed, before the
 * channel closes, on both AES-GCM engines (WebCrypto seals asynchronously, as in browsers). And the
 * buffers of sealed frames: reused only over a socket that says when it has written them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBinaryBody, SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { pooledFrames } from '@hostadm/shared/crypto/channel-frame-pool.ts';
import { ChannelFraming } from './bridge-framing.ts';
import type { BridgeSession } from './bridge-session.ts';

const secrets = () => ({ kC2a: new Uint8Array(32).fill(1), kA2c: new Uint8Array(32).fill(2), sid: new Uint8Array(16).fill(3) });

for (const engine of ['auto', 'webcrypto'] as const) {
  test(`envelopes sent in the tick a channel is closed still reach the host (${engine} engine)`, async () => {
    const client = await SecureChannel.create('client', secrets(), { engine, version: 'hsc3' });
    const host = await SecureChannel.create('agent', secrets(), { engine, version: 'hsc3' });
    const relayed: Uint8Array[] = [];
    const session = { sendRelayBinary: (frame: Uint8Array) => relayed.push(frame.slice()) } as unknown as BridgeSession;
    const framing = new ChannelFraming(session, 'agent-1', client, 'the host');
    const closes: string[] = [];
    framing.onClose = (info) => closes.push(`${info.code} ${info.reason}`);

    framing.send('{"id":"1","name":"auth_clear","namespace":"rpc"}');
    framing.send('{"id":"2","name":"query","namespace":"rpc"}');
    framing.close({ code: 1000, reason: 'closed by the client' });
    assert.throws(() => framing.send('{"id":"3"}'), /closed/, 'nothing may be sent once close was called');
    await new Promise((resolve) => setTimeout(resolve, 50));

    assert.equal(relayed.length, 1, 'one record left');
    const frame = relayed[0]!;
    const head = frame.indexOf(10);
    assert.equal(Buffer.from(frame.subarray(0, head)).toString(), 'agent-1');
    assert.deepEqual(await openBinaryBody(host, frame.subarray(head + 1)), [
      '{"id":"1","name":"auth_clear","namespace":"rpc"}',
      '{"id":"2","name":"query","namespace":"rpc"}',
    ]);
    assert.deepEqual(closes, ['1000 closed by the client'], 'closed once, on purpose, not as a failure');
  });
}

test('over a socket that says when it has written a frame (ws), sealed frames go back to the pool only then; over one that cannot, none is pooled', async () => {
  const client = await SecureChannel.create('client', secrets(), { version: 'hsc3' });
  const host = await SecureChannel.create('agent', secrets(), { version: 'hsc3' });
  const pending: Array<() => void> = [];
  const relayed: Uint8Array[] = [];
  const telling = {
    tellsWhenWritten: true,
    sendRelayBinary: (frame: Uint8Array, written?: () => void) => {
      relayed.push(frame);
      if (written) pending.push(written);
    },
  } as unknown as BridgeSession;
  const framing = new ChannelFraming(telling, 'agent-1', client, 'the host');
  const before = pooledFrames();
  framing.send('{"id":"1","name":"query","namespace":"rpc"}');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(relayed.length, 1);
  assert.equal(pending.length, 1, 'a frame to hand back once written');
  assert.equal(pooledFrames(), before, 'not pooled while the socket may still write it');
  const sent = Buffer.from(relayed[0]!); // as the socket wrote it
  pending[0]!();
  assert.equal(pooledFrames(), before + 1, 'back in the pool once written');
  assert.deepEqual(await openBinaryBody(host, sent.subarray(sent.indexOf(10) + 1)), ['{"id":"1","name":"query","namespace":"rpc"}']);

  const browserLike = {
    tellsWhenWritten: false,
    sendRelayBinary: (_frame: Uint8Array, written?: () => void) => assert.equal(written, undefined),
  } as unknown as BridgeSession;
  const plain = new ChannelFraming(browserLike, 'agent-1', await SecureChannel.create('client', secrets(), { version: 'hsc3' }), 'the host');
  plain.send('{"id":"2","name":"query","namespace":"rpc"}');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(pooledFrames(), before + 1, 'nothing taken from or given to the pool');
});
