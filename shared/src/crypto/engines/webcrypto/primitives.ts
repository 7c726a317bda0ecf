/**
 * The handshake primitives on WebCrypto (the port: ../../primitives.ts): browsers, Cloudflare Workers
 * and any runtime without node:crypto. Every key is imported non-extractable and for one use.
 */
import type { EngineKey, HandshakePrimitives, KeyAgreementPair } from '../../primitives.ts';
import { constantTimeEqual, fromBase64Url, subtle, type Bytes, type CryptoKey } from '../../subtle.ts';

class WebCryptoEngineKey implements EngineKey {
  readonly engine = 'webcrypto';
  readonly key: CryptoKey;

  constructor(key: CryptoKey) {
    this.key = key;
  }
}

function keyOf(key: EngineKey): CryptoKey {
  if (!(key instanceof WebCryptoEngineKey)) throw new TypeError(`a ${key.engine} key was handed to the WebCrypto engine`);
  return key.key;
}

const wrap = (key: CryptoKey): EngineKey => new WebCryptoEngineKey(key);
const bytes = async (result: Promise<ArrayBuffer>) => new Uint8Array(await result);

async function x25519Bits(privateKey: CryptoKey, peerPublicRaw: Bytes): Promise<Uint8Array> {
  const peer = await subtle().importKey('raw', peerPublicRaw, { name: 'X25519' }, true, []);
  return bytes(subtle().deriveBits({ name: 'X25519', public: peer }, privateKey, 256));
}

/** PKCS#8 of a raw X25519 private key (RFC 8410): WebCrypto imports no raw private keys. */
function x25519Pkcs8(raw: Bytes): Uint8Array {
  const head = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20];
  const out = new Uint8Array(head.length + raw.length);
  out.set(head);
  out.set(raw, head.length);
  return out;
}

export const webCryptoPrimitives: HandshakePrimitives = {
  engine: 'webcrypto',
  sha256: async (data) => bytes(subtle().digest('SHA-256', data)),

  importHmacKey: async (raw) => wrap(await subtle().importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])),
  hmacSha256: async (key, data) => bytes(subtle().sign({ name: 'HMAC' }, keyOf(key), data)),
  async verifyHmacSha256(key, mac, data) {
    return constantTimeEqual(await bytes(subtle().sign({ name: 'HMAC' }, keyOf(key), data)), mac);
  },
  async hkdfSha256(ikm, salt, outputs) {
    const base = await subtle().importKey('raw', ikm, { name: 'HKDF' }, false, ['deriveBits']);
    return Promise.all(outputs.map((o) => bytes(subtle().deriveBits({ name: 'HKDF', hash: 'SHA-256', salt, info: o.info }, base, o.length * 8))));
  },

  async generateX25519(): Promise<KeyAgreementPair> {
    const pair = await subtle().generateKey({ name: 'X25519' }, false, ['deriveBits']);
    return { privateKey: wrap(pair.privateKey), publicRaw: await bytes(subtle().exportKey('raw', pair.publicKey)) };
  },
  async x25519FromPrivateRaw(privateRaw): Promise<KeyAgreementPair> {
    const privateKey = await subtle().importKey('pkcs8', x25519Pkcs8(privateRaw), { name: 'X25519' }, false, ['deriveBits']);
    // WebCrypto cannot compute a public key from a private one; the public key is X25519(priv, 9).
    const base = new Uint8Array(32);
    base[0] = 9;
    return { privateKey: wrap(privateKey), publicRaw: await x25519Bits(privateKey, base) };
  },
  x25519: async (privateKey, peerPublicRaw) => x25519Bits(keyOf(privateKey), peerPublicRaw),

  async generateEd25519() {
    const pair = await subtle().generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
    const [pkcs8, publicRaw] = await Promise.all([bytes(subtle().exportKey('pkcs8', pair.privateKey)), bytes(subtle().exportKey('raw', pair.publicKey))]);
    return { pkcs8, publicRaw };
  },
  importEd25519Private: async (pkcs8) => wrap(await subtle().importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign'])),
  importEd25519Public: async (raw) => wrap(await subtle().importKey('raw', raw, { name: 'Ed25519' }, false, ['verify'])),
  async ed25519PublicRawFromPkcs8(pkcs8) {
    // PKCS#8 v1 does not carry the public key and WebCrypto cannot derive it directly, but a JWK has it as `x`.
    const key = await subtle().importKey('pkcs8', pkcs8, { name: 'Ed25519' }, true, ['sign']);
    const { x } = await subtle().exportKey('jwk', key);
    if (typeof x !== 'string') throw new TypeError('the runtime did not export the Ed25519 public key');
    return fromBase64Url(x);
  },
  ed25519Sign: async (key, data) => bytes(subtle().sign({ name: 'Ed25519' }, keyOf(key), data)),
  ed25519Verify: async (key, signature, data) => subtle().verify({ name: 'Ed25519' }, keyOf(key), signature, data),

  importRsaPublic: async (spki, use) =>
    wrap(await subtle().importKey('spki', spki, { name: use === 'encrypt' ? 'RSA-OAEP' : 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, [use])),
  importRsaPrivate: async (pkcs8, use) =>
    wrap(await subtle().importKey('pkcs8', pkcs8, { name: use === 'decrypt' ? 'RSA-OAEP' : 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, [use])),
  rsaModulusBits: (key) => keyOf(key).algorithm.modulusLength ?? 0,
  rsaOaepEncrypt: async (key, data) => bytes(subtle().encrypt({ name: 'RSA-OAEP' }, keyOf(key), data)),
  rsaOaepDecrypt: async (key, data) => bytes(subtle().decrypt({ name: 'RSA-OAEP' }, keyOf(key), data)),
  rsaSign: async (key, data) => bytes(subtle().sign({ name: 'RSASSA-PKCS1-v1_5' }, keyOf(key), data)),
  rsaVerify: async (key, signature, data) => subtle().verify({ name: 'RSASSA-PKCS1-v1_5' }, keyOf(key), signature, data),

  adoptCryptoKey: wrap,
};
