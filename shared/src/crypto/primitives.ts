/**
 * @module The primitives the handshakes use (hsc1/2/3, hsr1 resumption, bst1 sign-in tickets), one
 * interface with one same-named implementation per engine (engines/<engine>/primitives.ts):
 *
 * - `node`: node:crypto, inline, where engines/node/node-crypto.ts finds it (Node ≥ 22). Node's
 *   WebCrypto queues every call as a thread-pool job answered through the event loop, and loading it
 *   was a large part of a cold `hostadm call` (issue 20); node:crypto does the same operations on the
 *   calling thread, each promise already settled when it is returned.
 * - `webcrypto`: `crypto.subtle`, in browsers, Cloudflare Workers and wherever node:crypto is absent.
 *
 * Both give the same bytes for the same inputs (the vectors run on each). The engine is chosen at every
 * call, like aead.ts's; `HOSTADM_HSC1_ENGINE=webcrypto` forces WebCrypto on Node. A key is an
 * `EngineKey`, opaque: only the engine that made it takes it back (the other refuses it), so a key
 * made under one engine is never used by the other.
 */
import { nodeCrypto } from './engines/node/node-crypto.ts';
import { nodePrimitives, warmNodeCrypto } from './engines/node/primitives.ts';
import { webCryptoPrimitives } from './engines/webcrypto/primitives.ts';
import type { Bytes, CryptoKey } from './subtle.ts';

export type EngineName = 'node' | 'webcrypto';

/** A key of one engine: a WebCrypto CryptoKey or a node:crypto KeyObject inside, opaque here. */
export interface EngineKey {
  readonly engine: EngineName;
}

/** One HKDF output: its info label and its length in bytes. */
export interface HkdfOutput {
  readonly info: Bytes;
  readonly length: number;
}

export interface KeyAgreementPair {
  /** Usable only for the agreement; never leaves its engine. */
  readonly privateKey: EngineKey;
  readonly publicRaw: Uint8Array;
}

export interface HandshakePrimitives {
  readonly engine: EngineName;
  sha256(data: Bytes): Promise<Uint8Array>;

  importHmacKey(raw: Bytes): Promise<EngineKey>;
  hmacSha256(key: EngineKey, data: Bytes): Promise<Uint8Array>;
  /** Whether `mac` is the HMAC of `data`, compared in constant time. */
  verifyHmacSha256(key: EngineKey, mac: Bytes, data: Bytes): Promise<boolean>;
  /** HKDF-SHA256 (RFC 5869) of one input key and salt, one output per entry of `outputs`. */
  hkdfSha256(ikm: Bytes, salt: Bytes, outputs: readonly HkdfOutput[]): Promise<Uint8Array[]>;

  generateX25519(): Promise<KeyAgreementPair>;
  /** A fixed X25519 key (the test vectors), its public key computed. */
  x25519FromPrivateRaw(privateRaw: Bytes): Promise<KeyAgreementPair>;
  /** The raw shared secret; rejects a key the engine cannot use (the caller also refuses all-zero). */
  x25519(privateKey: EngineKey, peerPublicRaw: Bytes): Promise<Uint8Array>;

  generateEd25519(): Promise<{ pkcs8: Uint8Array; publicRaw: Uint8Array }>;
  importEd25519Private(pkcs8: Bytes): Promise<EngineKey>;
  importEd25519Public(raw: Bytes): Promise<EngineKey>;
  /** The raw public key of a PKCS#8 private key (PKCS#8 v1 does not carry it). */
  ed25519PublicRawFromPkcs8(pkcs8: Bytes): Promise<Uint8Array>;
  ed25519Sign(key: EngineKey, data: Bytes): Promise<Uint8Array>;
  ed25519Verify(key: EngineKey, signature: Bytes, data: Bytes): Promise<boolean>;

  /** RSA with SHA-256: OAEP to encrypt, PKCS #1 v1.5 to verify; one key per use. */
  importRsaPublic(spki: Bytes, use: 'encrypt' | 'verify'): Promise<EngineKey>;
  importRsaPrivate(pkcs8: Bytes, use: 'decrypt' | 'sign'): Promise<EngineKey>;
  rsaModulusBits(key: EngineKey): number;
  rsaOaepEncrypt(key: EngineKey, data: Bytes): Promise<Uint8Array>;
  rsaOaepDecrypt(key: EngineKey, data: Bytes): Promise<Uint8Array>;
  rsaSign(key: EngineKey, data: Bytes): Promise<Uint8Array>;
  rsaVerify(key: EngineKey, signature: Bytes, data: Bytes): Promise<boolean>;

  /** A WebCrypto key a caller holds (a browser's client key from IndexedDB), for this engine. */
  adoptCryptoKey(key: CryptoKey): EngineKey;
}

/** The engine for this call: node:crypto where engines/node/node-crypto.ts allows it, else WebCrypto. */
export function primitives(): HandshakePrimitives {
  const c = nodeCrypto();
  return c ? nodePrimitives(c) : webCryptoPrimitives;
}

/** The node:crypto modules warmed already (warmUpPrimitives). */
const warmed = new WeakSet<object>();

/**
 * Runs the node:crypto operations of a resumption's answer once on public test values (engines/node),
 * so that their first use in this process costs nothing extra later: for a wait, such as a client's for
 * RA. Once per process (later calls return at once); WebCrypto has nothing to warm. Never throws: this
 * is only an optimisation.
 */
export function warmUpPrimitives(): void {
  const c = nodeCrypto();
  if (!c || warmed.has(c)) return;
  warmed.add(c);
  try {
    warmNodeCrypto(c);
  } catch {
    // the real operation will report what is wrong
  }
}

export function sha256(data: Bytes): Promise<Uint8Array> {
  return primitives().sha256(data);
}
