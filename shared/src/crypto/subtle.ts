/**
 * The runtime's WebCrypto, base64 and UTF-8, reached through `globalThis`.
 *
 * `shared` compiles with neither DOM nor Node types (it must run unchanged in Node, browsers and
 * Cloudflare Workers), so the few WebCrypto members this folder uses are declared here, narrowly: only
 * the algorithms and parameter shapes the hsc1 channel needs. Declaring them as local interfaces (not
 * global augmentations) keeps them from clashing with the DOM or Node declarations when a test or an
 * app compiles this code next to those.
 */

import { nodeCrypto } from './engines/node/node-crypto.ts';

export type Bytes = Uint8Array;

export type KeyUsage = 'encrypt' | 'decrypt' | 'sign' | 'verify' | 'deriveBits';

/** A WebCrypto key. Opaque here: it is only handed back to `subtle`. */
export interface CryptoKey {
  readonly type: 'public' | 'private' | 'secret';
  readonly extractable: boolean;
  readonly algorithm: { readonly name: string; readonly modulusLength?: number };
  readonly usages: readonly string[];
}

export interface CryptoKeyPair {
  readonly publicKey: CryptoKey;
  readonly privateKey: CryptoKey;
}

/** Only the members of an exported OKP JWK we read (`x` is the raw public key, base64url). */
export interface OkpJwk {
  readonly kty?: string;
  readonly crv?: string;
  readonly x?: string;
}

export type RsaHashedAlgorithm = { name: 'RSA-OAEP' | 'RSASSA-PKCS1-v1_5'; hash: 'SHA-256' };
export type ImportAlgorithm = { name: 'AES-GCM' | 'HKDF' | 'X25519' | 'Ed25519' } | RsaHashedAlgorithm | { name: 'HMAC'; hash: 'SHA-256' };
export type AesGcmParams = { name: 'AES-GCM'; iv: Bytes; additionalData: Bytes; tagLength: 128 };
export type HkdfParams = { name: 'HKDF'; hash: 'SHA-256'; salt: Bytes; info: Bytes };
export type X25519Params = { name: 'X25519'; public: CryptoKey };

export interface SubtleCrypto {
  digest(algorithm: 'SHA-256', data: Bytes): Promise<ArrayBuffer>;
  importKey(format: 'raw' | 'spki' | 'pkcs8', keyData: Bytes, algorithm: ImportAlgorithm, extractable: boolean, usages: KeyUsage[]): Promise<CryptoKey>;
  exportKey(format: 'raw' | 'pkcs8', key: CryptoKey): Promise<ArrayBuffer>;
  exportKey(format: 'jwk', key: CryptoKey): Promise<OkpJwk>;
  generateKey(algorithm: { name: 'X25519' | 'Ed25519' }, extractable: boolean, usages: KeyUsage[]): Promise<CryptoKeyPair>;
  encrypt(algorithm: AesGcmParams | { name: 'RSA-OAEP' }, key: CryptoKey, data: Bytes): Promise<ArrayBuffer>;
  decrypt(algorithm: AesGcmParams | { name: 'RSA-OAEP' }, key: CryptoKey, data: Bytes): Promise<ArrayBuffer>;
  sign(algorithm: { name: 'Ed25519' | 'RSASSA-PKCS1-v1_5' | 'HMAC' }, key: CryptoKey, data: Bytes): Promise<ArrayBuffer>;
  verify(algorithm: { name: 'Ed25519' | 'RSASSA-PKCS1-v1_5' | 'HMAC' }, key: CryptoKey, signature: Bytes, data: Bytes): Promise<boolean>;
  deriveBits(algorithm: HkdfParams | X25519Params, baseKey: CryptoKey, length: number): Promise<ArrayBuffer>;
}

interface WebCrypto {
  readonly subtle: SubtleCrypto;
  getRandomValues<T extends Uint8Array>(array: T): T;
}

interface TextEncoderLike {
  encode(input: string): Uint8Array;
  encodeInto(input: string, destination: Uint8Array): { read: number; written: number };
}
interface TextDecoderLike {
  decode(input: Uint8Array): string;
}

/** Node's `Buffer`, used only as a fast base64 codec when it exists (Node, Workers with nodejs_compat). */
interface BufferLike {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  toString(encoding: 'base64'): string;
}
interface BufferStatic {
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): BufferLike & { write(text: string, offset: number, encoding: 'base64'): number };
  from(text: string, encoding: 'base64'): BufferLike;
}

/** The TC39 base64 methods (ES2026); present in current browsers, not yet in Node 24. */
interface NativeBase64 {
  fromBase64?: (text: string) => Uint8Array;
}
interface NativeBase64Proto {
  toBase64?: (this: Uint8Array) => string;
  setFromBase64?: (this: Uint8Array, text: string) => { read: number; written: number };
}

interface RuntimeGlobals {
  crypto?: WebCrypto;
  TextEncoder?: new () => TextEncoderLike;
  TextDecoder?: new (label: 'utf-8', options: { fatal: boolean }) => TextDecoderLike;
  Buffer?: BufferStatic;
  btoa?: (binary: string) => string;
  atob?: (text: string) => string;
}

const runtime = globalThis as unknown as RuntimeGlobals;

/** Looked up on use, not at import, so that merely importing `shared` never fails. */
function webCrypto(): WebCrypto {
  const c = runtime.crypto;
  if (!c?.subtle || typeof c.getRandomValues !== 'function') {
    throw new Error('WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  }
  return c;
}

export function subtle(): SubtleCrypto {
  return webCrypto().subtle;
}

export function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  // On Node, reaching `globalThis.crypto` at all loads Node's WebCrypto modules (a cold CLI call pays that).
  const node = nodeCrypto();
  if (node) return node.randomFillSync(out);
  // getRandomValues refuses more than 65536 bytes per call.
  for (let i = 0; i < length; i += 65536) webCrypto().getRandomValues(out.subarray(i, Math.min(length, i + 65536)));
  return out;
}

// ---- UTF-8 ----

let encoder: TextEncoderLike | undefined;
let decoder: TextDecoderLike | undefined;

function textEncoder(): TextEncoderLike {
  if (!encoder) {
    if (!runtime.TextEncoder) throw new Error('TextEncoder is not available in this runtime');
    encoder = new runtime.TextEncoder();
  }
  return encoder;
}

export function utf8Encode(text: string): Uint8Array {
  return textEncoder().encode(text);
}

/** Encodes into `destination`, which must hold `3 × text.length` bytes; returns the bytes written. */
export function utf8EncodeInto(text: string, destination: Uint8Array): number {
  const { read, written } = textEncoder().encodeInto(text, destination);
  if (read !== text.length) throw new RangeError('utf8EncodeInto: destination too small');
  return written;
}

/** Encodes as much of `text` as fits in `destination` (whole characters): UTF-16 units read, bytes written. */
export function utf8EncodeIntoSome(text: string, destination: Uint8Array): { read: number; written: number } {
  return textEncoder().encodeInto(text, destination);
}

/** Strict: invalid UTF-8 throws (a peer sending it is broken or hostile, never to be guessed at). */
export function utf8Decode(bytes: Uint8Array): string {
  if (!decoder) {
    if (!runtime.TextDecoder) throw new Error('TextDecoder is not available in this runtime');
    decoder = new runtime.TextDecoder('utf-8', { fatal: true });
  }
  return decoder.decode(bytes);
}

// ---- base64 ----
// Speed matters: every sealed frame is base64 (16 KiB frames at hundreds of MB/s), and a pure-JS
// codec manages only ~150 MB/s. So the native codec is chosen once: the standard TC39 methods where
// they exist, else Node's Buffer, else btoa/atob (which every browser and Worker has).

const STRICT_B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const nativeFrom = (Uint8Array as unknown as NativeBase64).fromBase64;
const nativeTo = (Uint8Array.prototype as unknown as NativeBase64Proto).toBase64;
const nativeSetFrom = (Uint8Array.prototype as unknown as NativeBase64Proto).setFromBase64;
const NodeBuffer = runtime.Buffer;

function encodeJs(bytes: Uint8Array): string {
  if (!runtime.btoa) throw new Error('no base64 encoder in this runtime');
  let s = '';
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return runtime.btoa(s);
}

function decodeJs(text: string): Uint8Array {
  if (!runtime.atob) throw new Error('no base64 decoder in this runtime');
  const bin = runtime.atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function toBase64(bytes: Uint8Array): string {
  if (nativeTo) return nativeTo.call(bytes);
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return encodeJs(bytes);
}

/**
 * Decodes base64 whose well-formedness the caller does not need checked exactly: sealed frames, whose
 * bytes are authenticated anyway. Throws on a length that is not a whole number of quads, and on
 * characters outside the alphabet (caught by the decoded length, since Node's decoder skips them).
 * Node's decoder also takes `-`/`_` for `+`/`/`; that only gives a frame a second spelling.
 */
export function fromBase64Loose(text: string): Uint8Array {
  if (text.length % 4 !== 0) throw new Error('base64 length is not a multiple of 4');
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const expected = (text.length / 4) * 3 - pad;
  let out: Uint8Array;
  if (nativeFrom) out = nativeFrom(text);
  else if (NodeBuffer) {
    const b = NodeBuffer.from(text, 'base64');
    // A plain view: Buffer's own slice() shares memory, which callers of this module don't expect.
    out = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } else out = decodeJs(text);
  if (out.length !== expected) throw new Error('invalid base64');
  return out;
}

/**
 * `fromBase64Loose` into a caller's buffer (no allocation; for the hot path of opening frames).
 * Returns the number of bytes written; throws if `target` is too small or the text is not base64.
 */
export function fromBase64LooseInto(text: string, target: Uint8Array): number {
  if (text.length % 4 !== 0) throw new Error('base64 length is not a multiple of 4');
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const expected = (text.length / 4) * 3 - pad;
  if (expected > target.length) throw new RangeError('base64 target too small');
  let written: number;
  if (nativeSetFrom) written = nativeSetFrom.call(target, text).written;
  else if (NodeBuffer) written = NodeBuffer.from(target.buffer, target.byteOffset, target.byteLength).write(text, 0, 'base64');
  else {
    const bytes = decodeJs(text);
    target.set(bytes.subarray(0, Math.min(bytes.length, target.length)));
    written = bytes.length;
  }
  if (written !== expected) throw new Error('invalid base64');
  return written;
}

/** Strict standard base64 (padded, no whitespace); for handshake fields and keys, where input is small. */
export function fromBase64(text: string): Uint8Array {
  if (!STRICT_B64.test(text)) throw new Error('invalid base64');
  return fromBase64Loose(text);
}

export function isBase64(text: unknown): text is string {
  return typeof text === 'string' && STRICT_B64.test(text);
}

/** base64url without padding (RFC 4648 §5), as in host-key fingerprints and JWKs. */
export function toBase64Url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new Error('invalid base64url');
  const std = text.replace(/-/g, '+').replace(/_/g, '/');
  return fromBase64(std + '='.repeat((4 - (std.length % 4)) % 4));
}

// ---- bytes ----

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/**
 * Compares in time that depends only on the lengths (which are public here: MACs, keys, digests), so
 * that a mismatch position never leaks through timing.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

export function fromHex(hex: string): Uint8Array {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new Error('invalid hex');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
