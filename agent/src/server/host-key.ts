/**
 * The agent's long-term Ed25519 host key (docs/bridge-protocol.md §1): made at first start in the
 * data directory (0600) and never sent anywhere. Clients pin its fingerprint; the bridge channel's
 * handshake is signed with it, so a bridge cannot pose as this host.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HostKey {
  privateKey: KeyObject;
  /** PKCS#8 PEM of the private key (for the channel code, which imports it with WebCrypto). */
  privatePem: string;
  /** base64 of the raw 32-byte public key. */
  publicRaw: string;
  /** `SHA256:` + base64url (no padding) of SHA-256 over the raw public key. */
  fingerprint: string;
}

export function hostKeyFingerprint(publicRaw: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicRaw).digest('base64url')}`;
}

export function loadOrCreateHostKey(dataDir: string): HostKey {
  const path = join(dataDir, 'host-key.pem');
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync('ed25519');
    // 'wx' fails if another process created it meanwhile; then we read theirs below.
    try {
      writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  const privatePem = readFileSync(path, 'utf8');
  const privateKey = createPrivateKey(privatePem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`${path}: the host key must be Ed25519`);
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const raw = spki.subarray(spki.length - 32);
  return { privateKey, privatePem, publicRaw: raw.toString('base64'), fingerprint: hostKeyFingerprint(raw) };
}
