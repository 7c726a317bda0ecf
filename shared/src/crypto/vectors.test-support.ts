/**
 * What the hsc1, hsc2 and hsc3 test vectors share (vectors*.test.ts): the inputs of the hsc1 vectors,
 * the handshake checked under a version's labels against the constants and recomputed independently
 * with node:crypto, on both engines of primitives.ts, a version's channels on both AES-GCM engines, and an
 * independent sealer for a frame or record body. Test support only: nothing in the product imports it.
 */
import assert from 'node:assert/strict';
import { createCipheriv, createHash, createPrivateKey, hkdfSync, sign } from 'node:crypto';
import { SecureChannel } from './channel.ts';
import { engineLabel, ENGINES, selectEngine } from './engines.test-support.ts';
import { curve25519PrivatePkcs8, ed25519PublicRawFromPkcs8, hostKeyFingerprint, importEd25519PrivateKey, importEd25519PublicKey } from './keys.ts';
import { primitives } from './primitives.ts';
import { fromHex, toHex } from './subtle.ts';
import {
  clientSignedMessage,
  deriveSessionSecrets,
  ephemeralFromPrivateRaw,
  hostSignedMessage,
  transcriptHash,
  x25519,
  type ChannelVersion,
} from './transcript.ts';

const range = (start: number, n: number) => Uint8Array.from({ length: n }, (_, i) => start + i);

export const HANDSHAKE_IN = {
  md5Key: 'AAECAwQFBgcICQoLDA0ODw==',
  clientEphPrivate: '77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a',
  agentEphPrivate: '5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb',
  hostKeySeed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  testString: 'abcdefghijklmnopqrstuvwxyz012345',
} as const;

/** The handshake's outputs under one version's labels (hex). */
export interface HandshakeVectors {
  clientEph?: string;
  agentEph?: string;
  shared: string;
  hostKey?: string;
  hostKeyFingerprint?: string;
  transcript: string;
  hostSig: string;
  kC2a: string;
  kA2c: string;
  sid: string;
  c2MessageSha256: string;
}

/**
 * Checks every handshake output of `version` against `out` and against node:crypto's own recomputation,
 * on each engine of primitives.ts; `older` is a version whose transcript must differ (the labels keep
 * versions apart).
 */
export async function checkHandshakeVectors(version: ChannelVersion, older: ChannelVersion, out: HandshakeVectors): Promise<void> {
  for (const engine of ENGINES) {
    const restore = selectEngine(engine);
    try {
      await checkOnEngine(version, older, out);
    } catch (err) {
      throw new Error(`${version} vectors on ${engineLabel(engine)}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    } finally {
      restore();
    }
  }
}

async function checkOnEngine(version: ChannelVersion, older: ChannelVersion, out: HandshakeVectors): Promise<void> {
  const client = await ephemeralFromPrivateRaw(fromHex(HANDSHAKE_IN.clientEphPrivate));
  const agent = await ephemeralFromPrivateRaw(fromHex(HANDSHAKE_IN.agentEphPrivate));
  if (out.clientEph) assert.equal(toHex(client.publicRaw), out.clientEph);
  if (out.agentEph) assert.equal(toHex(agent.publicRaw), out.agentEph);
  const shared = await x25519(client.privateKey, agent.publicRaw);
  assert.equal(toHex(shared), out.shared);
  assert.equal(toHex(await x25519(agent.privateKey, client.publicRaw)), out.shared);
  const hostPkcs8 = curve25519PrivatePkcs8(fromHex(HANDSHAKE_IN.hostKeySeed), 'ed25519');
  const hostKey = await ed25519PublicRawFromPkcs8(hostPkcs8);
  if (out.hostKey) assert.equal(toHex(hostKey), out.hostKey);
  if (out.hostKeyFingerprint) assert.equal(await hostKeyFingerprint(hostKey), out.hostKeyFingerprint);

  const input = {
    md5Key: HANDSHAKE_IN.md5Key,
    clientEph: client.publicRaw,
    clientNonce: range(0x00, 32),
    agentEph: agent.publicRaw,
    agentNonce: range(0x20, 32),
    hostKey,
  };
  const T = await transcriptHash(input, version);
  assert.equal(toHex(T), out.transcript);
  const independentT = createHash('sha256')
    .update(`hostadm-${version}`)
    .update(HANDSHAKE_IN.md5Key)
    .update(client.publicRaw)
    .update(range(0x00, 32))
    .update(agent.publicRaw)
    .update(range(0x20, 32))
    .update(hostKey)
    .digest('hex');
  assert.equal(independentT, out.transcript);
  assert.notEqual(toHex(await transcriptHash(input, older)), out.transcript, `${older} and ${version} never share a transcript`);

  // Ed25519 is deterministic, so the host signature is a vector too.
  const hostSig = await primitives().ed25519Sign(await importEd25519PrivateKey(hostPkcs8), hostSignedMessage(T, version));
  assert.equal(toHex(hostSig), out.hostSig);
  assert.equal(await primitives().ed25519Verify(await importEd25519PublicKey(hostKey), hostSig, hostSignedMessage(T, version)), true);
  const nodeKey = createPrivateKey({ key: Buffer.from(hostPkcs8), format: 'der', type: 'pkcs8' });
  assert.equal(sign(null, Buffer.concat([Buffer.from(`hostadm-${version} host`), fromHex(out.transcript)]), nodeKey).toString('hex'), out.hostSig);

  const secrets = await deriveSessionSecrets(shared, T, version);
  assert.deepEqual([toHex(secrets.kC2a), toHex(secrets.kA2c), toHex(secrets.sid)], [out.kC2a, out.kA2c, out.sid]);
  const hkdf = (info: string, n: number) => Buffer.from(hkdfSync('sha256', fromHex(out.shared), fromHex(out.transcript), info, n)).toString('hex');
  assert.deepEqual([hkdf(`hostadm-${version} c2a`, 32), hkdf(`hostadm-${version} a2c`, 32), hkdf(`hostadm-${version} sid`, 16)], [out.kC2a, out.kA2c, out.sid]);
  assert.equal(
    createHash('sha256')
      .update(clientSignedMessage(T, HANDSHAKE_IN.testString, version))
      .digest('hex'),
    out.c2MessageSha256,
  );
}

/** Channels of `version` from the vectors' keys: per direction, the side that seals and the side that opens. */
export async function vectorChannels(out: HandshakeVectors, version: ChannelVersion, engine: 'auto' | 'webcrypto') {
  const copy = () => ({ kC2a: fromHex(out.kC2a), kA2c: fromHex(out.kA2c), sid: fromHex(out.sid) });
  return {
    sealers: {
      c2a: await SecureChannel.create('client', copy(), { engine, version }),
      a2c: await SecureChannel.create('agent', copy(), { engine, version }),
    },
    openers: {
      c2a: await SecureChannel.create('agent', copy(), { engine, version }),
      a2c: await SecureChannel.create('client', copy(), { engine, version }),
    },
  };
}

/**
 * Independently of the channel: seq(8) ‖ AES-256-GCM(plain) ‖ tag, nonce 0000‖seq, AAD
 * label‖sid‖direction‖seq, in hex.
 */
export function independentlySealed(out: HandshakeVectors, label: string, dir: 'c2a' | 'a2c', seqNumber: number, plain: Uint8Array): string {
  const seq = Buffer.alloc(8);
  seq.writeBigUInt64BE(BigInt(seqNumber));
  const cipher = createCipheriv('aes-256-gcm', fromHex(dir === 'c2a' ? out.kC2a : out.kA2c), Buffer.concat([Buffer.alloc(4), seq]));
  cipher.setAAD(Buffer.concat([Buffer.from(label), fromHex(out.sid), Buffer.of(dir === 'c2a' ? 1 : 2), seq]));
  return Buffer.concat([seq, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('hex');
}
