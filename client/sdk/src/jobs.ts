/**
 * Job handles: the dispatcher events of one job, matched by id (`proc_id` of run jobs,
 * `process_details.process_id` of class operations, or `queueid`), turned into a progress stream and
 * a completion promise. Events that arrive before the acknowledgement names the job (a fast job can
 * finish before its reply is read) are buffered while a queued request is in flight.
 */
import { AsyncQueue } from './async-queue.ts';
import { ConnectionError, HostadmClientError } from './errors.ts';
import { isObject } from './contracts.ts';
import type { CallOptions, DispatcherEvent, JobCompletion, JobHandle, JobProgress, QueuedJob } from './types.ts';

/** The job id an event is about, if any. */
export function eventJobId(payload: unknown): string | undefined {
  if (!isObject(payload)) return undefined;
  if (typeof payload.proc_id === 'string') return payload.proc_id;
  const details = payload.process_details;
  if (isObject(details) && typeof details.process_id === 'string') return details.process_id;
  if (typeof payload.queueid === 'string') return payload.queueid;
  return undefined;
}

export function isFinishedEvent(payload: DispatcherEvent): boolean {
  const p = payload as Record<string, unknown>;
  if (p.state === 'finished') return true;
  // The spec's shape without `state`: a finish time marks the end.
  return p.state === undefined && typeof p.time_finished === 'string' && p.time_finished !== '';
}

export function progressOf(id: string, payload: DispatcherEvent): JobProgress {
  const p = payload as Record<string, unknown>;
  let output = '';
  if (typeof p.log === 'string') output = p.log;
  else for (const [k, v] of Object.entries(p)) if (k.endsWith('_log') && typeof v === 'string') output += v;
  const match = typeof p.percent_done === 'string' ? /^(\d+(?:\.\d+)?)%?$/.exec(p.percent_done.trim()) : null;
  return { id, output, percent: match ? Number(match[1]) : null, event: payload };
}

const MAX_PROGRESS_KEPT = 10_000;

export interface JobHost {
  /** Called when the first unfinished handle appears / the last one finishes. */
  retainEvents(): void;
  releaseEvents(): void;
  killJob(id: string, options?: CallOptions): Promise<boolean>;
}

class TrackedJob implements JobHandle {
  readonly id: string;
  readonly done: Promise<JobCompletion>;
  completion: JobCompletion | undefined;
  private readonly steps: JobProgress[] = [];
  private readonly readers = new Set<AsyncQueue<JobProgress>>();
  private resolveDone!: (c: JobCompletion) => void;
  private rejectDone!: (e: unknown) => void;
  private settled = false;
  private readonly host: JobHost;
  private readonly onSettled: (job: TrackedJob) => void;

  constructor(id: string, host: JobHost, onSettled: (job: TrackedJob) => void) {
    this.id = id;
    this.host = host;
    this.onSettled = onSettled;
    this.done = new Promise<JobCompletion>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // A caller that never looks at `done` must not get an unhandled rejection when the client closes.
    this.done.catch(() => undefined);
  }

  get finished(): boolean {
    return this.settled;
  }

  get progress(): AsyncIterable<JobProgress> {
    return {
      [Symbol.asyncIterator]: () => {
        const queue = new AsyncQueue<JobProgress>(() => this.readers.delete(queue));
        for (const step of this.steps) queue.push(step);
        if (this.settled) queue.end();
        else this.readers.add(queue);
        return queue;
      },
    };
  }

  feed(payload: DispatcherEvent): void {
    if (this.settled) return;
    if (isFinishedEvent(payload)) {
      this.complete(payload);
      return;
    }
    const step = progressOf(this.id, payload);
    if (this.steps.length < MAX_PROGRESS_KEPT) this.steps.push(step);
    for (const r of this.readers) r.push(step);
  }

  complete(payload: JobCompletion): void {
    if (this.settled) return;
    // Run jobs' completion carries the whole log: the part no progress step showed becomes a last step,
    // so the steps' outputs together are the job's whole output.
    const p = payload as Record<string, unknown>;
    if (typeof p.log === 'string' && this.steps.length < MAX_PROGRESS_KEPT) {
      const shown = this.steps.map((s) => s.output).join('');
      const rest = p.log.startsWith(shown) ? p.log.slice(shown.length) : '';
      if (rest !== '') {
        const step: JobProgress = { id: this.id, output: rest, percent: progressOf(this.id, payload).percent, event: payload };
        this.steps.push(step);
        for (const r of this.readers) r.push(step);
      }
    }
    this.settled = true;
    this.completion = payload;
    for (const r of this.readers) r.end();
    this.readers.clear();
    this.resolveDone(payload);
    this.onSettled(this);
  }

  fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    for (const r of this.readers) r.fail(error);
    this.readers.clear();
    this.rejectDone(error);
    this.onSettled(this);
  }

  kill(options?: CallOptions): Promise<boolean> {
    return this.host.killJob(this.id, options);
  }
}

export class JobTracker {
  private readonly host: JobHost;
  private readonly jobs = new Map<string, TrackedJob>();
  private capturing = 0;
  private buffer = new Map<string, DispatcherEvent[]>();

  constructor(host: JobHost) {
    this.host = host;
  }

  /** Buffer every dispatcher event until `end` is called (while a queued request is in flight). */
  beginCapture(): () => void {
    this.capturing++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.capturing === 0) this.buffer.clear();
    };
  }

  onEvent(payload: DispatcherEvent): void {
    const id = eventJobId(payload);
    if (id === undefined) return;
    const job = this.jobs.get(id);
    if (job) job.feed(payload);
    else if (this.capturing > 0) {
      const list = this.buffer.get(id) ?? [];
      list.push(payload);
      this.buffer.set(id, list);
    }
  }

  /** A handle for job `id`; events buffered for it are replayed. */
  track(id: string): JobHandle & { complete(p: JobCompletion): void; readonly finished: boolean } {
    const existing = this.jobs.get(id);
    if (existing) return existing;
    const job = new TrackedJob(id, this.host, (j) => {
      if (this.jobs.get(j.id) === j) this.jobs.delete(j.id);
      if (this.jobs.size === 0) this.host.releaseEvents();
    });
    if (this.jobs.size === 0) this.host.retainEvents();
    this.jobs.set(id, job);
    for (const payload of this.buffer.get(id) ?? []) job.feed(payload);
    this.buffer.delete(id);
    return job;
  }

  /** Ids of jobs still waiting for their completion. */
  unfinished(): string[] {
    return [...this.jobs.keys()];
  }

  complete(id: string, payload: JobCompletion): void {
    this.jobs.get(id)?.complete(payload);
  }

  /** The client failed or closed: every waiting handle rejects. */
  failAll(error: unknown): void {
    for (const job of [...this.jobs.values()]) job.fail(error);
    this.jobs.clear();
  }
}

export function queuedJob<Ack>(ack: Ack, jobs: readonly JobHandle[]): QueuedJob<Ack> {
  const first = jobs[0];
  if (!first) {
    const error = new HostadmClientError('the acknowledgement names no job to follow');
    const done = Promise.reject(error);
    done.catch(() => undefined);
    const ended = () => {
      const q = new AsyncQueue<JobProgress>();
      q.end();
      return q;
    };
    return {
      ack,
      jobs,
      id: '',
      progress: { [Symbol.asyncIterator]: ended },
      done,
      completion: undefined,
      kill: () => Promise.resolve(false),
      allDone: () => Promise.resolve([]),
    };
  }
  return {
    ack,
    jobs,
    id: first.id,
    progress: first.progress,
    done: first.done,
    get completion() {
      return first.completion;
    },
    kill: (options) => first.kill(options),
    allDone: () => Promise.all(jobs.map((j) => j.done)),
  };
}

export const closedError = (description: string) => new ConnectionError(`the client for ${description} was closed`);
