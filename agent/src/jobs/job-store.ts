/** Dispatcher jobs in SQLite (bound parameters through Drizzle, never SQL text built from input). */
import { and, asc, desc, eq, inArray, lt, max } from 'drizzle-orm';
import type { QueueName } from '@hostadm/shared/protocol/define.ts';
import type { AgentDb } from '../store/db.ts';
import { jobs } from '../store/schema.ts';
import type { JobState } from './types.ts';

export interface StoredJob {
  id: string;
  queue: QueueName;
  type: string;
  params: unknown;
  commands: string[];
  owner: string;
  state: JobState;
  seq: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  success: boolean | null;
  returnCodes: Record<string, string>;
  log: string;
  logTruncated: boolean;
  reason: string;
  acknowledged: boolean;
}

type Row = typeof jobs.$inferSelect;

/** How much finished work is kept on disk, whatever the time-based retention says. */
export interface FinishedJobBounds {
  maxFinishedJobs: number;
  /** Total UTF-8 bytes of the finished jobs' logs. */
  maxStoredLogBytes: number;
}

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

function fromRow({ logBytes: _bytes, ...row }: Row): StoredJob {
  return {
    ...row,
    params: JSON.parse(row.params) as unknown,
    commands: JSON.parse(row.commands) as string[],
    returnCodes: JSON.parse(row.returnCodes) as Record<string, string>,
  };
}

export class JobStore {
  private readonly db: AgentDb;
  private readonly bounds: FinishedJobBounds;
  /** Finished since the last bound check: checked again after a twentieth of either bound (5% over at most). */
  private finishedSinceCheck = { jobs: 0, bytes: 0 };

  constructor(db: AgentDb, bounds: FinishedJobBounds) {
    this.db = db;
    this.bounds = bounds;
  }

  nextSeq(): number {
    const row = this.db
      .select({ seq: max(jobs.seq) })
      .from(jobs)
      .get();
    return (row?.seq ?? 0) + 1;
  }

  /** Ids among `ids` that already have a record (any state). */
  existing(ids: readonly string[]): StoredJob[] {
    if (ids.length === 0) return [];
    return this.db
      .select()
      .from(jobs)
      .where(inArray(jobs.id, [...ids]))
      .all()
      .map(fromRow);
  }

  get(id: string): StoredJob | null {
    const row = this.db.select().from(jobs).where(eq(jobs.id, id)).get();
    return row ? fromRow(row) : null;
  }

  /** Inserts several jobs in one transaction: all are accepted or none. */
  insertAll(
    list: readonly Omit<StoredJob, 'startedAt' | 'finishedAt' | 'success' | 'returnCodes' | 'log' | 'logTruncated' | 'reason' | 'acknowledged'>[],
  ): void {
    this.db.transaction((tx) => {
      for (const job of list) {
        tx.insert(jobs)
          .values({
            id: job.id,
            queue: job.queue,
            type: job.type,
            params: JSON.stringify(job.params ?? null),
            commands: JSON.stringify(job.commands),
            owner: job.owner,
            state: job.state,
            seq: job.seq,
            createdAt: job.createdAt,
          })
          .run();
      }
    });
  }

  markRunning(id: string, startedAt: Date): void {
    this.db.update(jobs).set({ state: 'running', startedAt }).where(eq(jobs.id, id)).run();
  }

  saveLog(id: string, log: string, truncated: boolean, returnCodes: Record<string, string>): void {
    this.db
      .update(jobs)
      .set({ log, logBytes: utf8Bytes(log), logTruncated: truncated, returnCodes: JSON.stringify(returnCodes) })
      .where(eq(jobs.id, id))
      .run();
  }

  markFinished(
    id: string,
    result: {
      finishedAt: Date;
      success: boolean;
      reason: string;
      log: string;
      logTruncated: boolean;
      returnCodes: Record<string, string>;
      startedAt?: Date | null;
    },
  ): void {
    this.db
      .update(jobs)
      .set({
        state: 'finished',
        finishedAt: result.finishedAt,
        success: result.success,
        reason: result.reason,
        log: result.log,
        logBytes: utf8Bytes(result.log),
        logTruncated: result.logTruncated,
        returnCodes: JSON.stringify(result.returnCodes),
        ...(result.startedAt !== undefined ? { startedAt: result.startedAt } : {}),
      })
      .where(eq(jobs.id, id))
      .run();
    this.finishedSinceCheck.jobs += 1;
    this.finishedSinceCheck.bytes += utf8Bytes(result.log);
    const { maxFinishedJobs, maxStoredLogBytes } = this.bounds;
    if (this.finishedSinceCheck.jobs * 20 >= maxFinishedJobs || this.finishedSinceCheck.bytes * 20 >= maxStoredLogBytes) this.keepWithinBounds();
  }

  /**
   * Deletes the oldest finished jobs (never a pending or running one) until at most `maxFinishedJobs`
   * remain and their logs total at most `maxStoredLogBytes`. Returns how many went.
   */
  keepWithinBounds(): number {
    this.finishedSinceCheck = { jobs: 0, bytes: 0 };
    const newestFirst = this.db
      .select({ id: jobs.id, bytes: jobs.logBytes })
      .from(jobs)
      .where(eq(jobs.state, 'finished'))
      .orderBy(desc(jobs.finishedAt), desc(jobs.seq))
      .all();
    let kept = 0;
    let bytes = 0;
    const excess: string[] = [];
    for (const job of newestFirst) {
      if (kept < this.bounds.maxFinishedJobs && bytes + job.bytes <= this.bounds.maxStoredLogBytes) {
        kept += 1;
        bytes += job.bytes;
      } else excess.push(job.id);
    }
    for (let i = 0; i < excess.length; i += 500)
      this.db
        .delete(jobs)
        .where(inArray(jobs.id, excess.slice(i, i + 500)))
        .run();
    return excess.length;
  }

  /** Jobs that were accepted but not finished, in acceptance order (for a restart). */
  unfinished(): StoredJob[] {
    return this.db
      .select()
      .from(jobs)
      .where(inArray(jobs.state, ['pending', 'running']))
      .orderBy(asc(jobs.seq))
      .all()
      .map(fromRow);
  }

  /** Finished jobs still listed: not acknowledged (the retention purge removes old ones). */
  listedFinished(): StoredJob[] {
    return this.db
      .select()
      .from(jobs)
      .where(and(eq(jobs.state, 'finished'), eq(jobs.acknowledged, false)))
      .orderBy(asc(jobs.seq))
      .all()
      .map(fromRow);
  }

  acknowledge(ids: readonly string[]): string[] {
    if (ids.length === 0) return [];
    const where = and(inArray(jobs.id, [...ids]), eq(jobs.state, 'finished'), eq(jobs.acknowledged, false));
    const found = this.db
      .select({ id: jobs.id })
      .from(jobs)
      .where(where)
      .all()
      .map((r) => r.id);
    if (found.length > 0) this.db.update(jobs).set({ acknowledged: true }).where(inArray(jobs.id, found)).run();
    return found;
  }

  purgeFinishedBefore(cutoff: Date): number {
    return this.db
      .delete(jobs)
      .where(and(eq(jobs.state, 'finished'), lt(jobs.finishedAt, cutoff)))
      .run().changes;
  }
}
