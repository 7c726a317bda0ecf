/**
 * Refuses addresses with too many failed sign-ins: `failures` within `windowSeconds` blocks the
 * address for `blockSeconds`. Counts and blocks are in SQLite, so restarting the agent does not
 * lift a block. A success does not reset the count (failures simply age out of the window): else an
 * attacker with any account could interleave its own sign-ins with guesses at another's password. Loopback is never blocked: a local admin must always be able to get in.
 */
import { and, eq, gt, inArray, lt, lte } from 'drizzle-orm';
import { isIP } from 'node:net';
import type { AgentDb } from '../store/db.ts';
import { authFailures, blacklist } from '../store/schema.ts';
import type { AgentConfig, Clock } from './context.ts';

export function isLoopback(address: string): boolean {
  const a = address.replace(/^::ffff:/i, '');
  if (isIP(a) === 4) return a.startsWith('127.');
  return a === '::1';
}

export class Blacklist {
  private readonly db: AgentDb;
  private readonly clock: Clock;
  private readonly config: AgentConfig['blacklist'];

  constructor(db: AgentDb, clock: Clock, config: AgentConfig['blacklist']) {
    this.db = db;
    this.clock = clock;
    this.config = config;
  }

  private exempt(address: string): boolean {
    return this.config.exemptLoopback && isLoopback(address);
  }

  isBlocked(address: string): boolean {
    if (this.exempt(address)) return false;
    const row = this.db.select().from(blacklist).where(eq(blacklist.address, address)).get();
    if (!row) return false;
    if (row.until.getTime() > this.clock.now()) return true;
    this.db.delete(blacklist).where(eq(blacklist.address, address)).run();
    return false;
  }

  /**
   * Sign-in checks under way per address, each counted as a failure until it succeeds (`release`) or
   * its failure is recorded (`recordFailure` consumes it): so parallel guesses count at once.
   */
  private readonly reserved = new Map<string, number>();

  reserve(address: string): void {
    this.reserved.set(address, (this.reserved.get(address) ?? 0) + 1);
  }

  release(address: string): void {
    const left = (this.reserved.get(address) ?? 0) - 1;
    if (left > 0) this.reserved.set(address, left);
    else this.reserved.delete(address);
  }

  /** Whether the address is blocked once the checks still under way for it fail too. */
  wouldBlock(address: string): boolean {
    if (this.exempt(address)) return false;
    const pending = this.reserved.get(address) ?? 0;
    const windowStart = new Date(this.clock.now() - this.config.windowSeconds * 1000);
    const recent = this.db
      .select({ id: authFailures.id })
      .from(authFailures)
      .where(and(eq(authFailures.address, address), gt(authFailures.at, windowStart)))
      .all().length;
    return recent + pending >= this.config.failures;
  }

  /** Records a failed sign-in; returns true when this failure blocks the address. */
  recordFailure(address: string): boolean {
    if (this.reserved.has(address)) this.release(address);
    if (this.exempt(address)) return false;
    const now = this.clock.now();
    const windowStart = new Date(now - this.config.windowSeconds * 1000);
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
      if (recent < this.config.failures) return false;
      const until = new Date(now + this.config.blockSeconds * 1000);
      tx.insert(blacklist)
        .values({ address, until, reason: `${recent} failed sign-ins within ${this.config.windowSeconds} s` })
        .onConflictDoUpdate({ target: blacklist.address, set: { until } })
        .run();
      tx.delete(authFailures).where(eq(authFailures.address, address)).run();
      return true;
    });
  }

  /**
   * Deletes what can no longer decide anything: blocks whose `until` has come (`isBlocked` otherwise
   * removes one only when its address comes back, so blocks from many addresses would stay) and
   * failures out of the counting window. `batch` rows per statement, oldest first.
   */
  prune(batch = 2000): { blocks: number; failures: number } {
    const now = this.clock.now();
    const windowStart = new Date(now - this.config.windowSeconds * 1000);
    const removed = { blocks: 0, failures: 0 };
    for (;;) {
      const lifted = this.db
        .select({ address: blacklist.address })
        .from(blacklist)
        .where(lte(blacklist.until, new Date(now)))
        .limit(batch);
      const blocks = this.db.delete(blacklist).where(inArray(blacklist.address, lifted)).run().changes;
      const old = this.db.select({ id: authFailures.id }).from(authFailures).where(lte(authFailures.at, windowStart)).limit(batch);
      const failures = this.db.delete(authFailures).where(inArray(authFailures.id, old)).run().changes;
      removed.blocks += blocks;
      removed.failures += failures;
      if (blocks < batch && failures < batch) return removed;
    }
  }
}
