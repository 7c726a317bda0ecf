/** The audit log: who did what, from where, and how it ended. Reads and writes alike are recorded. */
import { desc } from 'drizzle-orm';
import type { AgentDb } from '../store/db.ts';
import { auditLog } from '../store/schema.ts';
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

export class Audit {
  private readonly db: AgentDb;
  private readonly clock: Clock;

  constructor(db: AgentDb, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  record(entry: AuditEntry): void {
    this.db
      .insert(auditLog)
      .values({ ...entry, detail: entry.detail ?? '', at: new Date(this.clock.now()) })
      .run();
  }

  recent(limit = 100) {
    return this.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit).all();
  }
}
