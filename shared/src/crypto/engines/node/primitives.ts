/**
 * The handshake primitives on node:crypto (the port: ../../primitives.ts). Every operation runs on the
 * calling thread and returns a settled promise: no thread-pool job, no WebCrypto module to load.
 * KeyObjects carry no usage, so each key here remembers the one use it was made for and refuses others,
 * as a WebCrypto key would.
 */
import type { EngineKey, HandshakePrimitives, KeyAgreementPair } from '../../primitives.ts';
import { fromBase64Url, fromHex, toBase64Url, type Bytes, type CryptoKey } from '../../subtle.ts';
import type { NodeCrypto, NodeKeyObject, OkpPublicJwk } from './node-crypto.ts';

type KeyUse = 'hmac' | 'x25519' | 'ed25519-sign' | 'ed25519-verify' | 'rsa-encrypt' | 'rsa-decrypt' | 'rsa-sign' | 'rsa-verify';

class NodeEngineKey implements EngineKey {
  readonly engine = 'node';
  readonly key: NodeKeyObject;
  readonly use: KeyUse;

  constructor(key: NodeKeyObject, use: KeyUse) {
    this.key = key;
    this.use = use;
  }
}

function keyFor(key: EngineKey, use: KeyUse): NodeKeyObject {
  if (!(key instanceof NodeEngineKey)) throw new TypeError(`a ${key.engine} key was handed to the node:crypto engine`);
  if (key.use !== use) throw new TypeError(`a key for ${key.use} was used for ${use}`);
  return key.key;
}

/** The RFC 8410 PKCS#8 header of a raw 32-byte X25519 private key (the test vectors' fixed keys). */
const X25519_PKCS8_HEAD = fromHex('302e020100300506032b656e04220420');

function withHead(head: Uint8Array, raw: Bytes): Uint8Array {
  const out = new Uint8Array(head.length + raw.length);
  out.set(head);
  out.set(raw, head.length);
  return out;
}

/** A plain Uint8Array over a Buffer's bytes (Buffer's slice() shares memory; callers expect a copy). */
function plain(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Raw Curve25519 public keys go in and out as JWK (RFC 8037), not as DER SubjectPublicKeyInfo: the
 * same key either way, but OpenSSL's DER decoder and encoder and Node's JavaScript around them cost
 * about 0.7 ms more in a process's first handshake (one key made, two imported: a cold `hostadm call`)
 * and ~15 µs per key after. The length is checked here: a JWK `x` of another size is refused as a
 * DER key of another size was.
 */
function publicRawOf(key: NodeKeyObject): Uint8Array {
  const x = key.export({ format: 'jwk' }).x;
  const raw = typeof x === 'string' ? fromBase64Url(x) : new Uint8Array(0);
  if (raw.length !== 32) throw new TypeError('not a Curve25519 public key');
  return raw;
}

function okpPublicJwk(crv: OkpPublicJwk['crv'], raw: Bytes): { key: OkpPublicJwk; format: 'jwk' } {
  if (raw.length !== 32) throw new TypeError(`an ${crv} public key is 32 bytes`);
  return { key: { kty: 'OKP', crv, x: toBase64Url(raw) }, format: 'jwk' };
}

/** Runs `compute` now; its result, or its throw, as a settled promise. */
function settled<T>(compute: () => T): Promise<T> {
  try {
    return Promise.resolve(compute());
  } catch (err) {
    return Promise.reject(err);
  }
}

function createNodePrimitives(c: NodeCrypto): HandshakePrimitives {
  const oaep = (key: NodeKeyObject) => ({ key, padding: c.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' as const });
  const pkcs1 = (key: NodeKeyObject) => ({ key, padding: c.constants.RSA_PKCS1_PADDING });
  const pair = (privateKey: NodeKeyObject, publicKey: NodeKeyObject): KeyAgreementPair => ({
    privateKey: new NodeEngineKey(privateKey, 'x25519'),
    publicRaw: publicRawOf(publicKey),
  });
  const hmac = (key: EngineKey, data: Bytes) => plain(c.createHmac('sha256', keyFor(key, 'hmac')).update(data).digest());
  const pkcs8Key = (pkcs8: Bytes) => c.createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const spkiKey = (spki: Bytes) => c.createPublicKey({ key: spki, format: 'der', type: 'spki' });

  return {
    engine: 'node',
    sha256: (data) => settled(() => plain(c.createHash('sha256').update(data).digest())),

    importHmacKey: (raw) => settled(() => new NodeEngineKey(c.createSecretKey(raw), 'hmac')),
    hmacSha256: (key, data) => settled(() => hmac(key, data)),
    verifyHmacSha256: (key, mac, data) =>
      settled(() => {
        const expected = hmac(key, data);
        return mac.length === expected.length && c.timingSafeEqual(expected, mac);
      }),
    hkdfSha256: (ikm, salt, outputs) => settled(() => outputs.map((o) => new Uint8Array(c.hkdfSync('sha256', ikm, salt, o.info, o.length)))),

    generateX25519: () =>
      settled(() => {
        const { privateKey, publicKey } = c.generateKeyPairSync('x25519');
        return pair(privateKey, publicKey);
      }),
    x25519FromPrivateRaw: (privateRaw) =>
      settled(() => {
        const privateKey = pkcs8Key(withHead(X25519_PKCS8_HEAD, privateRaw));
        return pair(privateKey, c.createPublicKey(privateKey));
      }),
    x25519: (privateKey, peerPublicRaw) =>
      settled(() => {
        const publicKey = c.createPublicKey(okpPublicJwk('X25519', peerPublicRaw));
        return plain(c.diffieHellman({ privateKey: keyFor(privateKey, 'x25519'), publicKey }));
      }),

    generateEd25519: () =>
      settled(() => {
        const { privateKey, publicKey } = c.generateKeyPairSync('ed25519');
        return { pkcs8: plain(privateKey.export({ format: 'der', type: 'pkcs8' })), publicRaw: publicRawOf(publicKey) };
      }),
    importEd25519Private: (pkcs8) => settled(() => new NodeEngineKey(pkcs8Key(pkcs8), 'ed25519-sign')),
    importEd25519Public: (raw) => settled(() => new NodeEngineKey(c.createPublicKey(okpPublicJwk('Ed25519', raw)), 'ed25519-verify')),
    ed25519PublicRawFromPkcs8: (pkcs8) => settled(() => publicRawOf(c.createPublicKey(pkcs8Key(pkcs8)))),
    ed25519Sign: (key, data) => settled(() => plain(c.sign(null, data, keyFor(key, 'ed25519-sign')))),
    ed25519Verify: (key, signature, data) => settled(() => c.verify(null, data, keyFor(key, 'ed25519-verify'), signature)),

    importRsaPublic: (spki, use) => settled(() => new NodeEngineKey(spkiKey(spki), use === 'encrypt' ? 'rsa-encrypt' : 'rsa-verify')),
    importRsaPrivate: (pkcs8, use) => settled(() => new NodeEngineKey(pkcs8Key(pkcs8), use === 'decrypt' ? 'rsa-decrypt' : 'rsa-sign')),
    rsaModulusBits: (key) =>
      keyFor(key, key instanceof NodeEngineKey && key.use === 'rsa-verify' ? 'rsa-verify' : 'rsa-encrypt').asymmetricKeyDetails?.modulusLength ?? 0,
    rsaOaepEncrypt: (key, data) => settled(() => plain(c.publicEncrypt(oaep(keyFor(key, 'rsa-encrypt')), data))),
    rsaOaepDecrypt: (key, data) => settled(() => plain(c.privateDecrypt(oaep(keyFor(key, 'rsa-decrypt')), data))),
    rsaSign: (key, data) => settled(() => plain(c.sign('sha256', data, pkcs1(keyFor(key, 'rsa-sign'))))),
    rsaVerify: (key, signature, data) => settled(() => c.verify('sha256', data, pkcs1(keyFor(key, 'rsa-verify')), signature)),

    adoptCryptoKey(key: CryptoKey): EngineKey {
      const name = key.algorithm.name;
      const use: KeyUse | null =
        name === 'RSA-OAEP' && key.usages.includes('decrypt') ? 'rsa-decrypt' : name === 'RSASSA-PKCS1-v1_5' && key.usages.includes('sign') ? 'rsa-sign' : null;
      if (!use) throw new TypeError(`a WebCrypto ${name} key with usages ${key.usages.join(', ')} is not a client key this engine takes`);
      return new NodeEngineKey(c.KeyObject.from(key), use);
    },
  };
}

let engine: { c: NodeCrypto; primitives: HandshakePrimitives } | undefined;

export function nodePrimitives(c: NodeCrypto): HandshakePrimitives {
  if (engine?.c !== c) engine = { c, primitives: createNodePrimitives(c) };
  return engine.primitives;
}

/** RFC 8032 §7.1 test 1: an Ed25519 public key and its signature of the empty message (public values). */
const WARM_ED25519 = {
  x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
  signature: fromHex('e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b'),
};

/**
 * Runs each operation a resumption's answer needs (Ed25519 verify, X25519, HKDF, AES-256-GCM both
 * ways) once on public test values, results thrown away. The first call of each costs a process
 * 0.05–0.3 ms more than later ones (Node compiles its JavaScript on first use); a client that has
 * just sent R1 and waits for RA pays that while it waits instead of after RA arrives. No key or
 * secret of a session is touched.
 */
export function warmNodeCrypto(c: NodeCrypto): void {
  const edKey = c.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: WARM_ED25519.x }, format: 'jwk' });
  c.verify(null, new Uint8Array(0), edKey, WARM_ED25519.signature);
  // One throwaway pair, agreed with itself: the operation is what is warmed, not its result.
  const pair = c.generateKeyPairSync('x25519');
  const shared = c.diffieHellman({ privateKey: pair.privateKey, publicKey: pair.publicKey });
  c.hkdfSync('sha256', shared, new Uint8Array(32), new Uint8Array(1), 32);
  const key = c.createSecretKey(new Uint8Array(32));
  const iv = new Uint8Array(12);
  const cipher = c.createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  cipher.setAAD(iv);
  const sealed = cipher.update(iv);
  cipher.final();
  const decipher = c.createDecipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  decipher.setAAD(iv);
  decipher.setAuthTag(cipher.getAuthTag());
  decipher.update(sealed);
  decipher.final();
}
