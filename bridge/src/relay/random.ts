/** @module Random strings and the host-key fingerprint, on WebCrypto (every runtime has it). */

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

function randomFrom(alphabet: string, length: number): string {
  // Rejection sampling: bytes at or above the largest multiple of the alphabet size are skipped (no modulo bias).
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}

/** Letters and digits (test strings, sign-in tokens). */
export function randomAlnum(length: number): string {
  return randomFrom(ALNUM, length);
}

/** A registered key's id: `k` + 11 lowercase letters and digits (about 57 bits). */
export function newKeyId(): string {
  return `k${randomFrom(LOWER_ALNUM, 11)}`;
}

/** The DER bytes of a PEM block. */
export function pemBody(pem: string): Uint8Array<ArrayBuffer> {
  const b64 = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function base64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * `SHA256:` + base64url (no padding) of SHA-256 over the raw 32-byte Ed25519 public key
 * (docs/bridge-protocol.md §1); the raw key is the last 32 bytes of the 44-byte SPKI DER.
 */
export async function hostKeyFingerprint(spkiPem: string): Promise<string> {
  const der = pemBody(spkiPem);
  const raw = der.slice(der.length - 32);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', raw));
  // Joined rather than a template literal: one flat string, kept by every signed-in agent (a template would keep
  // a pair of pieces, one a slice of the padded base64: 128 bytes instead of 64).
  return ['SHA256', base64url(digest)].join(':');
}
