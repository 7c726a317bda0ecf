/**
 * @module The KeyCrypto port on WebCrypto and node-forge only, so the Node and the Workers bridge
 * share one implementation. It mirrors agent/src/server/keys.ts (node:crypto) input for input:
 * `pub_key` is base64 of a PEM public key (SPKI or PKCS#1 RSA) or of a PEM X.509 certificate; RSA
 * of 2048 bits or more and Ed25519 are accepted; the result is the SPKI PEM exactly as Node exports
 * it, and md5_key is the base64 MD5 of that text. One deliberate difference: the agent also takes a
 * PEM *private* key there (createPublicKey derives the public half); this refuses it.
 *
 * What WebCrypto lacks comes from elsewhere: DER parsing and MD5 from forge (deep imports, see
 * node-forge.d.ts), and the raw RSA public operation of the original clients' proof from native
 * BigInt, about six times faster than forge's jsbn (0.2 ms against 1.4 ms for RSA-2048).
 * Parsing stays synchronous (the port's contract); only verification awaits WebCrypto.
 */
/// <reference path="./node-forge.d.ts" />
import asn1, { type Asn1 } from 'node-forge/lib/asn1.js';
import md5 from 'node-forge/lib/md5.js';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { proofMessage, type SignaturePurpose } from '@hostadm/shared/crypto/signed-messages.ts';
import type { KeyCrypto, KeyRecord, ParsedPublicKey } from './ports.ts';

const RSA_OID = '1.2.840.113549.1.1.1';
const ED25519_OID = '1.3.101.112';
/** Key types Node parses but the agent refuses by name ("unsupported key type ec"); others fail parsing. */
const NODE_KEY_TYPES: Record<string, string> = {
  '1.2.840.10045.2.1': 'ec',
  '1.2.840.113549.1.1.10': 'rsa-pss',
  '1.2.840.10040.4.1': 'dsa',
  '1.2.840.113549.1.3.1': 'dh',
  '1.2.840.10046.2.1': 'dh',
  '1.3.101.110': 'x25519',
  '1.3.101.111': 'x448',
  '1.3.101.113': 'ed448',
};

type PublicKey = { algorithm: 'rsa'; n: string; e: string } | { algorithm: 'ed25519'; raw: string } | { unsupported: string };

export class PortableKeyCrypto implements KeyCrypto {
  parsePublicKey(pubKeyB64: string): ParsedPublicKey {
    const text = base64Lenient(pubKeyB64);
    // As the agent: a private key sent as pub_key is a mistake worth naming, not a key to derive from.
    if (text.includes('PRIVATE KEY')) {
      throw badRequest('pub_key: this is a private key; send the public key (or certificate) only', [{ field: 'pub_key', message: 'private key given' }]);
    }
    // The agent's own test: any certificate marker sends the whole input down the X.509 path.
    const isCert = text.includes('BEGIN CERTIFICATE');
    let key: PublicKey;
    try {
      const block = pemBlock(text, isCert ? ['CERTIFICATE'] : ['PUBLIC KEY', 'RSA PUBLIC KEY']);
      if (!block) throw new Error('no PEM block');
      if (isCert) key = fromSpki(spkiOfCertificate(block.der));
      else key = block.label === 'RSA PUBLIC KEY' ? fromRsaPublicKey(der(block.der)) : fromSpki(der(block.der));
    } catch {
      throw badRequest('pub_key: not a base64 PEM public key or X.509 certificate', [
        { field: 'pub_key', message: 'must be base64 of a PEM public key or X.509 certificate' },
      ]);
    }
    if ('unsupported' in key) {
      throw badRequest(`pub_key: unsupported key type ${key.unsupported}; use RSA or Ed25519`, [{ field: 'pub_key', message: 'unsupported key type' }]);
    }
    if (key.algorithm === 'rsa') {
      const bits = bitLength(key.n);
      if (bits < 2048) throw badRequest(`pub_key: RSA keys need at least 2048 bits (got ${bits})`, [{ field: 'pub_key', message: 'RSA key too short' }]);
    }
    const spkiPem = toPem(toSpki(key));
    const digest = md5.create();
    digest.update(spkiPem, 'utf8');
    return { spkiPem, algorithm: key.algorithm, md5Key: btoa(digest.digest().getBytes()) };
  }

  /**
   * The agent's three proof forms over `challenge` issued for `purpose` (signed-messages.ts says which
   * bytes each covers): the original clients' RSA PKCS#1 v1.5 private-key encryption of the message, RSASSA-PKCS1-v1_5 with SHA-256, and Ed25519. A wrong or malformed proof is false.
   */
  async verifyProof(key: KeyRecord, purpose: SignaturePurpose, challenge: string, proofB64: string, form: 'original' | 'signature'): Promise<boolean> {
    const proof = bytes(base64Lenient(proofB64));
    if (proof.length === 0) return false;
    try {
      // Throws for a challenge of the wrong shape (only the `signature` form checks it; see proofMessage).
      const message = proofMessage(purpose, challenge, form);
      const block = pemBlock(key.spkiPem, ['PUBLIC KEY']);
      if (!block) return false;
      const parsed = fromSpki(der(block.der));
      if ('unsupported' in parsed) return false;
      const data = new TextEncoder().encode(message);
      const subtle = crypto.subtle;
      if (parsed.algorithm === 'ed25519') {
        if (form !== 'signature') return false;
        const cryptoKey = await subtle.importKey('spki', bytes(block.der), { name: 'Ed25519' }, false, ['verify']);
        return await subtle.verify({ name: 'Ed25519' }, cryptoKey, proof, data);
      }
      if (form === 'signature') {
        const cryptoKey = await subtle.importKey('spki', bytes(block.der), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['verify']);
        return await subtle.verify({ name: 'RSASSA-PKCS1-v1_5' }, cryptoKey, proof, data);
      }
      const plain = rsaPublicDecrypt(parsed.n, parsed.e, proof);
      // The agent compares byte length and then UTF-8 text; kept identical rather than "improved".
      return plain !== null && plain.length === data.length && new TextDecoder().decode(plain) === message;
    } catch {
      return false;
    }
  }
}

/**
 * Base64 → binary string the way Node's Buffer.from(s, 'base64') reads it: both alphabets, anything
 * else skipped, decoding stops at the first '=', a lone trailing character is dropped.
 */
function base64Lenient(s: string): string {
  let clean = s
    .split('=', 1)[0]!
    .replace(/[^A-Za-z0-9+/_-]/g, '')
    .replace(/-/g, '+')
    .replace(/_/g, '/');
  if (clean.length % 4 === 1) clean = clean.slice(0, -1);
  return atob(clean);
}

/**
 * The DER of the first PEM block with one of `labels`, read like OpenSSL's PEM reader in the cases
 * that matter: text and other blocks before it are skipped, trailing blanks and CRs are ignored,
 * the markers must start their lines, and the body must be strict base64.
 */
function pemBlock(text: string, labels: readonly string[]): { label: string; der: string } | null {
  const lines = text.split('\n').map((line) => line.trimEnd());
  for (let i = 0; i < lines.length; i++) {
    const label = /^-----BEGIN ([^-]+)-----$/.exec(lines[i]!)?.[1];
    if (label === undefined || !labels.includes(label)) continue;
    const end = lines.indexOf(`-----END ${label}-----`, i + 1);
    if (end < 0) return null;
    const body = lines
      .slice(i + 1, end)
      .join('')
      .replace(/[\t ]/g, '');
    if (body.length === 0 || body.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(body)) return null;
    return { label, der: atob(body) };
  }
  return null;
}

function der(binary: string): Asn1 {
  // Bit strings stay opaque: forge would otherwise guess whether an Ed25519 key "looks like" ASN.1.
  return asn1.fromDer(binary, { strict: true, parseAllBytes: true, decodeBitStrings: false });
}

function children(node: Asn1, type: number, min: number): Asn1[] {
  if (node.tagClass !== asn1.Class.UNIVERSAL || node.type !== type || !Array.isArray(node.value) || node.value.length < min) {
    throw new Error('unexpected ASN.1 structure');
  }
  return node.value;
}

function content(node: Asn1 | undefined, type: number): string {
  if (!node || node.tagClass !== asn1.Class.UNIVERSAL || node.type !== type || typeof node.value !== 'string') {
    throw new Error('unexpected ASN.1 structure');
  }
  return node.value;
}

/** Certificate → tbsCertificate → subjectPublicKeyInfo (the sixth field, seventh with a version). */
function spkiOfCertificate(binary: string): Asn1 {
  const [tbs] = children(der(binary), asn1.Type.SEQUENCE, 3);
  const fields = children(tbs!, asn1.Type.SEQUENCE, 6);
  const versioned = fields[0]!.tagClass === asn1.Class.CONTEXT_SPECIFIC && fields[0]!.type === 0;
  const spki = fields[versioned ? 6 : 5];
  if (!spki) throw new Error('certificate without a public key');
  return spki;
}

function fromSpki(spki: Asn1): PublicKey {
  const [algorithm, bitString] = children(spki, asn1.Type.SEQUENCE, 2);
  const [oidNode, params] = children(algorithm!, asn1.Type.SEQUENCE, 1);
  const oid = asn1.derToOid(content(oidNode, asn1.Type.OID));
  const bits = content(bitString, asn1.Type.BITSTRING);
  if (bits.charCodeAt(0) !== 0) throw new Error('public key bit string with unused bits');
  if (oid === RSA_OID) {
    if (params && params.type !== asn1.Type.NULL) throw new Error('RSA parameters');
    return fromRsaPublicKey(der(bits.slice(1)));
  }
  if (oid === ED25519_OID) {
    // RFC 8410: no parameters, exactly 32 key bytes (OpenSSL refuses anything else).
    if (params || bits.length !== 33) throw new Error('malformed Ed25519 key');
    return { algorithm: 'ed25519', raw: bits.slice(1) };
  }
  const known = NODE_KEY_TYPES[oid];
  if (known === undefined) throw new Error(`unknown key algorithm ${oid}`);
  return { unsupported: known };
}

/** PKCS#1 RSAPublicKey; integers are kept minimal (no sign padding) so the re-encoding is canonical. */
function fromRsaPublicKey(node: Asn1): PublicKey {
  const [n, e] = children(node, asn1.Type.SEQUENCE, 2).map((x) => unsigned(content(x, asn1.Type.INTEGER)));
  return { algorithm: 'rsa', n: n!, e: e! };
}

function unsigned(integer: string): string {
  if (integer.length === 0 || integer.charCodeAt(0) >= 0x80) throw new Error('negative or empty integer');
  const value = integer.replace(/^\0+/, '');
  if (value.length === 0) throw new Error('zero');
  return value;
}

function bitLength(magnitude: string): number {
  return (magnitude.length - 1) * 8 + (32 - Math.clz32(magnitude.charCodeAt(0)));
}

/** The SPKI DER Node exports: rsaEncryption with NULL parameters, or Ed25519 without any. */
function toSpki(key: { algorithm: 'rsa'; n: string; e: string } | { algorithm: 'ed25519'; raw: string }): string {
  const { UNIVERSAL } = asn1.Class;
  const { SEQUENCE, OID, NULL, INTEGER, BITSTRING } = asn1.Type;
  const integer = (m: string) => asn1.create(UNIVERSAL, INTEGER, false, m.charCodeAt(0) >= 0x80 ? `\0${m}` : m);
  const algorithm =
    key.algorithm === 'rsa'
      ? [asn1.create(UNIVERSAL, OID, false, asn1.oidToDer(RSA_OID).getBytes()), asn1.create(UNIVERSAL, NULL, false, '')]
      : [asn1.create(UNIVERSAL, OID, false, asn1.oidToDer(ED25519_OID).getBytes())];
  const publicKey = key.algorithm === 'rsa' ? asn1.toDer(asn1.create(UNIVERSAL, SEQUENCE, true, [integer(key.n), integer(key.e)])).getBytes() : key.raw;
  const spki = asn1.create(UNIVERSAL, SEQUENCE, true, [
    asn1.create(UNIVERSAL, SEQUENCE, true, algorithm),
    asn1.create(UNIVERSAL, BITSTRING, false, `\0${publicKey}`),
  ]);
  return asn1.toDer(spki).getBytes();
}

/** Node's PEM layout: 64-character lines, LF endings, a final newline. */
function toPem(spkiDer: string): string {
  const lines = btoa(spkiDer).match(/.{1,64}/g) ?? [];
  return `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`;
}

function bytes(binary: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function toBigInt(b: Uint8Array | string): bigint {
  let hex = '';
  for (let i = 0; i < b.length; i++) hex += (typeof b === 'string' ? b.charCodeAt(i) : b[i]!).toString(16).padStart(2, '0');
  return hex.length === 0 ? 0n : BigInt(`0x${hex}`);
}

/**
 * What OpenSSL's RSA_public_decrypt with RSA_PKCS1_PADDING returns for `proof`, or null where it
 * fails: proofs longer than the modulus or not below it, the key limits OpenSSL enforces there
 * (which also bound the exponent, so a registered key cannot make this slow), and anything but
 * 00 01, at least eight FF, 00, message.
 */
function rsaPublicDecrypt(nBytes: string, eBytes: string, proof: Uint8Array): Uint8Array | null {
  const size = nBytes.length;
  const nBits = bitLength(nBytes);
  const n = toBigInt(nBytes);
  const e = toBigInt(eBytes);
  if (proof.length > size || nBits > 16384 || e >= n || (nBits > 3072 && bitLength(eBytes) > 64)) return null;
  const c = toBigInt(proof);
  if (c >= n) return null;
  let m = 1n;
  for (let base = c, exp = e; exp > 0n; exp >>= 1n, base = (base * base) % n) if (exp & 1n) m = (m * base) % n;
  const hex = m.toString(16).padStart(size * 2, '0');
  const block = new Uint8Array(size);
  for (let i = 0; i < size; i++) block[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  if (block[0] !== 0x00 || block[1] !== 0x01) return null;
  let i = 2;
  while (i < size && block[i] === 0xff) i++;
  if (i === size || block[i] !== 0x00 || i - 2 < 8) return null;
  return block.subarray(i + 1);
}
