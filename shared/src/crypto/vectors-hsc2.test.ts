/**
 * hsc2 test vectors (docs/bridge-protocol.md §4, hsc2 table): the inputs of the hsc1 vectors
 * (vectors.test.ts), with hsc2's labels throughout and binary frames. Each output is checked against
 * the constant and recomputed independently with node:crypto.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toHex } from './subtle.ts';
import { checkHandshakeVectors, independentlySealed, vectorChannels } from './vectors.test-support.ts';

const IN = {
  frames: [
    { dir: 'c2a', seq: 0, plain: '{"id":"1","name":"identify","namespace":"rpc","args":{}}' },
    { dir: 'c2a', seq: 1, plain: '{"id":"2","name":"query","namespace":"rpc","args":{}}' },
    { dir: 'a2c', seq: 0, plain: '{"id":"1","name":"response","namespace":"rpc","args":{"type":"server"}}' },
  ],
} as const;

const OUT = {
  shared: '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742',
  hostKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  transcript: '896dbb5759b71f460506fb81bcf4327d39ca86bef856ad0f64fd7f001535be9a',
  hostSig: '114e9d4ee1f8dfb1367d499f6cc9e48a16d925eaafe39e2f962ee7743256a9e375f9ceb4bc9243573cdeb72eeb7a58f2425b78df9369a402573a8873b5d13e02',
  kC2a: '9cdae779745a38ea089d02db97777f8053268bd5090320fc72a3d4debdf57b9a',
  kA2c: '8b56d9b0a6be59b5bb254f123dc047f68b9ea21ada0f1e761c81cdcafa3bbc39',
  sid: '2f1377b6ad265c240f2f316bf5b31b9f',
  c2MessageSha256: '860ac77129d7a598fa68cb49b7c1e6cd10f044b98442318193f0192e85732ce3',
  frames: [
    '000000000000000012446c977d7f036d377ecfd91468c612c4a46cbd8a7ab320a37f04cf0ee60e92200698b2aa6af8ead4fa8bb3448f92fa7ef2a01f66d81a7fab6c27be6c0f20cc37094671d05788fd',
    '00000000000000014b6da6e1884c2d9f349e76e38f97abaa2c78955e52c45804ea4636f6b468f5ce5142d6b1ffa919cd101e5f15cf54486bfcf5034e90e8279ca114860ca8ef6ac4f5b87b08a5',
    '000000000000000032c80ca66dc16f8a12d72c5c60df64e75149c9e44b01059d4bed1b50a5e66bc1bb12febfc28f0ec81e544232f76659d965352715ba62b5296364b9ebcaabcc790afabab09fdec8953a9b037d92ccbed14854c4704d7a41',
  ],
} as const;

test('hsc2 test vectors', async () => {
  await checkHandshakeVectors('hsc2', 'hsc1', OUT);
  const native = await vectorChannels(OUT, 'hsc2', 'auto');
  const web = await vectorChannels(OUT, 'hsc2', 'webcrypto');
  for (const [i, f] of IN.frames.entries()) {
    const frame = await native.sealers[f.dir].sealBinary(f.plain);
    assert.equal(toHex(frame), OUT.frames[i]);
    assert.equal(toHex(await web.sealers[f.dir].sealBinary(f.plain)), OUT.frames[i], 'WebCrypto engine');
    assert.equal(await native.openers[f.dir].openBinary(frame), f.plain);
    assert.equal(await web.openers[f.dir].openBinary(frame), f.plain, 'WebCrypto engine');
    // Independently: AES-256-GCM, nonce 0000‖seq, AAD "hostadm-hsc2 frame"‖sid‖direction‖seq, raw seq‖ct‖tag.
    assert.equal(independentlySealed(OUT, 'hostadm-hsc2 frame', f.dir, f.seq, Buffer.from(f.plain, 'utf8')), OUT.frames[i]);
  }
});
