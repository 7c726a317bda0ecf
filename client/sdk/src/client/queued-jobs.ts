/**
 * Queued actions and the jobs they start: the glue between the calls, the `dispatcher` event
 * subscription and the job tracker (jobs.ts). Its rules exist so no event of a job is missed: the
 * client subscribes before the request goes out, buffers events that arrive before the
 * acknowledgement names the job, and after a reconnect reads the record of every job still open,
 * since its completion may have been sent while the connection was down.
 */
import type { ActionContract } from '@hostadm/shared/protocol/define.ts';
import { jobIdsOf } from '../contracts.ts';
import { JobTracker, queuedJob } from '../jobs.ts';
import type { CallOptions, DispatcherEvent, JobCompletion, JobHandle, QueuedJob, RunJobEvent } from '../types.ts';
import type { ContractCalls } from './calls.ts';
import type { Subscriptions } from './subscriptions.ts';

export class QueuedJobs {
  private readonly calls: ContractCalls;
  private readonly subscriptions: Subscriptions;
  private readonly tracker: JobTracker;

  constructor(calls: ContractCalls, subscriptions: Subscriptions) {
    this.calls = calls;
    this.subscriptions = subscriptions;
    this.tracker = new JobTracker({
      // Unfinished handles hold the `dispatcher` subscription, so their events keep coming.
      retainEvents: () => subscriptions.retain('dispatcher'),
      releaseEvents: () => subscriptions.release(['dispatcher']),
      killJob: async (id, opts) => {
        const reply = (await calls.call('rpc', 'dispatcher', 'kill', { job_id: id }, opts ?? {})) as { killed?: { jobs?: string[] } };
        return reply.killed?.jobs?.includes(id) ?? false;
      },
    });
  }

  /** Sends a prepared queued action; resolves once acknowledged, with handles for the jobs it started. */
  async start(namespace: string, className: string, canonical: string, contract: ActionContract, args: unknown, options: CallOptions): Promise<QueuedJob> {
    // Subscribed before the request goes out, so no event of the new job can be missed.
    await this.subscriptions.acquire(['dispatcher'], options);
    const endCapture = this.tracker.beginCapture();
    try {
      const ack = await this.calls.sendPrepared(namespace, className, canonical, contract, args, options);
      const handles = jobIdsOf(ack).map((id) => this.tracker.track(id));
      return queuedJob(ack, handles);
    } finally {
      endCapture();
      this.subscriptions.release(['dispatcher']);
    }
  }

  /** Follows a job that already exists; one that already finished completes from its record. */
  async follow(id: string, options: CallOptions): Promise<JobHandle> {
    await this.subscriptions.acquire(['dispatcher'], options);
    try {
      const handle = this.tracker.track(id);
      await this.recover(id, options);
      return handle;
    } finally {
      this.subscriptions.release(['dispatcher']);
    }
  }

  /** A `dispatcher` event: progress or completion of a tracked job. */
  onEvent(payload: DispatcherEvent): void {
    this.tracker.onEvent(payload);
  }

  /** After a reconnect: jobs that may have finished while the connection was down. */
  recoverUnfinished(): void {
    for (const id of this.tracker.unfinished()) void this.recover(id, {}).catch(() => undefined);
  }

  /** The client closed: every waiting handle rejects with `reason`. */
  failAll(reason: unknown): void {
    this.tracker.failAll(reason);
  }

  /** A job that may have finished unseen: read its record (`dispatcher log`) and complete it from there. */
  private async recover(id: string, options: CallOptions): Promise<void> {
    let record: Record<string, unknown> | undefined;
    try {
      const reply = (await this.calls.call('rpc', 'dispatcher', 'log', { job_id: id }, options)) as { log?: Record<string, unknown> };
      record = reply.log;
    } catch {
      return; // not readable (purged, or not allowed): the event stream is all there is
    }
    if (record?.state !== 'finished') return;
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    // In the run-job event shape, so a handle sees the same completion whether the event came or not.
    const completion: RunJobEvent = {
      cmd_list: Array.isArray(record.commands) ? (record.commands as string[]) : [],
      log: str(record.log),
      proc_id: id,
      success: record.success === 'true' ? 'true' : 'false',
      time_started: str(record.time_started),
      time_finished: str(record.time_finished),
      state: 'finished',
      reason: str(record.reason),
      log_truncated: record.log_truncated === 'true' ? 'true' : 'false',
      log_cap_bytes: '',
    };
    this.tracker.complete(id, completion as JobCompletion);
  }
}
