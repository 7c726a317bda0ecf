/**
 * The job API every class uses for long work. A job type is registered once (by name) and a job is
 * `{type, params}`, so a pending job can be run again after a restart from its stored params.
 */
import type { QueueName } from '@hostadm/shared/protocol/define.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import type { Logger } from 'pino';
import type { CommandRunner, RunResult } from '../runner/runner.ts';
import type { EventBus } from '../events/bus.ts';
import type { Clock } from '../server/context.ts';
import type { JobStore } from './job-store.ts';

export type JobState = 'pending' | 'running' | 'finished';

export interface JobContext {
  readonly id: string;
  /** Aborted when the job is killed or the agent stops; long work must stop promptly. */
  readonly signal: AbortSignal;
  /** Adds text to the job's log (capped; the cap is reported). */
  log(text: string): void;
  /** Reports progress in percent (0–100), for progress bars. */
  progress(percent: number): void;
  /**
   * Sets fields that the job's next events carry (a download's `download_rate`); each call replaces
   * the values of the keys it names. Only queued class operations publish them.
   */
  report(fields: Readonly<Record<string, string>>): void;
  /**
   * Runs one command of the job through the platform's runner: its output streams into the log,
   * its return code is recorded under `label` (default: the argv joined by spaces), and killing the
   * job kills the command's whole process group.
   */
  run(argv: readonly string[], options?: { label?: string; input?: string; timeoutMs?: number }): Promise<RunResult>;
}

export interface JobOutcome {
  success: boolean;
  /** Why it failed, when that is not evident from return codes. */
  reason?: string;
  /** Fields the class adds to the completion event (pkg's `updates_available`, ...). */
  fields?: Record<string, unknown>;
}

/** What a class event needs to know about the job at the moment of the event. */
export interface JobEventView<P> {
  params: P;
  state: 'running' | 'finished';
  /** The whole log so far. */
  log: string;
  /** Output since the previous event. */
  newOutput: string;
  outcome?: JobOutcome;
}

export interface JobType<P = unknown> {
  readonly name: string;
  /** Validates stored params (they come back from the database after a restart). */
  parse(params: unknown): P;
  /** The commands as shown to clients (`commands` in `list`, `cmd_list` in events). */
  commands(params: P): string[];
  run(params: P, ctx: JobContext): Promise<JobOutcome>;
  /**
   * For queued class operations: the event's `event_system` (`admin/pkg`) and the class's fields.
   * Without it the job's events have the `run` job shape.
   */
  readonly classEvent?: {
    system: string;
    fields(view: JobEventView<P>): Record<string, unknown>;
  };
}

export interface JobSubmission {
  id: string;
  type: string;
  params: unknown;
  queue: QueueName;
  owner: string;
}

export interface DispatcherConfig {
  /** Jobs of `no_queue` that run at once. */
  noQueueConcurrency: number;
  /** Pending jobs a queue holds; past it submissions are refused (503). */
  maxPendingPerQueue: number;
  /** Bytes of log kept per job. */
  logCapBytes: number;
  /** Finished jobs stay listed and readable this long unless acknowledged… */
  retentionSeconds: number;
  /** …and at most this many of them, with at most this many bytes of logs in all (the oldest go first). */
  maxFinishedJobs: number;
  maxStoredLogBytes: number;
  /** Time between SIGTERM and SIGKILL when a job is killed. */
  killGraceMs: number;
  /** Minimum time between progress events of one job. */
  progressIntervalMs: number;
}

export const DEFAULT_DISPATCHER_CONFIG: DispatcherConfig = {
  noQueueConcurrency: 4,
  maxPendingPerQueue: 200,
  logCapBytes: 1024 * 1024,
  retentionSeconds: 24 * 3600,
  maxFinishedJobs: LIMITS.maxFinishedJobs,
  maxStoredLogBytes: LIMITS.maxStoredJobLogBytes,
  killGraceMs: 3000,
  progressIntervalMs: 250,
};

/** What the dispatcher works with: where jobs are kept, how commands run, where events go. */
export interface DispatcherDeps {
  store: JobStore;
  runner: CommandRunner;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  config: DispatcherConfig;
}
