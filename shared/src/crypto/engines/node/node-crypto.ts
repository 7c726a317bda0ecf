/**
 * The members of `node:crypto` this folder uses, typed here (shared compiles without Node types), and
 * the one place that decides whether they are used: where the runtime offers `process.getBuiltinModule`
 * (Node ≥ 22), unless `HOSTADM_HSC1_ENGINE=webcrypto` asks for WebCrypto, and never on Cloudflare
 * Workers, whose `nodejs_compat` offers it too (a partial one: no `diffieHellman` at our compatibility
 * date): there WebCrypto is workerd's own native code (no thread-pool hop, no module to load), the
 * bridge's only uses are a host-key digest and its ticket HMAC (bridge/src/relay/signin-tickets.ts,
 * WebCrypto by default there), nothing was measured to gain, and WebCrypto is what runs in its tests.
 *
 * Read at every use (not once per process), so that a test can run the same code on both engines.
 */
import type { CryptoKey } from '../../subtle.ts';

/** A `KeyObject`, as far as it is read here. */
export interface NodeKeyObject {
  readonly type: 'secret' | 'public' | 'private';
  readonly asymmetricKeyDetails?: { readonly modulusLength?: number };
  export(options: { format: 'der'; type: 'spki' | 'pkcs8' }): Uint8Array;
  /** An OKP key (X25519, Ed25519) as JWK: `x` is its raw public key, base64url. */
  export(options: { format: 'jwk' }): { x?: string };
}

/** The public half of an OKP key as JWK (RFC 8037). */
export interface OkpPublicJwk {
  kty: 'OKP';
  crv: 'X25519' | 'Ed25519';
  x: string;
}

export interface NodeHash {
  update(data: Uint8Array): NodeHash;
  digest(): Uint8Array;
}

export interface NodeCipher {
  setAAD(aad: Uint8Array): unknown;
  update(data: Uint8Array): Uint8Array;
  final(): Uint8Array;
  getAuthTag(): Uint8Array;
  setAuthTag(tag: Uint8Array): unknown;
}

type DerKey<T extends 'spki' | 'pkcs8'> = { key: Uint8Array; format: 'der'; type: T };
/** RSA padding, by `constants` value (OAEP with SHA-256 for encryption, PKCS #1 v1.5 for signatures). */
type RsaKey = { key: NodeKeyObject; padding: number; oaepHash?: 'sha256' };

export interface NodeCrypto {
  /** `md5` only for md5_key (keys.ts), which the spec names. */
  createHash(algorithm: 'sha256' | 'md5'): NodeHash;
  createHmac(algorithm: 'sha256', key: NodeKeyObject): NodeHash;
  hkdfSync(digest: 'sha256', ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): ArrayBuffer;
  createSecretKey(key: Uint8Array): NodeKeyObject;
  createPrivateKey(key: DerKey<'pkcs8'>): NodeKeyObject;
  createPublicKey(key: DerKey<'spki'> | NodeKeyObject | { key: OkpPublicJwk; format: 'jwk' }): NodeKeyObject;
  generateKeyPairSync(type: 'x25519' | 'ed25519'): { publicKey: NodeKeyObject; privateKey: NodeKeyObject };
  diffieHellman(options: { privateKey: NodeKeyObject; publicKey: NodeKeyObject }): Uint8Array;
  sign(algorithm: 'sha256' | null, data: Uint8Array, key: NodeKeyObject | RsaKey): Uint8Array;
  verify(algorithm: 'sha256' | null, data: Uint8Array, key: NodeKeyObject | RsaKey, signature: Uint8Array): boolean;
  publicEncrypt(key: RsaKey, data: Uint8Array): Uint8Array;
  privateDecrypt(key: RsaKey, data: Uint8Array): Uint8Array;
  timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
  randomFillSync(buffer: Uint8Array): Uint8Array;
  createCipheriv(algorithm: 'aes-256-gcm', key: NodeKeyObject, iv: Uint8Array, options: { authTagLength: 16 }): NodeCipher;
  createDecipheriv(algorithm: 'aes-256-gcm', key: NodeKeyObject, iv: Uint8Array, options: { authTagLength: 16 }): NodeCipher;
  readonly constants: { readonly RSA_PKCS1_PADDING: number; readonly RSA_PKCS1_OAEP_PADDING: number };
  readonly KeyObject: { from(key: CryptoKey): NodeKeyObject };
}

interface NodeProcess {
  getBuiltinModule?(id: 'node:crypto'): NodeCrypto | undefined;
  env?: Record<string, string | undefined>;
}

interface RuntimeGlobals {
  process?: NodeProcess;
  navigator?: { userAgent?: string };
}

let loaded: NodeCrypto | null | undefined;

/** `node:crypto` where this runtime's code should use it, else null (then WebCrypto it is). */
export function nodeCrypto(): NodeCrypto | null {
  const { process: proc, navigator } = globalThis as RuntimeGlobals;
  if (typeof proc?.getBuiltinModule !== 'function' || proc.env?.HOSTADM_HSC1_ENGINE === 'webcrypto') return null;
  if (loaded === undefined) {
    try {
      const c = navigator?.userAgent === 'Cloudflare-Workers' ? undefined : proc.getBuiltinModule('node:crypto');
      loaded = c && typeof c.createCipheriv === 'function' && typeof c.hkdfSync === 'function' && typeof c.diffieHellman === 'function' ? c : null;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}
