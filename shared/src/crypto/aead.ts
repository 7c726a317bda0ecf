/**
 * @module The hsc1 channel's AES-256-GCM, one interface with two engines chosen at key import:
 *
 * - WebCrypto (`crypto.subtle`): browsers, Cloudflare Workers, and any runtime without the next one;
 * - `node:crypto` with a KeyObject, where the runtime offers `process.getBuiltinModule` (Node ≥ 22):
 *   Node's WebCrypto spends ~30 µs of main-thread time per call (argument checks, a copy, a thread-pool
 *   hop) against ~10 µs of AES at 16 KiB, which capped a channel below 500 MB/s per side; a
 *   KeyObject-keyed cipher does the same AES-GCM inline (a raw Buffer key costs Node 24 a thrown and
 *   caught error per call, hence KeyObject). test/bench/crypto.bench.ts measures both.
 *
 * Both produce the same bytes (ciphertext ‖ 16-byte tag) for the same key, nonce and AAD: the test
 * vectors run against each engine. engines/node/node-crypto.ts decides where node:crypto is used, for
 * this and for the handshakes' primitives (primitives.ts); `HOSTADM_HSC1_ENGINE=webcrypto` forces WebCrypto on Node.
 */
import { allocUnsafe } from './channel-frames.ts';
import { nodeCrypto, type NodeCrypto, type NodeKeyObject } from './engines/node/node-crypto.ts';
import { subtle, type CryptoKey } from './subtle.ts';

export interface AeadKey {
  readonly engine: 'webcrypto' | 'node';
  /** ciphertext ‖ tag; the input may be reused by the caller as soon as this returns. */
  seal(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): Promise<Uint8Array>;
  /** Rejects when authentication fails; the input may be reused as soon as this returns. */
  open(iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Promise<Uint8Array>;
  /** Engines that work inline also offer these (throwing instead of rejecting): no promise per frame. */
  sealSync?(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): { ciphertext: Uint8Array; tag: Uint8Array };
  /**
   * A new buffer of `headroom` bytes the caller fills, then ciphertext ‖ tag: a whole binary frame
   * in one allocation, the ciphertext copied once (the cipher allocates its own output). `allocate`
   * gives that buffer (default: a new one; channel-frame-pool.ts hands out reused ones).
   */
  sealIntoSync?(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array, headroom: number, allocate?: (size: number) => Uint8Array): Uint8Array;
  /** Opens `sealed` from byte `from` on (ciphertext ‖ tag), so a frame need not be sliced first. */
  openSync?(iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array, from?: number): Uint8Array;
}

const TAG_BYTES = 16;

function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

class NodeAeadKey implements AeadKey {
  readonly engine = 'node';
  private readonly c: NodeCrypto;
  private readonly key: NodeKeyObject;

  constructor(c: NodeCrypto, raw: Uint8Array) {
    this.c = c;
    this.key = c.createSecretKey(raw);
  }

  /** The two parts as the cipher made them: joining 16 KiB costs a copy the framing can avoid. */
  sealSync(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): { ciphertext: Uint8Array; tag: Uint8Array } {
    const cipher = this.c.createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad);
    const ciphertext = cipher.update(plain);
    cipher.final();
    return { ciphertext, tag: cipher.getAuthTag() };
  }

  sealIntoSync(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array, headroom: number, allocate = allocUnsafe): Uint8Array {
    const cipher = this.c.createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad);
    const ciphertext = cipher.update(plain);
    cipher.final();
    const out = allocate(headroom + ciphertext.length + TAG_BYTES);
    out.set(ciphertext, headroom);
    out.set(cipher.getAuthTag(), headroom + ciphertext.length);
    return out;
  }

  openSync(iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array, from = 0): Uint8Array {
    const tagAt = sealed.length - TAG_BYTES;
    if (tagAt < from) throw new Error('sealed data shorter than the tag');
    const decipher = this.c.createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.subarray(tagAt));
    const plain = decipher.update(sealed.subarray(from, tagAt));
    decipher.final(); // throws when the tag does not match
    return plain;
  }

  seal(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): Promise<Uint8Array> {
    try {
      const { ciphertext, tag } = this.sealSync(iv, aad, plain);
      return Promise.resolve(joined(ciphertext, tag));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  open(iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Promise<Uint8Array> {
    try {
      return Promise.resolve(this.openSync(iv, aad, sealed));
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

class WebCryptoAeadKey implements AeadKey {
  readonly engine = 'webcrypto';
  private readonly key: CryptoKey;

  constructor(key: CryptoKey) {
    this.key = key;
  }

  async seal(iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: aad, tagLength: 128 }, this.key, plain));
  }

  async open(iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(await subtle().decrypt({ name: 'AES-GCM', iv, additionalData: aad, tagLength: 128 }, this.key, sealed));
  }
}

/**
 * Imports a 32-byte AES-256-GCM key for one use. WebCrypto keys are non-extractable and limited to
 * that use; a Node KeyObject lives in the same process either way.
 */
export async function importAeadKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt', engine: 'auto' | 'webcrypto' = 'auto'): Promise<AeadKey> {
  const c = engine === 'auto' ? nodeCrypto() : null;
  if (c) return new NodeAeadKey(c, raw);
  return new WebCryptoAeadKey(await subtle().importKey('raw', raw, { name: 'AES-GCM' }, false, [usage]));
}
