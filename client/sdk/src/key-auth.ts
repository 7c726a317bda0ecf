/**
 * Key sign-in, with WebCrypto only (Node 22+, browsers in secure contexts, Workers): the `auth_ssl`
 * stage-2 `signature` form, an RSASSA-PKCS1-v1_5/SHA-256 (RSA) or Ed25519 signature of a labelled test
 * string (one label for agents, another for bridges), base64; and the `proof` that `register_ssl_cert`
 * asks for, the same over the labelled session token. Private keys are PEM: PKCS#8 (`PRIVATE KEY`) or PKCS#1
 * (`RSA PRIVATE KEY`, wrapped into PKCS#8 here); encrypted keys are not supported.
 */
import type { CryptoKey } from '@hostadm/shared/crypto/subtle.ts';
import { signedMessage, type SignaturePurpose } from '@hostadm/shared/crypto/signed-messages.ts';
import { HostadmClientError } from './errors.ts';

export type KeyAlgorithm = 'rsa' | 'ed25519';

/**
 * An RSA client key held as WebCrypto keys rather than PEM text: what a browser keeps, non-extractable,
 * in IndexedDB. WebCrypto binds a key to one algorithm, so the one RSA key is two CryptoKeys: RSASSA-PKCS1-v1_5
 * (SHA-256) to sign, RSA-OAEP (SHA-256) to open the channel handshake's A1.
 */
export interface WebCryptoClientKey {
  sign: CryptoKey;
  decrypt: CryptoKey;
}

/** A client's private key: PEM text, or WebCrypto keys (never both). */
export type PrivateKeyMaterial = { privatePem: string; cryptoKeys?: undefined } | { cryptoKeys: WebCryptoClientKey; privatePem?: undefined };

/** What signChallenge takes: the PEM text or the WebCrypto keys of `key`. */
export function privateKeyOf(key: PrivateKeyMaterial): string | WebCryptoClientKey {
  return key.cryptoKeys ?? key.privatePem;
}

const RSA_OID = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const ED25519_OID = [0x06, 0x03, 0x2b, 0x65, 0x70];

export interface PemBlock {
  label: string;
  der: Uint8Array;
}

/** The first PEM block whose label matches (all blocks when no label is given). */
export function pemBlocks(pem: string): PemBlock[] {
  const out: PemBlock[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  for (let m = re.exec(pem); m; m = re.exec(pem)) out.push({ label: m[1]!, der: base64ToBytes(m[2]!.replace(/\s+/g, '')) });
  return out;
}

/** The PKCS#8 DER of a PEM private key, and its algorithm. */
export function privateKeyDer(privatePem: string): { der: Uint8Array; algorithm: KeyAlgorithm } {
  const blocks = pemBlocks(privatePem);
  const block = blocks.find((b) => /PRIVATE KEY$/.test(b.label));
  if (!block) throw new HostadmClientError('not a PEM private key (expected -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)');
  if (block.label === 'ENCRYPTED PRIVATE KEY')
    throw new HostadmClientError('encrypted private keys are not supported; decrypt it first (openssl pkcs8 -topk8 -nocrypt)');
  if (block.label === 'RSA PRIVATE KEY') return { der: pkcs1ToPkcs8(block.der), algorithm: 'rsa' };
  if (block.label !== 'PRIVATE KEY') throw new HostadmClientError(`unsupported private key type: ${block.label}`);
  // The AlgorithmIdentifier sits near the start of a PKCS#8 structure.
  const head = block.der.subarray(0, 32);
  if (contains(head, RSA_OID)) return { der: block.der, algorithm: 'rsa' };
  if (contains(head, ED25519_OID)) return { der: block.der, algorithm: 'ed25519' };
  throw new HostadmClientError('unsupported private key algorithm (RSA and Ed25519 keys are supported)');
}

/**
 * base64 signature, with the PEM private key, of the challenge a peer issued for `purpose`: label ‖
 * challenge (shared/src/crypto/signed-messages.ts). A challenge of the wrong shape is refused rather
 * than signed: a peer that could choose the bytes could make them spell another purpose's message.
 */
export async function signChallenge(privateKey: string | WebCryptoClientKey, purpose: SignaturePurpose, challenge: string): Promise<string> {
  let message: string;
  try {
    message = signedMessage(purpose, challenge);
  } catch (err) {
    throw new HostadmClientError((err as Error).message);
  }
  return signMessage(privateKey, message);
}

/** base64 signature of `message` (UTF-8) with the private key: RSA-SHA256 or Ed25519. Only signChallenge calls it. */
async function signMessage(privateKey: string | WebCryptoClientKey, message: string): Promise<string> {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleLike } }).crypto?.subtle;
  if (!subtle) throw new HostadmClientError('WebCrypto is not available here (browsers offer it only on https:// or localhost pages)');
  if (typeof privateKey !== 'string') {
    const signature = await subtle.sign('RSASSA-PKCS1-v1_5', privateKey.sign, new TextEncoder().encode(message));
    return bytesToBase64(new Uint8Array(signature));
  }
  const { der, algorithm } = privateKeyDer(privateKey);
  const params = algorithm === 'rsa' ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } : { name: 'Ed25519' };
  const key = await subtle.importKey('pkcs8', der, params, false, ['sign']);
  const signature = await subtle.sign(params.name, key, new TextEncoder().encode(message));
  return bytesToBase64(new Uint8Array(signature));
}

/** The part of WebCrypto used here (typed locally: the core is free of DOM and Node types). */
interface SubtleLike {
  importKey(format: 'pkcs8', keyData: Uint8Array, algorithm: object, extractable: boolean, usages: string[]): Promise<unknown>;
  sign(algorithm: string, key: unknown, data: Uint8Array): Promise<ArrayBuffer>;
}

/** Wraps a PKCS#1 RSAPrivateKey into a PKCS#8 PrivateKeyInfo. */
function pkcs1ToPkcs8(pkcs1: Uint8Array): Uint8Array {
  const version = [0x02, 0x01, 0x00];
  const algorithm = der(0x30, [...RSA_OID, 0x05, 0x00]);
  const key = der(0x04, [...pkcs1]);
  return new Uint8Array(der(0x30, [...version, ...algorithm, ...key]));
}

function der(tag: number, body: number[]): number[] {
  const n = body.length;
  let length: number[];
  if (n < 0x80) length = [n];
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    length = [0x80 | bytes.length, ...bytes];
  }
  return [tag, ...length, ...body];
}

function contains(haystack: Uint8Array, needle: number[]): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

export function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** base64 of a UTF-8 string (what `pub_key` is: base64 of the PEM text). */
export function textToBase64(text: string): string {
  return bytesToBase64(new TextEncoder().encode(text));
}
