/**
 * hsc3 test vectors (docs/bridge-protocol.md §4, hsc3 table): the inputs of the hsc1 and hsc2 vectors
 * with hsc3's labels, and records: the first carries two envelopes the client sent in one tick, the
 * second one reply. Each output is checked against the constant and recomputed independently with
 * node:crypto; the records are made by the product's sender (channel-sender.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SecureChannel } from './channel.ts';
import { ChannelSender } from './channel-sender.ts';
import { toHex } from './subtle.ts';
import { checkHandshakeVectors, independentlySealed, vectorChannels } from './vectors.test-support.ts';

const IN = {
  records: [
    {
      dir: 'c2a',
      seq: 0,
      plain: ['{"id":"1","name":"identify","namespace":"rpc","args":{}}', '{"id":"2","name":"query","namespace":"rpc","args":{}}'],
    },
    { dir: 'a2c', seq: 0, plain: ['{"id":"1","name":"response","namespace":"rpc","args":{"type":"server"}}'] },
  ],
} as const;

const OUT = {
  shared: '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742',
  transcript: '95cbf1b187e4351f3bae3e18e1ed99ea4e0f730e005f17371c8eb0b9bd79f4b9',
  hostSig: 'f5d1e11e3c0eb4e922dfb9277554d2594a3b49ea37e8284e268c38c091886bee3697295a26eeaa5dafd61c01e8ec0f44a8cfc9df4642f4cfb062a090a93fd506',
  kC2a: '8d64f4cb24555e6d4997859264b069befbd3f56acfa8ed144e1a8955ba1b2a36',
  kA2c: 'cf0dd67c72c3688013f63fbc121ec26735e172fc503509683d1d74b296d22c1b',
  sid: '577495db86993d7ebd25d9e42350d1af',
  c2MessageSha256: '49af2741e646b033a98dae2935ead7c5d47fe9d2ea2f6476fa4724de8992ae61',
  records: [
    '0000000000000000d9719bf8dabb1261124e9e881d5b4ce5b5187dc29bdcf6597b98bc15c7831631a5f3181b8b40abdcc98df5556cfabfb0f6a47544db86941ebe0b453723caa8f9f7fd567f4a9c882d2aa24ec39c800c1168820c51ac01337f72442fa6d98a1fed404127cdd339998b7cb0331cefec07d04527b0a340049071736955e58977753e1ba44f27ad',
    '00000000000000004463f03aaf5632bb9051a3661ef3e9b7a2118f0c94c12743a866525fd5ee8c9b2ac7c154664c906bdb11156d8b8649b5d53133a46043a5be7341c5a4cd13d8f4459a5604c4a24372ed62d0f31792792e11f6c388a30a937c8052c6',
  ],
} as const;

/** The one record a sender makes of `texts` sent in one tick. */
async function recordOf(channel: SecureChannel, texts: readonly string[]): Promise<Uint8Array> {
  const frames: Uint8Array[] = [];
  const sender = new ChannelSender(channel, new Uint8Array(0), {
    text: () => assert.fail('hsc3 sends binary frames'),
    binary: (frame) => frames.push(frame),
    failed: (cause) => assert.fail(String(cause)),
  });
  for (const text of texts) sender.send(text);
  await sender.drained();
  assert.equal(frames.length, 1);
  return frames[0]!;
}

test('hsc3 test vectors', async () => {
  await checkHandshakeVectors('hsc3', 'hsc2', OUT);
  const native = await vectorChannels(OUT, 'hsc3', 'auto');
  const web = await vectorChannels(OUT, 'hsc3', 'webcrypto');
  for (const [i, r] of IN.records.entries()) {
    const record = await recordOf(native.sealers[r.dir], r.plain);
    assert.equal(toHex(record), OUT.records[i]);
    assert.equal(toHex(await recordOf(web.sealers[r.dir], r.plain)), OUT.records[i], 'WebCrypto engine');
    assert.deepEqual(await native.openers[r.dir].openRecord(record), r.plain);
    assert.deepEqual(await web.openers[r.dir].openRecord(record), r.plain, 'WebCrypto engine');
    // Independently: plaintext = (len u32 BE ‖ UTF-8)+, then sealed as an hsc2 frame under "hostadm-hsc3 record".
    const plain = Buffer.concat(
      r.plain.flatMap((text) => {
        const bytes = Buffer.from(text, 'utf8');
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        return [length, bytes];
      }),
    );
    assert.equal(independentlySealed(OUT, 'hostadm-hsc3 record', r.dir, r.seq, plain), OUT.records[i]);
  }
});
