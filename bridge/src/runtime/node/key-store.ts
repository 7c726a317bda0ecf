/**
 * @module The KeyStore port on SQLite (node:sqlite through Drizzle, shared/src/node/sqlite.ts): the
 * bridge's database in `<data>/bridge.db`, migrated at open from `bridge/src/db/migrations` (the same
 * files D1 applies). Bound parameters only (Drizzle's query builder); the driver is synchronous, the
 * port is not.
 */
import { and, asc, eq, gt, gte, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import { openSqlite, type SqliteDb } from '@hostadm/shared/node/sqlite.ts';
import { tightenPrivateTree } from '@hostadm/shared/node/private-files.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyRecordOf, liveAgentNamed, prunable } from '../../db/records.ts';
import * as schema from '../../db/schema.ts';
import { authFailures, blacklist, bridgeKeys, usedJoinTokens } from '../../db/schema.ts';
import type { BlacklistRule, EnrollOutcome, KeyRecord, KeyStore, NewKey, PeerKind, PrunedRows } from '../../relay/ports.ts';

export type BridgeDb = SqliteDb<typeof schema>;

const MIGRATIONS = fileURLToPath(new URL('../../db/migrations', import.meta.url));

export class SqliteKeyStore implements KeyStore {
  readonly db: BridgeDb;
  private readonly closeDb: () => void;
  /** Paths under the data directory whose modes were wider than 0700/0600 and were tightened on open. */
  readonly tightened: string[];
  /** Every sign-in reads its key by md5_key: prepared once rather than built and prepared per call. */
  private readonly keyByMd5;

  /** Opens (creating and migrating) `<dataDir>/bridge.db`. */
  constructor(dataDir: string) {
    // Secrets and key metadata live here: nobody but the bridge's user reads them.
    this.tightened = tightenPrivateTree(dataDir);
    // Created 0600, WAL and a busy timeout: the CLI (keys list/revoke) reads and writes while a bridge runs.
    const { db, close } = openSqlite(join(dataDir, 'bridge.db'), { schema, migrationsFolder: MIGRATIONS });
    this.db = db;
    this.closeDb = close;
    this.keyByMd5 = db
      .select()
      .from(bridgeKeys)
      .where(eq(bridgeKeys.md5Key, sql.placeholder('md5')))
      .prepare();
  }

  close(): void {
    this.closeDb();
  }

  async getByMd5(md5Key: string): Promise<KeyRecord | null> {
    const row = this.keyByMd5.get({ md5: md5Key });
    return row ? keyRecordOf(row) : null;
  }

  async find(ref: string): Promise<KeyRecord | null> {
    const row = this.db
      .select()
      .from(bridgeKeys)
      .where(or(eq(bridgeKeys.id, ref), eq(bridgeKeys.md5Key, ref)))
      .get();
    return row ? keyRecordOf(row) : null;
  }

  async listActive(kind: PeerKind): Promise<KeyRecord[]> {
    return this.db
      .select()
      .from(bridgeKeys)
      .where(and(eq(bridgeKeys.kind, kind), isNull(bridgeKeys.revokedAt)))
      .all()
      .map(keyRecordOf);
  }

  async list(): Promise<KeyRecord[]> {
    return this.db.select().from(bridgeKeys).orderBy(bridgeKeys.createdAt, bridgeKeys.id).all().map(keyRecordOf);
  }

  async enroll(token: { jti: string; expiresAt: number }, key: NewKey, now: number): Promise<EnrollOutcome> {
    return this.db.transaction((tx): EnrollOutcome => {
      if (tx.select({ jti: usedJoinTokens.jti }).from(usedJoinTokens).where(eq(usedJoinTokens.jti, token.jti)).get()) {
        return { ok: false, reason: 'token-used' };
      }
      const existing = tx.select({ revokedAt: bridgeKeys.revokedAt }).from(bridgeKeys).where(eq(bridgeKeys.md5Key, key.md5Key)).get();
      if (existing) return { ok: false, reason: existing.revokedAt ? 'key-revoked' : 'key-exists' };
      if (key.kind === 'agent' && key.nickname !== '' && tx.select({ id: bridgeKeys.id }).from(bridgeKeys).where(liveAgentNamed(key.nickname)).get()) {
        return { ok: false, reason: 'nickname-taken' };
      }
      // An expired token is refused by its signature check already, so its jti need not be kept.
      tx.delete(usedJoinTokens)
        .where(lt(usedJoinTokens.expiresAt, new Date(now)))
        .run();
      tx.insert(usedJoinTokens)
        .values({ jti: token.jti, usedAt: new Date(now), expiresAt: new Date(token.expiresAt), keyId: key.id })
        .run();
      tx.insert(bridgeKeys)
        .values({ ...key, createdAt: new Date(key.createdAt) })
        .run();
      return { ok: true, key: { ...key, lastSeenAt: null, revokedAt: null } };
    });
  }

  async revoke(ref: string, now: number): Promise<KeyRecord | null> {
    return this.db.transaction((tx) => {
      const where = or(eq(bridgeKeys.id, ref), eq(bridgeKeys.md5Key, ref));
      tx.update(bridgeKeys)
        .set({ revokedAt: new Date(now) })
        .where(and(where, isNull(bridgeKeys.revokedAt)))
        .run();
      const row = tx.select().from(bridgeKeys).where(where).get();
      return row ? keyRecordOf(row) : null;
    });
  }

  async revokedSince(since: number): Promise<KeyRecord[]> {
    return this.db
      .select()
      .from(bridgeKeys)
      .where(gte(bridgeKeys.revokedAt, new Date(since)))
      .all()
      .map(keyRecordOf);
  }

  async touch(keyId: string, now: number): Promise<void> {
    this.db
      .update(bridgeKeys)
      .set({ lastSeenAt: new Date(now) })
      .where(eq(bridgeKeys.id, keyId))
      .run();
  }

  async isBlocked(address: string, now: number): Promise<boolean> {
    const row = this.db.select({ until: blacklist.until }).from(blacklist).where(eq(blacklist.address, address)).get();
    if (!row) return false;
    if (row.until.getTime() > now) return true;
    this.db.delete(blacklist).where(eq(blacklist.address, address)).run();
    return false;
  }

  async recordFailure(address: string, now: number, rule: BlacklistRule): Promise<boolean> {
    const windowStart = new Date(now - rule.windowMs);
    return this.db.transaction((tx) => {
      tx.delete(authFailures).where(lt(authFailures.at, windowStart)).run();
      tx.insert(authFailures)
        .values({ address, at: new Date(now) })
        .run();
      const recent = tx
        .select({ id: authFailures.id })
        .from(authFailures)
        .where(and(eq(authFailures.address, address), gt(authFailures.at, windowStart)))
        .all().length;
      if (recent < rule.failures) return false;
      const until = new Date(now + rule.blockMs);
      tx.insert(blacklist)
        .values({ address, until, reason: `${recent} failed sign-ins within ${rule.windowMs / 1000} s` })
        .onConflictDoUpdate({ target: blacklist.address, set: { until } })
        .run();
      tx.delete(authFailures).where(eq(authFailures.address, address)).run();
      return true;
    });
  }

  /** One transaction; each delete takes the `limit` oldest prunable rows of its table. */
  async prune(now: number, rule: BlacklistRule, limit: number): Promise<PrunedRows> {
    const where = prunable(now, rule);
    return this.db.transaction((tx) => ({
      usedJoinTokens: tx
        .delete(usedJoinTokens)
        .where(
          inArray(
            usedJoinTokens.jti,
            tx.select({ jti: usedJoinTokens.jti }).from(usedJoinTokens).where(where.usedJoinTokens).orderBy(asc(usedJoinTokens.expiresAt)).limit(limit),
          ),
        )
        .run().changes,
      blacklist: tx
        .delete(blacklist)
        .where(
          inArray(
            blacklist.address,
            tx.select({ address: blacklist.address }).from(blacklist).where(where.blacklist).orderBy(asc(blacklist.until)).limit(limit),
          ),
        )
        .run().changes,
      authFailures: tx
        .delete(authFailures)
        .where(
          inArray(authFailures.id, tx.select({ id: authFailures.id }).from(authFailures).where(where.authFailures).orderBy(asc(authFailures.at)).limit(limit)),
        )
        .run().changes,
    }));
  }
}
