/** @module The bridge's secrets in its data directory: `join-secret` and `admin-secret`, 0600, made at first use. */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const JOIN_SECRET_FILE = 'join-secret';
export const ADMIN_SECRET_FILE = 'admin-secret';
export const URL_FILE = 'bridge.url';

/**
 * The secret in `<dataDir>/<name>` (base64url text of 32 random bytes), created 0600 if missing.
 * `wx` makes creation atomic: two processes starting at once end up with the same secret.
 */
export function readOrCreateSecret(dataDir: string, name: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, name);
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // A secret readable by others is tightened rather than trusted as is.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < 32) throw new Error(`${file}: secret too short (expected 43 base64url characters)`);
  return secret;
}

/** The join secret as the key bytes jose signs with. */
export function joinSecretKey(dataDir: string): Uint8Array {
  return new TextEncoder().encode(readOrCreateSecret(dataDir, JOIN_SECRET_FILE));
}
