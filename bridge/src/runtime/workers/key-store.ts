/**
 * @module The KeyStore port on D1 (drizzle-orm/d1): the same schema and migrations as the Node
 * bridge's SQLite file (`bridge/src/db/`), applied with `wrangler d1 migrations apply`. D1 has no
 * interactive transactions, so what must be atomic is one `batch` (D1 runs a batch as one
 * transaction and rolls it back when a statement fails); bound parameters only.
 */
import { and, asc, eq, gt, gte, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import { drizzle, type DrizzleD1Database } from 'drizzle-orm/d1';
import { keyRecordOf, liveAgentNamed, prunable } from '../../db/records.ts';
import * as schema from '../../db/schema.ts';
import { authFailures, blacklist, bridgeKeys, usedJoinTokens } from '../../db/schema.ts';
import type { BlacklistRule, EnrollOutcome, KeyRecord, KeyStore, NewKey, PeerKind, PrunedRows } from '../../relay/ports.ts';

export class D1KeyStore implements KeyStore {
  readonly db: DrizzleD1Database<typeof schema>;

  constructor(d1: D1Database) {
    this.db = drizzle(d1, { schema });
  }

  async getByMd5(md5Key: string): Promise<KeyRecord | null> {
    const row = await this.db.select().from(bridgeKeys).where(eq(bridgeKeys.md5Key, md5Key)).get();
    return row ? keyRecordOf(row) : null;
  }

  async find(ref: string): Promise<KeyRecord | null> {
    const row = await this.db
      .select()
      .from(bridgeKeys)
      .where(or(eq(bridgeKeys.id, ref), eq(bridgeKeys.md5Key, ref)))
      .get();
    return row ? keyRecordOf(row) : null;
  }

  async listActive(kind: PeerKind): Promise<KeyRecord[]> {
    return (
      await this.db
        .select()
        .from(bridgeKeys)
        .where(and(eq(bridgeKeys.kind, kind), isNull(bridgeKeys.revokedAt)))
        .all()
    ).map(keyRecordOf);
  }

  async list(): Promise<KeyRecord[]> {
    return (await this.db.select().from(bridgeKeys).orderBy(bridgeKeys.createdAt, bridgeKeys.id).all()).map(keyRecordOf);
  }

  /**
   * One batch: the token's jti (primary key) and the key (unique md5_key) go in together or not at
   * all; when the batch fails, a read says which constraint it was.
   */
  async enroll(token: { jti: string; expiresAt: number }, key: NewKey, now: number): Promise<EnrollOutcome> {
    // Checked before the batch, in the Node store's order (a spent token says nothing about names):
    // D1 batches cannot branch. Two enrollments of one nickname in the same instant could both pass;
    // the hub serializes its own calls, so only two hubs racing could.
    if (
      key.kind === 'agent' &&
      key.nickname !== '' &&
      (await this.db.select({ id: bridgeKeys.id }).from(bridgeKeys).where(liveAgentNamed(key.nickname)).get())
    ) {
      const refusal = await this.refusalOf(token, key);
      return { ok: false, reason: refusal ?? 'nickname-taken' };
    }
    try {
      await this.db.batch([
        this.db.delete(usedJoinTokens).where(lt(usedJoinTokens.expiresAt, new Date(now))),
        this.db.insert(usedJoinTokens).values({ jti: token.jti, usedAt: new Date(now), expiresAt: new Date(token.expiresAt), keyId: key.id }),
        this.db.insert(bridgeKeys).values({ ...key, createdAt: new Date(key.createdAt) }),
      ]);
      return { ok: true, key: { ...key, lastSeenAt: null, revokedAt: null } };
    } catch (err) {
      const refusal = await this.refusalOf(token, key);
      if (refusal) return { ok: false, reason: refusal };
      throw err;
    }
  }

  /** Why the token or the key cannot enroll (a used token first, then a key already known), if either. */
  private async refusalOf(token: { jti: string }, key: NewKey): Promise<'token-used' | 'key-exists' | 'key-revoked' | undefined> {
    const used = await this.db.select({ jti: usedJoinTokens.jti }).from(usedJoinTokens).where(eq(usedJoinTokens.jti, token.jti)).get();
    if (used) return 'token-used';
    const existing = await this.db.select({ revokedAt: bridgeKeys.revokedAt }).from(bridgeKeys).where(eq(bridgeKeys.md5Key, key.md5Key)).get();
    if (existing) return existing.revokedAt ? 'key-revoked' : 'key-exists';
    return undefined;
  }

  async revoke(ref: string, now: number): Promise<KeyRecord | null> {
    const where = or(eq(bridgeKeys.id, ref), eq(bridgeKeys.md5Key, ref));
    const [, rows] = await this.db.batch([
      this.db
        .update(bridgeKeys)
        .set({ revokedAt: new Date(now) })
        .where(and(where, isNull(bridgeKeys.revokedAt))),
      this.db.select().from(bridgeKeys).where(where),
    ]);
    const row = rows[0];
    return row ? keyRecordOf(row) : null;
  }

  async revokedSince(since: number): Promise<KeyRecord[]> {
    return (
      await this.db
        .select()
        .from(bridgeKeys)
        .where(gte(bridgeKeys.revokedAt, new Date(since)))
        .all()
    ).map(keyRecordOf);
  }

  async touch(keyId: string, now: number): Promise<void> {
    await this.db
      .update(bridgeKeys)
      .set({ lastSeenAt: new Date(now) })
      .where(eq(bridgeKeys.id, keyId))
      .run();
  }

  async isBlocked(address: string, now: number): Promise<boolean> {
    const row = await this.db.select({ until: blacklist.until }).from(blacklist).where(eq(blacklist.address, address)).get();
    if (!row) return false;
    if (row.until.getTime() > now) return true;
    await this.db.delete(blacklist).where(eq(blacklist.address, address)).run();
    return false;
  }

  /**
   * One batch prunes the window, records the failure and counts (the count sees the insert: same
   * transaction); a second blocks the address when the count reached the rule.
   */
  async recordFailure(address: string, now: number, rule: BlacklistRule): Promise<boolean> {
    const windowStart = new Date(now - rule.windowMs);
    const until = new Date(now + rule.blockMs);
    const reason = `${rule.failures} or more failed sign-ins within ${rule.windowMs / 1000} s`;
    const recent = this.db
      .select({ n: sql<number>`count(*)` })
      .from(authFailures)
      .where(and(eq(authFailures.address, address), gt(authFailures.at, windowStart)));
    const [, , counted] = await this.db.batch([
      this.db.delete(authFailures).where(lt(authFailures.at, windowStart)),
      this.db.insert(authFailures).values({ address, at: new Date(now) }),
      recent,
    ]);
    if ((counted[0]?.n ?? 0) < rule.failures) return false;
    await this.db.batch([
      this.db.insert(blacklist).values({ address, until, reason }).onConflictDoUpdate({ target: blacklist.address, set: { until } }),
      this.db.delete(authFailures).where(eq(authFailures.address, address)),
    ]);
    return true;
  }

  /** One batch (one D1 transaction); each delete takes the `limit` oldest prunable rows of its table. */
  async prune(now: number, rule: BlacklistRule, limit: number): Promise<PrunedRows> {
    const where = prunable(now, rule);
    const db = this.db;
    const [tokens, blocks, failures] = await db.batch([
      db
        .delete(usedJoinTokens)
        .where(
          inArray(
            usedJoinTokens.jti,
            db.select({ jti: usedJoinTokens.jti }).from(usedJoinTokens).where(where.usedJoinTokens).orderBy(asc(usedJoinTokens.expiresAt)).limit(limit),
          ),
        ),
      db
        .delete(blacklist)
        .where(
          inArray(
            blacklist.address,
            db.select({ address: blacklist.address }).from(blacklist).where(where.blacklist).orderBy(asc(blacklist.until)).limit(limit),
          ),
        ),
      db
        .delete(authFailures)
        .where(
          inArray(authFailures.id, db.select({ id: authFailures.id }).from(authFailures).where(where.authFailures).orderBy(asc(authFailures.at)).limit(limit)),
        ),
    ]);
    return { usedJoinTokens: tokens.meta.changes, blacklist: blocks.meta.changes, authFailures: failures.meta.changes };
  }
}
