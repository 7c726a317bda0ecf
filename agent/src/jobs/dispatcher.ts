/**
 * The dispatcher: queued jobs that run, report, cancel and survive restarts. `no_queue` runs jobs in
 * parallel up to a bound; `pkg_queue` and `jail_queue` run one job at a time in FIFO order (the
 * package tool and the jail tool take a global lock). Every accepted job is in SQLite first.
 */
import { QUEUES, type QueueName } from '@hostadm/shared/protocol/define.ts';
import type { jobRecord } from '@hostadm/shared/api/dispatcher.ts';
import type { z } from 'zod';
import { HostadmError, badRequest } from '@hostadm/shared/protocol/errors.ts';
import { maySee, ownedBy, type Viewer } from '../events/audience.ts';
import { JobLog } from './job-log.ts';
import type { StoredJob } from './job-store.ts';
import { jobEventPayload } from './job-events.ts';
import type { DispatcherDeps, JobOutcome, JobSubmission, JobType } from './types.ts';
import { jobContextFor, type ActiveJob } from './active-job.ts';

export type { DispatcherDeps } from './types.ts';

const INTERRUPTED = 'interrupted: the agent stopped while this job was running';

export class Dispatcher {
  private readonly deps: DispatcherDeps;
  private readonly types = new Map<string, JobType<unknown>>();
  private readonly pending = new Map<QueueName, ActiveJob[]>(QUEUES.map((q) => [q, []]));
  private readonly running = new Map<QueueName, Map<string, ActiveJob>>(QUEUES.map((q) => [q, new Map()]));
  private purgeTimer: NodeJS.Timeout | null = null;
  private closing = false;

  constructor(deps: DispatcherDeps) {
    this.deps = deps;
  }

  register<P>(type: JobType<P>): void {
    if (this.types.has(type.name)) throw new Error(`job type ${type.name} registered twice`);
    this.types.set(type.name, type as unknown as JobType<unknown>);
  }

  /** Reports jobs a stopped agent left running, re-queues the pending ones, and starts them. */
  restore(): void {
    const { store } = this.deps;
    for (const record of store.unfinished()) {
      const type = this.types.get(record.type);
      if (record.state === 'running' || !type) {
        const reason = record.state === 'running' ? INTERRUPTED : `cannot resume: job type ${record.type} is no longer available`;
        this.finishStored(record, reason);
        continue;
      }
      let params: unknown;
      try {
        params = type.parse(record.params);
      } catch (err) {
        this.finishStored(record, `cannot resume: stored parameters are invalid (${String(err)})`);
        continue;
      }
      this.queueOf(record.queue).push(this.activate(record, type, params));
    }
    this.purge();
    this.purgeTimer = setInterval(() => this.purge(), 3600_000);
    this.purgeTimer.unref();
    for (const q of QUEUES) this.pump(q);
  }

  /** Accepts all the jobs or none: unknown types, bad params, taken ids and full queues are refused first. */
  submit(list: readonly JobSubmission[]): string[] {
    if (this.closing) throw new HostadmError('UNAVAILABLE', 'the agent is stopping; no new jobs are accepted');
    const ids = list.map((j) => j.id);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) throw badRequest(`job id "${dup}" is given twice`, [{ field: dup, message: 'duplicate job id' }]);
    const taken = this.deps.store.existing(ids);
    if (taken.length > 0) {
      const t = taken[0] as StoredJob;
      throw new HostadmError('CONFLICT', `job id "${t.id}" already exists (${t.state}); choose another id`);
    }
    const prepared = list.map((j) => {
      const type = this.types.get(j.type);
      if (!type) throw new Error(`unknown job type ${j.type}`);
      return { submission: j, type, params: type.parse(j.params) };
    });
    for (const q of QUEUES) {
      const adding = list.filter((j) => j.queue === q).length;
      const room = this.deps.config.maxPendingPerQueue - this.queueOf(q).length;
      if (adding > room) {
        throw new HostadmError('UNAVAILABLE', `queue ${q} is full (${this.deps.config.maxPendingPerQueue} pending jobs); try again later`);
      }
    }
    let seq = this.deps.store.nextSeq();
    const now = new Date(this.deps.clock.now());
    const records: StoredJob[] = prepared.map(({ submission, type, params }) => ({
      id: submission.id,
      queue: submission.queue,
      type: submission.type,
      params: submission.params,
      commands: type.commands(params),
      owner: submission.owner,
      state: 'pending',
      seq: seq++,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      success: null,
      returnCodes: {},
      log: '',
      logTruncated: false,
      reason: '',
      acknowledged: false,
    }));
    this.deps.store.insertAll(records);
    records.forEach((record, i) => {
      const { type, params } = prepared[i] as (typeof prepared)[number];
      this.queueOf(record.queue).push(this.activate(record, type, params));
    });
    for (const q of new Set(records.map((r) => r.queue))) this.pump(q);
    return ids;
  }

  /**
   * `list`: the jobs `viewer` may see (its own; all with full access), by queue, then id. Finished jobs
   * stay until acknowledged or purged. Queue positions count every job, as they say when a job starts.
   * Every queue is listed, an empty one as `{}`, as the spec lists all three.
   */
  list(viewer: Viewer): Record<QueueName, Record<string, z.input<ReturnType<typeof jobRecord>>>> {
    const out = Object.fromEntries(QUEUES.map((q) => [q, {}])) as Record<QueueName, Record<string, z.input<ReturnType<typeof jobRecord>>>>;
    const put = (queue: QueueName, record: StoredJob, rec: z.input<ReturnType<typeof jobRecord>>) => {
      if (maySee(viewer, ownedBy(record.owner))) out[queue][record.id] = rec;
    };
    for (const record of this.deps.store.listedFinished()) {
      put(record.queue, record, {
        commands: record.commands,
        queue_position: '-',
        state: 'finished',
        success: record.success ? 'true' : 'false',
        reason: record.reason,
      });
    }
    for (const q of QUEUES) {
      for (const job of this.running.get(q)?.values() ?? []) put(q, job.record, { commands: job.record.commands, queue_position: '0', state: 'running' });
      this.queueOf(q).forEach((job, i) => put(q, job.record, { commands: job.record.commands, queue_position: String(i + 1), state: 'pending' }));
    }
    return out;
  }

  /** Cancels pending or running jobs; resolves once the running ones have ended. Returns what was cancelled. */
  async kill(ids: readonly string[], by: string): Promise<string[]> {
    const killed: string[] = [];
    const ending: Promise<void>[] = [];
    for (const id of new Set(ids)) {
      const waiting = this.findPending(id);
      if (waiting) {
        this.queueOf(waiting.record.queue).splice(this.queueOf(waiting.record.queue).indexOf(waiting), 1);
        waiting.killReason = `killed by ${by} before it started`;
        this.finish(waiting, { success: false });
        killed.push(id);
        continue;
      }
      const active = this.findRunning(id);
      if (active) {
        active.killReason = `killed by ${by}`;
        active.controller.abort();
        if (active.done) ending.push(active.done);
        killed.push(id);
      }
    }
    await Promise.all(ending);
    return killed;
  }

  acknowledge(ids: readonly string[]): string[] {
    return this.deps.store.acknowledge(ids);
  }

  /** A job's record with its log so far (running jobs: the live log). */
  read(id: string): StoredJob | null {
    const active = this.findRunning(id);
    if (active)
      return {
        ...active.record,
        state: 'running',
        startedAt: active.startedAt,
        log: active.log.value,
        logTruncated: active.log.truncated,
        returnCodes: { ...active.returnCodes },
      };
    return this.deps.store.get(id);
  }

  /** Stops: running jobs are killed and recorded as interrupted; pending ones stay for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    const ending: Promise<void>[] = [];
    for (const q of QUEUES) {
      this.pending.set(q, []);
      for (const job of this.running.get(q)?.values() ?? []) {
        job.killReason = INTERRUPTED;
        job.controller.abort();
        if (job.done) ending.push(job.done);
      }
    }
    await Promise.all(ending);
  }

  /** Finished jobs older than the retention time are forgotten (records and logs). */
  private purge(): void {
    const cutoff = new Date(this.deps.clock.now() - this.deps.config.retentionSeconds * 1000);
    const removed = this.deps.store.purgeFinishedBefore(cutoff) + this.deps.store.keepWithinBounds();
    if (removed > 0) this.deps.logger.info({ removed }, 'purged finished jobs past retention');
  }

  private queueOf(q: QueueName): ActiveJob[] {
    return this.pending.get(q) as ActiveJob[];
  }

  private findPending(id: string): ActiveJob | undefined {
    for (const q of QUEUES) {
      const job = this.queueOf(q).find((j) => j.record.id === id);
      if (job) return job;
    }
    return undefined;
  }

  private findRunning(id: string): ActiveJob | undefined {
    for (const q of QUEUES) {
      const job = this.running.get(q)?.get(id);
      if (job) return job;
    }
    return undefined;
  }

  private activate(record: StoredJob, type: JobType<unknown>, params: unknown): ActiveJob {
    return {
      record,
      type,
      params,
      log: new JobLog(this.deps.config.logCapBytes),
      returnCodes: {},
      controller: new AbortController(),
      startedAt: null,
      percent: null,
      reported: {},
      killReason: null,
      flushTimer: null,
      lastPersist: 0,
      done: null,
    };
  }

  private pump(queue: QueueName): void {
    if (this.closing) return;
    const limit = queue === 'no_queue' ? this.deps.config.noQueueConcurrency : 1;
    const running = this.running.get(queue) as Map<string, ActiveJob>;
    const waiting = this.queueOf(queue);
    while (running.size < limit && waiting.length > 0) {
      const job = waiting.shift() as ActiveJob;
      running.set(job.record.id, job);
      job.done = this.execute(job);
    }
  }

  private async execute(job: ActiveJob): Promise<void> {
    job.startedAt = new Date(this.deps.clock.now());
    this.deps.store.markRunning(job.record.id, job.startedAt);
    this.publish(job, 'running', '');
    let outcome: JobOutcome;
    try {
      outcome = await job.type.run(
        job.params,
        jobContextFor(job, this.deps, () => this.scheduleFlush(job)),
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      job.log.append(`\n${message}\n`);
      outcome = { success: false, reason: message };
    }
    this.finish(job, outcome);
  }

  private scheduleFlush(job: ActiveJob): void {
    if (job.flushTimer) return;
    job.flushTimer = setTimeout(() => {
      job.flushTimer = null;
      this.publish(job, 'running', job.log.takeUnsent());
      const now = this.deps.clock.now();
      if (now - job.lastPersist >= 1000) {
        job.lastPersist = now;
        this.deps.store.saveLog(job.record.id, job.log.value, job.log.truncated, job.returnCodes);
      }
    }, this.deps.config.progressIntervalMs);
  }

  private finish(job: ActiveJob, outcome: JobOutcome): void {
    if (job.flushTimer) clearTimeout(job.flushTimer);
    job.flushTimer = null;
    const reason = job.killReason ?? outcome.reason ?? '';
    const final: JobOutcome = { ...outcome, success: job.killReason ? false : outcome.success, reason };
    const finishedAt = new Date(this.deps.clock.now());
    this.deps.store.markFinished(job.record.id, {
      finishedAt,
      success: final.success,
      reason,
      log: job.log.value,
      logTruncated: job.log.truncated,
      returnCodes: job.returnCodes,
      startedAt: job.startedAt,
    });
    this.running.get(job.record.queue)?.delete(job.record.id);
    this.publish(job, 'finished', job.log.takeUnsent(), final, finishedAt, reason);
    this.deps.logger.info({ job: job.record.id, success: final.success, reason }, 'job finished');
    this.pump(job.record.queue);
  }

  /** A job found unfinished in the store that cannot run now: record it as failed and say so. */
  private finishStored(record: StoredJob, reason: string): void {
    const finishedAt = new Date(this.deps.clock.now());
    this.deps.store.markFinished(record.id, {
      finishedAt,
      success: false,
      reason,
      log: record.log,
      logTruncated: record.logTruncated,
      returnCodes: record.returnCodes,
    });
    const type = this.types.get(record.type);
    const job = this.activate({ ...record, reason }, type ?? RUN_SHAPE, record.params);
    job.startedAt = record.startedAt;
    job.log.append(record.log);
    Object.assign(job.returnCodes, record.returnCodes);
    this.publish(job, 'finished', '', { success: false, reason }, finishedAt, reason);
  }

  private publish(job: ActiveJob, state: 'running' | 'finished', newOutput: string, outcome?: JobOutcome, finishedAt: Date | null = null, reason = ''): void {
    let params: unknown = job.params;
    try {
      params = job.type.parse(job.params);
    } catch {
      // Unparseable stored params: the event still reports the job, without class fields.
    }
    const payload = jobEventPayload(
      job.type,
      {
        id: job.record.id,
        commands: job.record.commands,
        startedAt: job.startedAt,
        finishedAt,
        returnCodes: job.returnCodes,
        logTruncated: job.log.truncated,
        logCapBytes: this.deps.config.logCapBytes,
        reason,
        percent: job.percent,
        reported: job.reported,
      },
      { params, state, log: job.log.value, newOutput, outcome },
    );
    this.deps.events.publish('dispatcher', payload, ownedBy(job.record.owner), job.type.classEvent ? 'none' : '');
  }
}

/** Stands in for a job type that is gone, so its end can still be reported in the run-job shape. */
const RUN_SHAPE: JobType<unknown> = {
  name: '(unavailable)',
  parse: (p) => p,
  commands: () => [],
  run: async () => ({ success: false }),
};
