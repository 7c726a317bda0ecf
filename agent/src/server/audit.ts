/**
 * The audit log: who changed what, who signed in, what was refused, from where. An auditor needs
 * every one of those; a read-only call that succeeded is counted per hour instead of written as a
 * row (a busy dashboard would otherwise fill the disk: 0.4 million calls made 47 MB). Both tables
 * are pruned by age and by rows, in small batches, on start and then periodically.
 */
import { asc, count, desc, lt, sql } from 'drizzle-orm';
import type { AnySQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { AgentDb } from '../store/db.ts';
import { auditLog, auditSummary } from '../store/schema.ts';
import type { Clock } from './context.ts';

export interface AuditEntry {
  user: string;
  address: string;
  transport: string;
  namespace: string;
  name: string;
  action: string;
  code: number;
  detail?: string;
}

export interface AuditRetention {
  /** Rows older than this go. */
  maxAgeDays: number;
  /** At most this many rows in each table; the oldest go first. */
  maxRows: number;
}

const HOUR_MS = 3600_000;
/** Rows deleted per statement: a prune never holds the database (and the event loop) for long. */
const PRUNE_BATCH = 2000;
/** Writes between two prunes (on top of the hourly one): a tenth of the row limit, so a table never
 *  holds more than 110% of it, and at most 5000. */
const pruneEvery = (maxRows: number) => Math.max(1, Math.min(5000, Math.floor(maxRows / 10)));

/**
 * Longest text kept per field. A refused request's class and action names come from the request as
 * sent (up to a 1 MiB frame); uncut, the row limit would not bound the bytes. Contract names are far
 * shorter, and `detail` (job ids and commands) keeps its start.
 */
const MAX_NAME_CHARS = 128;
const MAX_DETAIL_CHARS = 4096;

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function clipped<E extends Omit<AuditEntry, 'code' | 'detail'>>(entry: E): E {
  const { user, address, transport, namespace, name, action } = entry;
  return {
    ...entry,
    user: clip(user, MAX_NAME_CHARS),
    address: clip(address, MAX_NAME_CHARS),
    transport: clip(transport, MAX_NAME_CHARS),
    namespace: clip(namespace, MAX_NAME_CHARS),
    name: clip(name, MAX_NAME_CHARS),
    action: clip(action, MAX_NAME_CHARS),
  };
}

/** The placeholders of an entry's text fields, named as the fields (bound at each run). */
const ENTRY_PLACEHOLDERS = {
  user: sql.placeholder('user'),
  address: sql.placeholder('address'),
  transport: sql.placeholder('transport'),
  namespace: sql.placeholder('namespace'),
  name: sql.placeholder('name'),
  action: sql.placeholder('action'),
};

export class Audit {
  private writesSincePrune = 0;
  private readonly db: AgentDb;
  private readonly clock: Clock;
  private readonly retention: AuditRetention;

  // Prepared once: building and compiling the statement on every call cost more CPU than the call
  // itself (about a third of a bridged read-only call, profiled).
  private readonly insertRow;
  private readonly countCall;

  constructor(db: AgentDb, clock: Clock, retention: AuditRetention) {
    this.db = db;
    this.clock = clock;
    this.retention = retention;
    this.insertRow = db
      .insert(auditLog)
      .values({ ...ENTRY_PLACEHOLDERS, code: sql.placeholder('code'), detail: sql.placeholder('detail'), at: sql.placeholder('at') })
      .prepare();
    this.countCall = db
      .insert(auditSummary)
      .values({ ...ENTRY_PLACEHOLDERS, hour: sql.placeholder('hour'), calls: 1, lastAt: sql.placeholder('lastAt') })
      .onConflictDoUpdate({
        target: [
          auditSummary.hour,
          auditSummary.user,
          auditSummary.address,
          auditSummary.transport,
          auditSummary.namespace,
          auditSummary.name,
          auditSummary.action,
        ],
        set: { calls: sql`${auditSummary.calls} + 1`, lastAt: sql`excluded.last_at` },
      })
      .prepare();
  }

  /** A change, a sign-in attempt or a refusal: one row each. */
  record(entry: AuditEntry): void {
    this.insertRow.run({ ...clipped(entry), code: entry.code, detail: clip(entry.detail ?? '', MAX_DETAIL_CHARS), at: new Date(this.clock.now()) });
    this.countWrite();
  }

  /** A read-only call that succeeded: counted in its hour's bucket. */
  summarise(entry: Omit<AuditEntry, 'code' | 'detail'>): void {
    const now = this.clock.now();
    const { user, address, transport, namespace, name, action } = clipped(entry);
    this.countCall.run({ user, address, transport, namespace, name, action, hour: new Date(now - (now % HOUR_MS)), lastAt: new Date(now) });
    this.countWrite();
  }

  recent(limit = 100) {
    return this.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit).all();
  }

  recentSummaries(limit = 100) {
    return this.db.select().from(auditSummary).orderBy(desc(auditSummary.lastAt), desc(auditSummary.id)).limit(limit).all();
  }

  /** Deletes what is past the retention; returns how many rows went from each table. */
  prune(): { log: number; summary: number } {
    this.writesSincePrune = 0;
    const cutoff = new Date(this.clock.now() - this.retention.maxAgeDays * 86_400_000);
    return {
      log: this.pruneTable(auditLog, auditLog.id, auditLog.at, cutoff),
      summary: this.pruneTable(auditSummary, auditSummary.id, auditSummary.hour, cutoff),
    };
  }

  private pruneTable(table: SQLiteTable, id: AnySQLiteColumn, at: AnySQLiteColumn, cutoff: Date): number {
    let removed = 0;
    for (;;) {
      const old = this.db.select({ id }).from(table).where(lt(at, cutoff)).orderBy(asc(id)).limit(PRUNE_BATCH).all() as Array<{ id: number }>;
      if (old.length === 0) break;
      removed += this.deleteUpTo(table, id, old.at(-1)!.id);
    }
    const rows = this.db.select({ n: count() }).from(table).get()?.n ?? 0;
    let excess = rows - this.retention.maxRows;
    while (excess > 0) {
      // Ids grow with time in both tables: the oldest rows have the smallest ids.
      const oldest = this.db.select({ id }).from(table).orderBy(asc(id)).limit(Math.min(excess, PRUNE_BATCH)).all() as Array<{ id: number }>;
      if (oldest.length === 0) break;
      const n = this.deleteUpTo(table, id, oldest.at(-1)!.id);
      removed += n;
      excess -= n;
    }
    return removed;
  }

  private deleteUpTo(table: SQLiteTable, id: AnySQLiteColumn, lastId: number): number {
    return this.db.delete(table).where(sql`${id} <= ${lastId}`).run().changes;
  }

  private countWrite(): void {
    if (++this.writesSincePrune >= pruneEvery(this.retention.maxRows)) this.prune();
  }
}
