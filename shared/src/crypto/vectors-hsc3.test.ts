/**
 * hsc3 test vectors (docs/bridge-protocol.md §4, hsc3 table): the inputs of the hsc1 and hsc2 vectors
 * with hsc3's labels, and records: the first carries two envelopes the client sent in one tick, the
 * second one reply. Each output is checked against the constant and recomputed independently with
 * node:crypto; the records are made by the product's sender (channel-sender.ts).
 */
import assert from 'node:assert/strict';
import { createCipheriv, createHash, createPrivateKey, hkdfSync, sign } from 'node:crypto';
import { test } from 'node:test';
import { SecureChannel } from './channel.ts';
import { ChannelSender } from './channel-sender.ts';
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
  const client = await ephemeralFromPrivateRaw(fromHex(IN.clientEphPrivate));
  const agent = await ephemeralFromPrivateRaw(fromHex(IN.agentEphPrivate));
  const shared = await x25519(client.privateKey, agent.publicRaw);
  assert.equal(toHex(shared), OUT.shared);
  const hostPkcs8 = curve25519PrivatePkcs8(fromHex(IN.hostKeySeed), 'ed25519');
  const hostKey = await ed25519PublicRawFromPkcs8(hostPkcs8);
  const input = {
    md5Key: IN.md5Key,
    clientEph: client.publicRaw,
    clientNonce: range(0x00, 32),
    agentEph: agent.publicRaw,
    agentNonce: range(0x20, 32),
    hostKey,
  };
  const T = await transcriptHash(input, 'hsc3');
  assert.equal(toHex(T), OUT.transcript);
  const independentT = createHash('sha256')
    .update('hostadm-hsc3')
    .update(IN.md5Key)
    .update(client.publicRaw)
    .update(range(0x00, 32))
    .update(agent.publicRaw)
    .update(range(0x20, 32))
    .update(hostKey)
    .digest('hex');
  assert.equal(independentT, OUT.transcript);
  assert.notEqual(toHex(await transcriptHash(input, 'hsc2')), OUT.transcript, 'hsc2 and hsc3 never share a transcript');

  const hostSig = new Uint8Array(await subtle().sign({ name: 'Ed25519' }, await importEd25519PrivateKey(hostPkcs8), hostSignedMessage(T, 'hsc3')));
  assert.equal(toHex(hostSig), OUT.hostSig);
  const nodeKey = createPrivateKey({ key: Buffer.from(hostPkcs8), format: 'der', type: 'pkcs8' });
  assert.equal(sign(null, Buffer.concat([Buffer.from('hostadm-hsc3 host'), fromHex(OUT.transcript)]), nodeKey).toString('hex'), OUT.hostSig);

  const secrets = await deriveSessionSecrets(shared, T, 'hsc3');
  assert.deepEqual([toHex(secrets.kC2a), toHex(secrets.kA2c), toHex(secrets.sid)], [OUT.kC2a, OUT.kA2c, OUT.sid]);
  const hkdf = (info: string, n: number) => Buffer.from(hkdfSync('sha256', fromHex(OUT.shared), fromHex(OUT.transcript), info, n)).toString('hex');
  assert.deepEqual([hkdf('hostadm-hsc3 c2a', 32), hkdf('hostadm-hsc3 a2c', 32), hkdf('hostadm-hsc3 sid', 16)], [OUT.kC2a, OUT.kA2c, OUT.sid]);
  assert.equal(
    createHash('sha256')
      .update(clientSignedMessage(T, IN.testString, 'hsc3'))
      .digest('hex'),
    OUT.c2MessageSha256,
  );

  const copy = () => ({ kC2a: fromHex(OUT.kC2a), kA2c: fromHex(OUT.kA2c), sid: fromHex(OUT.sid) });
  const channels = async (engine: 'auto' | 'webcrypto') => ({
    sealers: {
      c2a: await SecureChannel.create('client', copy(), { engine, version: 'hsc3' }),
      a2c: await SecureChannel.create('agent', copy(), { engine, version: 'hsc3' }),
    },
    openers: {
      c2a: await SecureChannel.create('agent', copy(), { engine, version: 'hsc3' }),
      a2c: await SecureChannel.create('client', copy(), { engine, version: 'hsc3' }),
    },
  });
  const native = await channels('auto');
  const web = await channels('webcrypto');
  for (const [i, r] of IN.records.entries()) {
    const record = await recordOf(native.sealers[r.dir], r.plain);
    assert.equal(toHex(record), OUT.records[i]);
    assert.equal(toHex(await recordOf(web.sealers[r.dir], r.plain)), OUT.records[i], 'WebCrypto engine');
    assert.deepEqual(await native.openers[r.dir].openRecord(record), r.plain);
    assert.deepEqual(await web.openers[r.dir].openRecord(record), r.plain, 'WebCrypto engine');
    // Independently: plaintext = (len u32 BE ‖ UTF-8)+, then sealed as an hsc2 frame under "hostadm-hsc3 record".
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(BigInt(r.seq));
    const plain = Buffer.concat(
      r.plain.flatMap((text) => {
        const bytes = Buffer.from(text, 'utf8');
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        return [length, bytes];
      }),
    );
    const cipher = createCipheriv('aes-256-gcm', fromHex(r.dir === 'c2a' ? OUT.kC2a : OUT.kA2c), Buffer.concat([Buffer.alloc(4), seq]));
    cipher.setAAD(Buffer.concat([Buffer.from('hostadm-hsc3 record'), fromHex(OUT.sid), Buffer.of(r.dir === 'c2a' ? 1 : 2), seq]));
    assert.equal(Buffer.concat([seq, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('hex'), OUT.records[i]);
  }
});
