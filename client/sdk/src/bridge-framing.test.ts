/**
 * Closing a channel on purpose: what the caller sent in the same tick still leaves, sealed, before the
 * channel closes, on both AES-GCM engines (WebCrypto seals asynchronously, as in browsers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBinaryBody, SecureChannel } from '@hostadm/shared/crypto/index.ts';
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
