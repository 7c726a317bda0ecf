/**
 * Typed access to `class_records`: one kind of record of one class, each value JSON checked against
 * the kind's zod schema when read, so a record written by an older agent that no longer fits is
 * reported (and skipped) instead of reaching a handler.
 */
import { and, eq } from 'drizzle-orm';
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { AgentDb } from './db.ts';
import { classRecords } from './schema.ts';

export class ClassRecords<S extends z.ZodType> {
  private readonly db: AgentDb;
  private readonly owner: string;
  private readonly kind: string;
  private readonly schema: S;
  private readonly logger: Logger | undefined;

  constructor(db: AgentDb, owner: string, kind: string, schema: S, logger?: Logger) {
    this.db = db;
    this.owner = owner;
    this.kind = kind;
    this.schema = schema;
    this.logger = logger;
  }

  private where(key?: string) {
    const base = and(eq(classRecords.owner, this.owner), eq(classRecords.kind, this.kind));
    return key === undefined ? base : and(base, eq(classRecords.key, key));
  }

  private decode(key: string, value: string): z.infer<S> | null {
    const parsed = this.schema.safeParse(JSON.parse(value));
    if (parsed.success) return parsed.data;
    this.logger?.warn({ owner: this.owner, kind: this.kind, key, error: parsed.error.message }, 'stored record no longer valid; ignored');
    return null;
  }

  get(key: string): z.infer<S> | null {
    const row = this.db.select({ value: classRecords.value }).from(classRecords).where(this.where(key)).get();
    return row ? this.decode(key, row.value) : null;
  }

  /** Every valid record, by key, in key order. */
  all(): Map<string, z.infer<S>> {
    const rows = this.db.select({ key: classRecords.key, value: classRecords.value }).from(classRecords).where(this.where()).orderBy(classRecords.key).all();
    const out = new Map<string, z.infer<S>>();
    for (const row of rows) {
      const value = this.decode(row.key, row.value);
      if (value !== null) out.set(row.key, value);
    }
    return out;
  }

  put(key: string, value: z.input<S>, now: number): void {
    const json = JSON.stringify(this.schema.parse(value));
    this.db
      .insert(classRecords)
      .values({ owner: this.owner, kind: this.kind, key, value: json, updatedAt: new Date(now) })
      .onConflictDoUpdate({ target: [classRecords.owner, classRecords.kind, classRecords.key], set: { value: json, updatedAt: new Date(now) } })
      .run();
  }

  /** Whether there was a record to delete. */
  delete(key: string): boolean {
    const existed = this.db.select({ key: classRecords.key }).from(classRecords).where(this.where(key)).get();
    if (!existed) return false;
    this.db.delete(classRecords).where(this.where(key)).run();
    return true;
  }
}
