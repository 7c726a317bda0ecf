/**
 * Registered SSL keys and the proofs made with them. A key is accepted as base64 of a PEM public
 * key or of a PEM X.509 certificate (the spec's `register_ssl_cert`); RSA (2048 bits or more) and
 * Ed25519 are supported. The MD5 that identifies a key is taken over its SPKI PEM, the bytes an
 * original client hashes for `list_ssl_checksums`.
 */
import { X509Certificate, constants, createHash, createPublicKey, publicDecrypt, verify, type KeyObject } from 'node:crypto';
import { and, eq, gt, lte, sql } from 'drizzle-orm';
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { proofMessage, type SignaturePurpose } from '@hostadm/shared/crypto/signed-messages.ts';
import type { AgentDb } from '../store/db.ts';
import { keyAuthorizations, sslKeys } from '../store/schema.ts';
import type { Clock } from './context.ts';

export interface ParsedKey {
  spkiPem: string;
  algorithm: 'rsa' | 'ed25519';
  md5Key: string;
  key: KeyObject;
}

export function md5OfPem(pem: string): string {
  return createHash('md5').update(pem, 'utf8').digest('base64');
}

/** Parses `pub_key` (base64 of PEM key or certificate) and refuses weak or unknown key types. */
export function parsePublicKey(pubKeyB64: string): ParsedKey {
  const pem = Buffer.from(pubKeyB64.replace(/\s+/g, ''), 'base64').toString('utf8');
  // createPublicKey would derive a public key from a private one: a private key sent here is a
  // mistake (it has left the client), and the bridge refuses it too.
  if (pem.includes('PRIVATE KEY')) {
    throw badRequest('pub_key: this is a private key; send the public key (or certificate) only', [{ field: 'pub_key', message: 'private key given' }]);
  }
  let key: KeyObject;
  try {
    key = pem.includes('BEGIN CERTIFICATE') ? new X509Certificate(pem).publicKey : createPublicKey(pem);
  } catch {
    throw badRequest('pub_key: not a base64 PEM public key or X.509 certificate', [
      { field: 'pub_key', message: 'must be base64 of a PEM public key or X.509 certificate' },
    ]);
  }
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048) throw badRequest(`pub_key: RSA keys need at least 2048 bits (got ${bits})`, [{ field: 'pub_key', message: 'RSA key too short' }]);
  } else if (type !== 'ed25519') {
    throw badRequest(`pub_key: unsupported key type ${String(type)}; use RSA or Ed25519`, [{ field: 'pub_key', message: 'unsupported key type' }]);
  }
  const spkiPem = key.export({ type: 'spki', format: 'pem' }).toString();
  return { spkiPem, algorithm: type, md5Key: md5OfPem(spkiPem), key };
}

/**
 * Whether `proofB64` proves possession of the private key for `challenge` issued for `purpose`
 * (shared/src/crypto/signed-messages.ts says which bytes each form covers). Three forms are accepted:
 * the original clients' RSA PKCS#1 v1.5 private-key encryption of the message (checked by public
 * decryption), RSASSA-PKCS1-v1_5 with SHA-256, and Ed25519.
 */
export function verifyProof(key: KeyObject, purpose: SignaturePurpose, challenge: string, proofB64: string, form: 'original' | 'signature'): boolean {
  const proof = Buffer.from(proofB64, 'base64');
  if (proof.length === 0) return false;
  try {
    // Throws for a challenge of the wrong shape (only the `signature` form checks it; see proofMessage).
    const message = proofMessage(purpose, challenge, form);
    if (key.asymmetricKeyType === 'ed25519') {
      return form === 'signature' && verify(null, Buffer.from(message), key, proof);
    }
    if (form === 'signature') return verify('sha256', Buffer.from(message), key, proof);
    const plain = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, proof);
    return plain.length === Buffer.byteLength(message) && plain.toString('utf8') === message;
  } catch {
    return false;
  }
}

export interface StoredKey {
  user: string;
  pubKey: string;
  md5Key: string;
  algorithm: 'rsa' | 'ed25519';
  nickname: string;
  email: string;
  registeredAt: Date;
  key: KeyObject;
}

export class KeyRegistry {
  private readonly db: AgentDb;
  private readonly clock: Clock;
  private readonly listeners = new Set<() => void>();
  /** Every resumed channel re-checks its key's owner: prepared once, not built and prepared per channel. */
  private readonly ownerByMd5;

  constructor(db: AgentDb, clock: Clock) {
    this.db = db;
    this.clock = clock;
    this.ownerByMd5 = db
      .select({ user: sslKeys.user, algorithm: sslKeys.algorithm })
      .from(sslKeys)
      .where(eq(sslKeys.md5Key, sql.placeholder('md5')))
      .prepare();
  }

  register(user: string, pubKey: string, parsed: ParsedKey, meta: { nickname?: string; email?: string }): void {
    const owner = this.db.select({ user: sslKeys.user }).from(sslKeys).where(eq(sslKeys.md5Key, parsed.md5Key)).get();
    if (owner && owner.user !== user) throw new HostadmError('CONFLICT', 'pub_key is already registered to another user');
    this.db
      .insert(sslKeys)
      .values({
        user,
        pubKey,
        md5Key: parsed.md5Key,
        spkiPem: parsed.spkiPem,
        algorithm: parsed.algorithm,
        nickname: meta.nickname ?? '',
        email: meta.email ?? '',
        registeredAt: new Date(this.clock.now()),
      })
      .onConflictDoUpdate({
        target: [sslKeys.user, sslKeys.pubKey],
        set: { nickname: meta.nickname ?? '', email: meta.email ?? '' },
      })
      .run();
    this.changed();
  }

  /** Removes a key; returns its MD5, or null when the user has no such key. */
  revoke(user: string, pubKey: string): string | null {
    const normalized = pubKey.replace(/\s+/g, '');
    const where = and(eq(sslKeys.user, user), eq(sslKeys.pubKey, normalized));
    const row = this.db.select({ md5: sslKeys.md5Key }).from(sslKeys).where(where).get();
    if (!row) return null;
    this.db.delete(sslKeys).where(where).run();
    this.changed();
    return row.md5;
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  list(user?: string): StoredKey[] {
    const rows = user ? this.db.select().from(sslKeys).where(eq(sslKeys.user, user)).all() : this.db.select().from(sslKeys).all();
    return rows.map((r) => ({
      user: r.user,
      pubKey: r.pubKey,
      md5Key: r.md5Key,
      algorithm: r.algorithm,
      nickname: r.nickname,
      email: r.email,
      registeredAt: r.registeredAt,
      key: createPublicKey(r.spkiPem),
    }));
  }

  /** The key registered with this md5_key (one user per key, see `register`), or null. */
  findByMd5(md5Key: string): (StoredKey & { spkiPem: string }) | null {
    const row = this.db.select().from(sslKeys).where(eq(sslKeys.md5Key, md5Key)).get();
    if (!row) return null;
    return {
      user: row.user,
      pubKey: row.pubKey,
      md5Key: row.md5Key,
      algorithm: row.algorithm,
      nickname: row.nickname,
      email: row.email,
      registeredAt: row.registeredAt,
      key: createPublicKey(row.spkiPem),
      spkiPem: row.spkiPem,
    };
  }

  /** Who holds the key with this md5_key, without parsing it (a resumption's re-check, per channel). */
  ownerOf(md5Key: string): { user: string; algorithm: 'rsa' | 'ed25519' } | null {
    return this.ownerByMd5.get({ md5: md5Key }) ?? null;
  }

  /** Called after every register or revoke (the bridge link re-announces the checksums). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Lets the owner of `md5Key` register it for `user` by proving the key in a bridge channel, for
   * `ttlMs` (the on-host `hostadm agent keys authorize`; the row survives a restart).
   */
  authorize(md5Key: string, user: string, ttlMs: number): { expiresAt: Date } {
    const now = this.clock.now();
    const expiresAt = new Date(now + ttlMs);
    this.db
      .insert(keyAuthorizations)
      .values({ md5Key, user, createdAt: new Date(now), expiresAt })
      .onConflictDoUpdate({ target: keyAuthorizations.md5Key, set: { user, createdAt: new Date(now), expiresAt } })
      .run();
    this.changed();
    return { expiresAt };
  }

  /** The user an unexpired authorization names for this md5_key, or null. */
  authorizedUser(md5Key: string): string | null {
    const row = this.db
      .select({ user: keyAuthorizations.user })
      .from(keyAuthorizations)
      .where(and(eq(keyAuthorizations.md5Key, md5Key), gt(keyAuthorizations.expiresAt, new Date(this.clock.now()))))
      .get();
    return row?.user ?? null;
  }

  /** Registers a proven key for the user its authorization names and spends the authorization. */
  registerAuthorized(md5Key: string, pubKey: string, parsed: ParsedKey): string | null {
    const user = this.authorizedUser(md5Key);
    if (user === null || parsed.md5Key !== md5Key) return null;
    // Registered first: a key another user holds (409) leaves the authorization for the admin to see.
    this.register(user, pubKey, parsed, { nickname: 'authorized on the host' });
    this.db.delete(keyAuthorizations).where(eq(keyAuthorizations.md5Key, md5Key)).run();
    return user;
  }

  /** Unexpired authorizations, oldest first (expired ones are deleted on the way). */
  authorizations(): Array<{ md5Key: string; user: string; expiresAt: Date }> {
    const now = new Date(this.clock.now());
    this.db.delete(keyAuthorizations).where(lte(keyAuthorizations.expiresAt, now)).run();
    return this.db
      .select({ md5Key: keyAuthorizations.md5Key, user: keyAuthorizations.user, expiresAt: keyAuthorizations.expiresAt })
      .from(keyAuthorizations)
      .orderBy(keyAuthorizations.createdAt)
      .all();
  }

  /** What the agent tells its bridge it accepts: registered keys and keys authorized on the host. */
  bridgeChecksums(): string[] {
    return [...new Set([...this.checksums(), ...this.authorizations().map((a) => a.md5Key)])];
  }

  /**
   * Another process (the on-host `hostadm agent keys authorize`) may write keys into this database:
   * SQLite's data_version changes when it does, and listeners (the bridge link) hear of it.
   */
  watchOtherWriters(intervalMs: number): () => void {
    const version = () => this.db.get<{ data_version: number }>(sql`PRAGMA data_version`).data_version;
    let last = version();
    const timer = setInterval(() => {
      const now = version();
      if (now !== last) {
        last = now;
        this.changed();
      }
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Every registered key's md5_key, or only `user`'s (what a limited user may see). */
  checksums(user?: string): string[] {
    const query = this.db.select({ md5: sslKeys.md5Key }).from(sslKeys);
    const rows = user === undefined ? query.all() : query.where(eq(sslKeys.user, user)).all();
    return [...new Set(rows.map((r) => r.md5))];
  }
}
