/// <reference path="./forge-md5.d.ts" />
/**
 * Key formats and identities (docs/bridge-protocol.md §1): PEM ↔ DER, the md5_key of a public key,
 * the fingerprint of a host key, and WebCrypto imports for the algorithms the hsc1 channel uses.
 *
 * The DER handling is a few lines of tag-length-value walking rather than a general ASN.1 parser: we
 * only ever need to cut the SubjectPublicKeyInfo out of a certificate and wrap PKCS#1/raw keys in
 * their standard envelopes, and slicing the original bytes guarantees the SPKI we hash is exactly the
 * one in the certificate (a parse-and-re-encode round trip could normalise it).
 */
import { nodeCrypto } from './engines/node/node-crypto.ts';
import { primitives, sha256, type EngineKey } from './primitives.ts';
import { fromBase64, toBase64, toBase64Url, utf8Encode, type Bytes } from './subtle.ts';

export class KeyFormatError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeyFormatError';
  }
}

// ---- PEM ----

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** The first PEM block whose label is one of `labels`, decoded. */
export function pemDecode(text: string, labels: readonly string[]): { label: string; der: Uint8Array } {
  for (const m of text.matchAll(PEM_BLOCK)) {
    const label = m[1] ?? '';
    if (!labels.includes(label)) continue;
    const body = m[2] ?? '';
    // RFC 1421 headers (Proc-Type, DEK-Info) mean a legacy encrypted key, which we cannot use.
    if (body.includes(':')) throw new KeyFormatError(`PEM ${label} is encrypted; supply an unencrypted key`);
    try {
      return { label, der: fromBase64(body.replace(/\s+/g, '')) };
    } catch (cause) {
      throw new KeyFormatError(`PEM ${label} has an invalid base64 body`, { cause });
    }
  }
  throw new KeyFormatError(`no PEM block labelled ${labels.join(' or ')}`);
}

/** PEM as OpenSSL and Node write it: 64-column base64 lines and a trailing newline. */
export function pemEncode(der: Uint8Array, label: string): string {
  const b64 = toBase64(der);
  let body = '';
  for (let i = 0; i < b64.length; i += 64) body += `${b64.slice(i, i + 64)}\n`;
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

/**
 * The canonical SPKI PEM: byte for byte what Node's `KeyObject.export({type:'spki', format:'pem'})`
 * gives, which is what the agent hashes for md5_key (agent/src/server/keys.ts).
 */
export function spkiPemFromDer(spkiDer: Uint8Array): string {
  return pemEncode(spkiDer, 'PUBLIC KEY');
}

// ---- DER ----

interface Tlv {
  tag: number;
  start: number;
  contentStart: number;
  end: number;
}

function readTlv(der: Uint8Array, offset: number, limit: number): Tlv {
  const tag = der[offset];
  let length = der[offset + 1];
  if (tag === undefined || length === undefined || (tag & 0x1f) === 0x1f) throw new KeyFormatError('truncated or unsupported DER');
  let p = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4) throw new KeyFormatError('unsupported DER length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + (der[p++] ?? NaN);
  }
  const end = p + length;
  if (!Number.isFinite(end) || end > limit) throw new KeyFormatError('truncated DER');
  return { tag, start: offset, contentStart: p, end };
}

function childrenOf(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let p = parent.contentStart; p < parent.end; ) {
    const child = readTlv(der, p, parent.end);
    out.push(child);
    p = child.end;
  }
  return out;
}

function topLevelSequence(der: Uint8Array): Tlv {
  const top = readTlv(der, 0, der.length);
  if (top.tag !== 0x30 || top.end !== der.length) throw new KeyFormatError('DER is not a single SEQUENCE');
  return top;
}

function encodeTlv(tag: number, content: Uint8Array): Uint8Array {
  const len = content.length;
  const header =
    len < 0x80
      ? [tag, len]
      : len < 0x100
        ? [tag, 0x81, len]
        : len < 0x10000
          ? [tag, 0x82, len >> 8, len & 255]
          : [tag, 0x83, len >> 16, (len >> 8) & 255, len & 255];
  const out = new Uint8Array(header.length + len);
  out.set(header);
  out.set(content, header.length);
  return out;
}

const OID_RSA = Uint8Array.of(0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01);
const OID_ED25519 = Uint8Array.of(0x06, 0x03, 0x2b, 0x65, 0x70);
const OID_X25519 = Uint8Array.of(0x06, 0x03, 0x2b, 0x65, 0x6e);
/** AlgorithmIdentifier { rsaEncryption, NULL } */
const RSA_ALGORITHM_ID = encodeTlv(0x30, Uint8Array.of(...OID_RSA, 0x05, 0x00));

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export type KeyAlgorithmName = 'rsa' | 'ed25519' | 'x25519' | 'unknown';

/** Which algorithm an SPKI or PKCS#8 structure names (both carry the AlgorithmIdentifier early). */
export function keyAlgorithmOf(der: Uint8Array): KeyAlgorithmName {
  const parts = childrenOf(der, topLevelSequence(der));
  const algId = parts.find((p) => p.tag === 0x30);
  if (!algId) throw new KeyFormatError('no AlgorithmIdentifier');
  const oid = childrenOf(der, algId)[0];
  if (!oid) throw new KeyFormatError('empty AlgorithmIdentifier');
  const oidBytes = der.subarray(oid.start, oid.end);
  if (sameBytes(oidBytes, OID_RSA)) return 'rsa';
  if (sameBytes(oidBytes, OID_ED25519)) return 'ed25519';
  if (sameBytes(oidBytes, OID_X25519)) return 'x25519';
  return 'unknown';
}

/** The SubjectPublicKeyInfo of an X.509 certificate, as the exact bytes it holds. */
export function spkiFromCertificateDer(certDer: Uint8Array): Uint8Array {
  const [tbs] = childrenOf(certDer, topLevelSequence(certDer));
  if (tbs?.tag !== 0x30) throw new KeyFormatError('certificate has no TBSCertificate');
  const fields = childrenOf(certDer, tbs);
  // TBSCertificate: [0] version (optional), serial, signature, issuer, validity, subject, SPKI, ...
  const spki = fields[fields[0]?.tag === 0xa0 ? 6 : 5];
  if (spki?.tag !== 0x30) throw new KeyFormatError('certificate has no SubjectPublicKeyInfo');
  return certDer.slice(spki.start, spki.end);
}

/**
 * SPKI DER from a PEM public key in any form the agent accepts for `register_ssl_cert`: SPKI
 * (`PUBLIC KEY`), PKCS#1 RSA (`RSA PUBLIC KEY`) or an X.509 certificate.
 */
export function spkiDerFromPem(pem: string): Uint8Array {
  const { label, der } = pemDecode(pem, ['PUBLIC KEY', 'RSA PUBLIC KEY', 'CERTIFICATE']);
  if (label === 'CERTIFICATE') return spkiFromCertificateDer(der);
  if (label === 'RSA PUBLIC KEY') {
    topLevelSequence(der);
    // BIT STRING with 0 unused bits holding the PKCS#1 RSAPublicKey.
    return encodeTlv(0x30, Uint8Array.of(...RSA_ALGORITHM_ID, ...encodeTlv(0x03, Uint8Array.of(0, ...der))));
  }
  topLevelSequence(der);
  return der;
}

/** The SPKI PEM of a certificate's public key, canonical (see spkiPemFromDer). */
export function spkiPemFromCertificatePem(certPem: string): string {
  return spkiPemFromDer(spkiFromCertificateDer(pemDecode(certPem, ['CERTIFICATE']).der));
}

/** PKCS#8 DER from a PEM private key: `PRIVATE KEY`, or PKCS#1 `RSA PRIVATE KEY` (wrapped). */
export function pkcs8DerFromPem(pem: string): Uint8Array {
  const { label, der } = pemDecode(pem, ['PRIVATE KEY', 'RSA PRIVATE KEY', 'ENCRYPTED PRIVATE KEY']);
  if (label === 'ENCRYPTED PRIVATE KEY') throw new KeyFormatError('the private key is encrypted; supply an unencrypted key');
  topLevelSequence(der);
  if (label === 'RSA PRIVATE KEY') {
    // PrivateKeyInfo { version 0, rsaEncryption, OCTET STRING (RSAPrivateKey) }
    return encodeTlv(0x30, Uint8Array.of(0x02, 0x01, 0x00, ...RSA_ALGORITHM_ID, ...encodeTlv(0x04, der)));
  }
  return der;
}

// ---- raw Curve25519 keys (RFC 8410 envelopes) ----

const ED25519_SPKI_PREFIX = Uint8Array.of(0x30, 0x2a, 0x30, 0x05, ...OID_ED25519, 0x03, 0x21, 0x00);
const PKCS8_PREFIX = (oid: Uint8Array) => Uint8Array.of(0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, ...oid, 0x04, 0x22, 0x04, 0x20);

/** The raw 32-byte Ed25519 public key inside an SPKI. */
export function ed25519RawFromSpki(spkiDer: Uint8Array): Uint8Array {
  if (spkiDer.length !== 44 || !sameBytes(spkiDer.subarray(0, 12), ED25519_SPKI_PREFIX)) throw new KeyFormatError('not an Ed25519 SPKI');
  return spkiDer.slice(12);
}

export function ed25519SpkiFromRaw(raw: Uint8Array): Uint8Array {
  if (raw.length !== 32) throw new KeyFormatError('an Ed25519 public key is 32 bytes');
  return Uint8Array.of(...ED25519_SPKI_PREFIX, ...raw);
}

/**
 * PKCS#8 for a raw 32-byte X25519 or Ed25519 private key: WebCrypto cannot import those raw, and the
 * test vectors need fixed private keys.
 */
export function curve25519PrivatePkcs8(raw: Uint8Array, curve: 'x25519' | 'ed25519'): Uint8Array {
  if (raw.length !== 32) throw new KeyFormatError('a Curve25519 private key is 32 bytes');
  return Uint8Array.of(...PKCS8_PREFIX(curve === 'x25519' ? OID_X25519 : OID_ED25519), ...raw);
}

// ---- identities ----

/**
 * MD5 of `text` as UTF-8: node:crypto's where the engine is node (engines/node/node-crypto.ts), else
 * node-forge's (WebCrypto has no MD5), loaded only then: a cold `hostadm call` neither loads nor
 * initialises node-forge.
 */
async function md5Bytes(text: string): Promise<Uint8Array> {
  const c = nodeCrypto();
  if (c) return c.createHash('md5').update(utf8Encode(text)).digest();
  const { default: md5 } = await import('node-forge/lib/md5.js');
  const digest = md5.create().update(text, 'utf8').digest().getBytes();
  return Uint8Array.from(digest, (ch) => ch.charCodeAt(0));
}

/**
 * A key's md5_key: base64(MD5(canonical SPKI PEM)). Any accepted public-key PEM form (or a
 * certificate) is first brought to the canonical text, so the result always equals the agent's
 * `md5OfPem(createPublicKey(pem).export({type:'spki', format:'pem'}))`.
 */
export async function md5Key(publicPem: string): Promise<string> {
  return toBase64(await md5Bytes(spkiPemFromDer(spkiDerFromPem(publicPem))));
}

/** `SHA256:` + base64url (no padding) of SHA-256 over the raw 32-byte Ed25519 public key. */
export async function hostKeyFingerprint(publicRaw: Uint8Array | string): Promise<string> {
  const raw = typeof publicRaw === 'string' ? fromBase64(publicRaw) : publicRaw;
  if (raw.length !== 32) throw new KeyFormatError('a host key is a 32-byte Ed25519 public key');
  return `SHA256:${toBase64Url(await sha256(raw))}`;
}

// ---- key imports ----
// Every key is imported for one use (primitives.ts): a key that can only do what it is for cannot be
// misused by a later bug (e.g. an OAEP key used to sign).

async function importOrThrow(what: string, run: () => Promise<EngineKey>): Promise<EngineKey> {
  try {
    return await run();
  } catch (cause) {
    if (cause instanceof KeyFormatError) throw cause;
    throw new KeyFormatError(`cannot import ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

function rsaSpki(publicPem: string): Bytes {
  const spki = spkiDerFromPem(publicPem);
  if (keyAlgorithmOf(spki) !== 'rsa') throw new KeyFormatError('not an RSA public key');
  return spki;
}

function rsaPkcs8(privatePem: string): Bytes {
  const pkcs8 = pkcs8DerFromPem(privatePem);
  if (keyAlgorithmOf(pkcs8) !== 'rsa') throw new KeyFormatError('not an RSA private key');
  return pkcs8;
}

/** RSA-OAEP (SHA-256) public key, to encrypt the A1 secrets to a client. */
export function importRsaOaepPublicKey(publicPem: string): Promise<EngineKey> {
  return importOrThrow('RSA-OAEP public key', () => primitives().importRsaPublic(rsaSpki(publicPem), 'encrypt'));
}

/** RSA-OAEP (SHA-256) private key, for the client to open A1. */
export function importRsaOaepPrivateKey(privatePem: string): Promise<EngineKey> {
  return importOrThrow('RSA-OAEP private key', () => primitives().importRsaPrivate(rsaPkcs8(privatePem), 'decrypt'));
}

/** RSASSA-PKCS1-v1_5 (SHA-256) private key, for the client to sign C2. */
export function importRsaSigningKey(privatePem: string): Promise<EngineKey> {
  return importOrThrow('RSA signing key', () => primitives().importRsaPrivate(rsaPkcs8(privatePem), 'sign'));
}

/** RSASSA-PKCS1-v1_5 (SHA-256) public key, for the agent to verify C2. */
export function importRsaVerifyKey(publicPem: string): Promise<EngineKey> {
  return importOrThrow('RSA verify key', () => primitives().importRsaPublic(rsaSpki(publicPem), 'verify'));
}

function ed25519Pkcs8(pkcs8: string | Uint8Array): Uint8Array {
  const der = typeof pkcs8 === 'string' ? pkcs8DerFromPem(pkcs8) : pkcs8;
  if (keyAlgorithmOf(der) !== 'ed25519') throw new KeyFormatError('not an Ed25519 private key');
  return der;
}

/** Ed25519 private key from PKCS#8 (PEM or DER), to sign. */
export function importEd25519PrivateKey(pkcs8: string | Uint8Array): Promise<EngineKey> {
  return importOrThrow('Ed25519 private key', async () => primitives().importEd25519Private(ed25519Pkcs8(pkcs8)));
}

/**
 * Imported Ed25519 public keys, by engine and raw key: a host key is verified in every handshake and
 * resumption with it (a resumption imports it ahead, while R1 is on its way: resumption.ts), and an import is most of
 * a verification's cost. Named by the key's own bytes, so another key (a host key that changed and was
 * pinned anew) never meets an import of the old one; a public key is no secret to keep.
 */
const importedEd25519 = new Map<string, EngineKey>();
const IMPORTED_ED25519_MAX = 32;

/** Ed25519 public key from its raw 32 bytes, or from SPKI PEM. */
export function importEd25519PublicKey(key: Uint8Array | string): Promise<EngineKey> {
  return importOrThrow('Ed25519 public key', async () => {
    const raw = typeof key === 'string' ? ed25519RawFromSpki(spkiDerFromPem(key)) : key;
    if (raw.length !== 32) throw new KeyFormatError('an Ed25519 public key is 32 bytes');
    const engine = primitives();
    const name = `${engine.engine}:${toBase64(raw)}`;
    const known = importedEd25519.get(name);
    if (known) return known;
    const imported = await engine.importEd25519Public(raw);
    if (importedEd25519.size >= IMPORTED_ED25519_MAX) importedEd25519.delete(importedEd25519.keys().next().value as string);
    importedEd25519.set(name, imported);
    return imported;
  });
}

/** The raw public key that belongs to an Ed25519 PKCS#8 private key (PKCS#8 v1, what Node and OpenSSL write, does not carry it). */
export async function ed25519PublicRawFromPkcs8(pkcs8: string | Uint8Array): Promise<Uint8Array> {
  try {
    return await primitives().ed25519PublicRawFromPkcs8(ed25519Pkcs8(pkcs8));
  } catch (cause) {
    if (cause instanceof KeyFormatError) throw cause;
    throw new KeyFormatError(`cannot read the Ed25519 private key: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
