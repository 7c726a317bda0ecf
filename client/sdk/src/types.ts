/**
 * Public types derived from the contracts: events, jobs, call options. Nothing here is hand-copied
 * from the protocol: payload shapes are the zod schemas' input types (the wire form).
 */
import type { z } from 'zod';
import type { classJobEvent, runJobEvent } from '@hostadm/shared/api/dispatcher.ts';
import type { EventName } from '@hostadm/shared/api/events.ts';

export type { EventName };

/** A `dispatcher` event of a `run` job (spec shape 1 plus `state`, `reason`, ...). */
export type RunJobEvent = z.input<ReturnType<typeof runJobEvent>>;
/** A `dispatcher` event of a queued class operation (spec shape 2: `event_system`, `process_details`, ...). */
export type ClassJobEvent = z.input<ReturnType<typeof classJobEvent>>;
export type DispatcherEvent = RunJobEvent | ClassJobEvent;

/** One event as delivered: its name and payload (the envelope's `args.name` / `args.args`). */
/** `time`: when the host published it (ISO 8601); the event replayed on subscribe keeps its own. */
export type HostadmEvent = ({ name: 'dispatcher'; args: DispatcherEvent } | { name: Exclude<EventName, 'dispatcher'>; args: unknown }) & { time?: string };

export interface CallOptions {
  /** Overrides the client's `requestTimeoutMs` for this request. */
  timeoutMs?: number;
  /** Stops waiting for the reply (the request may still run on the host). */
  signal?: AbortSignal;
}

/**
 * A progress step of a job: the `running` events of the dispatcher. For run jobs a last step carries
 * the output that only the completion event had, so the steps' outputs together are the whole log.
 */
export interface JobProgress {
  id: string;
  /** Output since the previous step (run jobs: `log`; class operations: their `*_log` fields). */
  output: string;
  /** `percent_done` as a number, when the work reports one. */
  percent: number | null;
  event: DispatcherEvent;
}

/** The completion event's payload (`state: finished`). `success` is the string `true` or `false`. */
export type JobCompletion = DispatcherEvent;

/** One job on the host's dispatcher, followed through its events. */
export interface JobHandle {
  readonly id: string;
  /** Every progress step so far and to come; each iteration starts from the first step. Ends when the job finishes. */
  readonly progress: AsyncIterable<JobProgress>;
  /** The completion event's payload. Rejects only when the client fails or closes first. */
  readonly done: Promise<JobCompletion>;
  /** The completion once it arrived. */
  readonly completion: JobCompletion | undefined;
  /** Cancels the job on the host (`dispatcher kill`, full access). Resolves true when it was cancelled. */
  kill(options?: CallOptions): Promise<boolean>;
}

/**
 * What a queued action resolves to: the acknowledgement plus a handle for its job. `run` may start
 * several jobs: `jobs` lists them all, and the handle's own members follow the first.
 */
export interface QueuedJob<Ack = unknown> extends JobHandle {
  readonly ack: Ack;
  readonly jobs: readonly JobHandle[];
  /** Completions of every job, in `jobs` order. */
  allDone(): Promise<JobCompletion[]>;
}

/** Whether a completion reports success. */
export function jobSucceeded(completion: JobCompletion): boolean {
  return completion.success === 'true';
}
