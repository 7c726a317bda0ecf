/**
 * hsc1 test vectors (docs/bridge-protocol.md §4): fixed inputs, and the outputs every implementation
 * must reproduce. The X25519 keys are RFC 7748 §6.1's Alice (client) and Bob (agent), the host key
 * is RFC 8032 §7.1 test 1, so the public keys and the shared secret are themselves published values.
 * Each output is checked twice: against the constant, and recomputed independently with node:crypto.
 */
import assert from 'node:assert/strict';
import { createCipheriv, createHash } from 'node:crypto';
import { test } from 'node:test';
import { SecureChannel } from './channel.ts';
import { fromHex } from './subtle.ts';
import { checkHandshakeVectors } from './vectors.test-support.ts';

/** The handshake's inputs are HANDSHAKE_IN (vectors.test-support.ts, shared with hsc2 and hsc3); these are the frames'. */
const IN = {
  frames: [
    { dir: 'c2a', seq: 0, plain: '{"id":"1","name":"identify","namespace":"rpc","args":{}}' },
    { dir: 'c2a', seq: 1, plain: '{"id":"2","name":"query","namespace":"rpc","args":{}}' },
    { dir: 'a2c', seq: 0, plain: '{"id":"1","name":"response","namespace":"rpc","args":{"type":"server"}}' },
  ],
} as const;

const OUT = {
  clientEph: '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a',
  agentEph: 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f',
  shared: '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742',
  hostKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  hostKeyFingerprint: 'SHA256:If4x36FUomFia_hUBG_SJxt77UtqvkWqWId-9H-XIbk',
  transcript: '781af27ab0cf489a4ea9fc0e28df23726bfbfc4cea126e155e7505e405801e35',
  hostSig: '15f3d45689c9b6a40cfc50899d70adc335998b44f7fa30ca989da643deaffd4f8ac5cc4caef6109e2259b1b6f247f218a330e4e8eb7808709d82ce55a4203d00',
  kC2a: 'b1f237c440a2ec5d276063c26ec390f0beb48b9934f03c20bf16de8551a3a24a',
  kA2c: '226123d91ee8e267d7d5715e20520f0526e2193c088ef0e4ab97cfb8487bb1d6',
  sid: 'a67077cff7b7b8af3da457b7ea276d56',
  c2MessageSha256: '60173fc60a3116dac70ca7913548238bf1a22bd2bdc965c9ea4bcfa42471a5c7',
  frames: [
    'hsc1.AAAAAAAAAABstnSzqVCfRYM/qwbfWxJ68ewX1/l4myRLRFuG2j2pmJipxZQ4bAWeG7RJBo3uyA+zqxrCvtduqCC7+Ho8ouLZVOQcianwmDo=',
    'hsc1.AAAAAAAAAAGaZUcluZSD1ST89P+9MoM3XtoQnJDYZnCHCuomtiesMfQ3ES699+X44T+DrqJ/Y88qQSHoEe+TiIsoEY2XI61neWKzlVY=',
    'hsc1.AAAAAAAAAACGbMryOKfUDqdxSKPvR+E7Sm/g0AhBDeKy2Zj606xwEzefoJOUSVA0wx4AxtAOc2V481gCqmWMVXE1aWhDRNF75trpIDT4lohCqcUCRLtiSLJfydDT/6s=',
  ],
} as const;

test('hsc1 test vectors', async () => {
  // X25519 public keys and secret, host key and fingerprint, transcript, host signature (Ed25519 is
  // deterministic), the HKDF outputs and the C2 message: on each engine, and independently with node:crypto.
  await checkHandshakeVectors('hsc1', 'hsc2', OUT);
  assert.equal(`SHA256:${createHash('sha256').update(fromHex(OUT.hostKey)).digest('base64url')}`, OUT.hostKeyFingerprint);

  const copy = () => ({ kC2a: fromHex(OUT.kC2a), kA2c: fromHex(OUT.kA2c), sid: fromHex(OUT.sid) });
  // Each AES-GCM engine (aead.ts) seals the vectors byte for byte, and opens the other's frames.
  const channels = async (engine: 'auto' | 'webcrypto') => ({
    sealers: { c2a: await SecureChannel.create('client', copy(), { engine }), a2c: await SecureChannel.create('agent', copy(), { engine }) },
    openers: { c2a: await SecureChannel.create('agent', copy(), { engine }), a2c: await SecureChannel.create('client', copy(), { engine }) },
  });
  const native = await channels('auto');
  const web = await channels('webcrypto');
  for (const [i, f] of IN.frames.entries()) {
    const frame = await native.sealers[f.dir].seal(f.plain);
    assert.equal(frame, OUT.frames[i]);
    assert.equal(await web.sealers[f.dir].seal(f.plain), OUT.frames[i], 'WebCrypto engine');
    assert.equal(await native.openers[f.dir].open(frame), f.plain);
    assert.equal(await web.openers[f.dir].open(frame), f.plain, 'WebCrypto engine');
    // Independently: AES-256-GCM, nonce 0000‖seq, AAD "hostadm-hsc1"‖sid‖direction‖seq.
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(BigInt(f.seq));
    const cipher = createCipheriv('aes-256-gcm', fromHex(f.dir === 'c2a' ? OUT.kC2a : OUT.kA2c), Buffer.concat([Buffer.alloc(4), seq]));
    cipher.setAAD(Buffer.concat([Buffer.from('hostadm-hsc1'), fromHex(OUT.sid), Buffer.of(f.dir === 'c2a' ? 1 : 2), seq]));
    const body = Buffer.concat([seq, cipher.update(f.plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    assert.equal(`hsc1.${body.toString('base64')}`, OUT.frames[i]);
  }
});

test('both AES-GCM engines frame every plaintext length identically (the inline engine joins base64 parts)', async () => {
  const secrets = () => ({ kC2a: new Uint8Array(32).fill(7), kA2c: new Uint8Array(32).fill(9), sid: new Uint8Array(16).fill(3) });
  const native = await SecureChannel.create('client', secrets(), { engine: 'auto' });
  const web = await SecureChannel.create('client', secrets(), { engine: 'webcrypto' });
  const opener = await SecureChannel.create('agent', secrets(), { engine: 'webcrypto' });
  for (const length of [1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 100, 16383, 16384, 16385]) {
    const plain = 'x'.repeat(length);
    const frame = await native.seal(plain);
    assert.equal(frame, await web.seal(plain), `length ${length}`);
    assert.equal(await opener.open(frame), plain);
  }
});
