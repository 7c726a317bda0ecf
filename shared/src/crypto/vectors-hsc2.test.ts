/**
 * hsc2 test vectors (docs/bridge-protocol.md §4, hsc2 table): the inputs of the hsc1 vectors
 * (vectors.test.ts), with hsc2's labels throughout and binary frames. Each output is checked against
 * the constant and recomputed independently with node:crypto.
 */
import assert from 'node:assert/strict';
import { createCipheriv, createHash, createPrivateKey, hkdfSync, sign } from 'node:crypto';
import { test } from 'node:test';
import { SecureChannel } from './channel.ts';
import { curve25519PrivatePkcs8, ed25519PublicRawFromPkcs8, importEd25519PrivateKey } from './keys.ts';
import { fromHex, subtle, toHex } from './subtle.ts';
import { clientSignedMessage, deriveSessionSecrets, ephemeralFromPrivateRaw, hostSignedMessage, transcriptHash, x25519 } from './transcript.ts';

const range = (start: number, n: number) => Uint8Array.from({ length: n }, (_, i) => start + i);

const IN = {
  md5Key: 'AAECAwQFBgcICQoLDA0ODw==',
  clientEphPrivate: '77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a',
  agentEphPrivate: '5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb',
  hostKeySeed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  testString: 'abcdefghijklmnopqrstuvwxyz012345',
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
  const client = await ephemeralFromPrivateRaw(fromHex(IN.clientEphPrivate));
  const agent = await ephemeralFromPrivateRaw(fromHex(IN.agentEphPrivate));
  const shared = await x25519(client.privateKey, agent.publicRaw);
  assert.equal(toHex(shared), OUT.shared);
  const hostPkcs8 = curve25519PrivatePkcs8(fromHex(IN.hostKeySeed), 'ed25519');
  const hostKey = await ed25519PublicRawFromPkcs8(hostPkcs8);
  assert.equal(toHex(hostKey), OUT.hostKey);

  const input = {
    md5Key: IN.md5Key,
    clientEph: client.publicRaw,
    clientNonce: range(0x00, 32),
    agentEph: agent.publicRaw,
    agentNonce: range(0x20, 32),
    hostKey,
  };
  const T = await transcriptHash(input, 'hsc2');
  assert.equal(toHex(T), OUT.transcript);
  const independentT = createHash('sha256')
    .update('hostadm-hsc2')
    .update(IN.md5Key)
    .update(client.publicRaw)
    .update(range(0x00, 32))
    .update(agent.publicRaw)
    .update(range(0x20, 32))
    .update(hostKey)
    .digest('hex');
  assert.equal(independentT, OUT.transcript);
  assert.notEqual(toHex(await transcriptHash(input)), OUT.transcript, 'hsc1 and hsc2 never share a transcript');

  const hostSig = new Uint8Array(await subtle().sign({ name: 'Ed25519' }, await importEd25519PrivateKey(hostPkcs8), hostSignedMessage(T, 'hsc2')));
  assert.equal(toHex(hostSig), OUT.hostSig);
  const nodeKey = createPrivateKey({ key: Buffer.from(hostPkcs8), format: 'der', type: 'pkcs8' });
  assert.equal(sign(null, Buffer.concat([Buffer.from('hostadm-hsc2 host'), fromHex(OUT.transcript)]), nodeKey).toString('hex'), OUT.hostSig);

  const secrets = await deriveSessionSecrets(shared, T, 'hsc2');
  assert.deepEqual([toHex(secrets.kC2a), toHex(secrets.kA2c), toHex(secrets.sid)], [OUT.kC2a, OUT.kA2c, OUT.sid]);
  const hkdf = (info: string, n: number) => Buffer.from(hkdfSync('sha256', fromHex(OUT.shared), fromHex(OUT.transcript), info, n)).toString('hex');
  assert.deepEqual([hkdf('hostadm-hsc2 c2a', 32), hkdf('hostadm-hsc2 a2c', 32), hkdf('hostadm-hsc2 sid', 16)], [OUT.kC2a, OUT.kA2c, OUT.sid]);
  assert.equal(
    createHash('sha256')
      .update(clientSignedMessage(T, IN.testString, 'hsc2'))
      .digest('hex'),
    OUT.c2MessageSha256,
  );

  const copy = () => ({ kC2a: fromHex(OUT.kC2a), kA2c: fromHex(OUT.kA2c), sid: fromHex(OUT.sid) });
  const channels = async (engine: 'auto' | 'webcrypto') => ({
    sealers: {
      c2a: await SecureChannel.create('client', copy(), { engine, version: 'hsc2' }),
      a2c: await SecureChannel.create('agent', copy(), { engine, version: 'hsc2' }),
    },
    openers: {
      c2a: await SecureChannel.create('agent', copy(), { engine, version: 'hsc2' }),
      a2c: await SecureChannel.create('client', copy(), { engine, version: 'hsc2' }),
    },
  });
  const native = await channels('auto');
  const web = await channels('webcrypto');
  for (const [i, f] of IN.frames.entries()) {
    const frame = await native.sealers[f.dir].sealBinary(f.plain);
    assert.equal(toHex(frame), OUT.frames[i]);
    assert.equal(toHex(await web.sealers[f.dir].sealBinary(f.plain)), OUT.frames[i], 'WebCrypto engine');
    assert.equal(await native.openers[f.dir].openBinary(frame), f.plain);
    assert.equal(await web.openers[f.dir].openBinary(frame), f.plain, 'WebCrypto engine');
    // Independently: AES-256-GCM, nonce 0000‖seq, AAD "hostadm-hsc2 frame"‖sid‖direction‖seq, raw seq‖ct‖tag.
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(BigInt(f.seq));
    const cipher = createCipheriv('aes-256-gcm', fromHex(f.dir === 'c2a' ? OUT.kC2a : OUT.kA2c), Buffer.concat([Buffer.alloc(4), seq]));
    cipher.setAAD(Buffer.concat([Buffer.from('hostadm-hsc2 frame'), fromHex(OUT.sid), Buffer.of(f.dir === 'c2a' ? 1 : 2), seq]));
    assert.equal(Buffer.concat([seq, cipher.update(f.plain, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('hex'), OUT.frames[i]);
  }
});
