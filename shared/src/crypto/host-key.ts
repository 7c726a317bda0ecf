/**
 * The agent's host key (Ed25519): it signs the channel handshakes (hsc1/hsc2 A1, hsr1 RA) and the
 * agent's bridge sign-in, each under its own label (signed-messages.ts, transcript.ts).
 */
import { ed25519PublicRawFromPkcs8, hostKeyFingerprint, importEd25519PrivateKey, KeyFormatError, pemEncode } from './keys.ts';
import { primitives, type EngineKey } from './primitives.ts';
import { toBase64 } from './subtle.ts';

export interface HostKey {
  /** The Ed25519 signing key, for signing only (primitives.ts). */
  privateKey: EngineKey;
  /** The raw 32-byte public key, base64 (what `identify` reports as `host_key`). */
  publicRaw: string;
  /** `SHA256:<base64url>` of the raw public key. */
  fingerprint: string;
}

/** A new Ed25519 host key, for `<data>/host-key.pem` (PKCS#8). */
export async function generateHostKey(): Promise<{ privatePkcs8Pem: string; publicRaw: string; fingerprint: string }> {
  const { pkcs8, publicRaw: raw } = await primitives().generateEd25519();
  return { privatePkcs8Pem: pemEncode(pkcs8, 'PRIVATE KEY'), publicRaw: toBase64(raw), fingerprint: await hostKeyFingerprint(raw) };
}

/**
 * Loads a host key from its PKCS#8 PEM. `expectedPublicRaw` (base64), if given, must match: a host key
 * file paired with the wrong public key would otherwise only show up as every client's bad-signature.
 * Load once at start and pass the result as `hostKey`; this costs two imports.
 */
export async function hostKeyFromPem(pkcs8Pem: string, expectedPublicRaw?: string): Promise<HostKey> {
  const raw = await ed25519PublicRawFromPkcs8(pkcs8Pem);
  if (expectedPublicRaw !== undefined && toBase64(raw) !== expectedPublicRaw)
    throw new KeyFormatError('the host public key does not belong to the host private key');
  return { privateKey: await importEd25519PrivateKey(pkcs8Pem), publicRaw: toBase64(raw), fingerprint: await hostKeyFingerprint(raw) };
}
