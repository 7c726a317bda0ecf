/**
 * A job the dispatcher holds in memory while it waits or runs, and the context its type's `run` gets:
 * logging, progress and reported fields (each schedules an event flush), and commands run through the
 * agent's runner with the job's abort signal, their exit codes recorded by label.
 */
import type { JobLog } from './job-log.ts';
import type { StoredJob } from './job-store.ts';
import type { DispatcherDeps, JobContext, JobType } from './types.ts';

export interface ActiveJob {
  readonly record: StoredJob;
  readonly type: JobType<unknown>;
  readonly params: unknown;
  readonly log: JobLog;
  readonly returnCodes: Record<string, string>;
  readonly controller: AbortController;
  startedAt: Date | null;
  percent: number | null;
  reported: Record<string, string>;
  killReason: string | null;
  flushTimer: NodeJS.Timeout | null;
  lastPersist: number;
  done: Promise<void> | null;
}

/** The context of `job`; `changed` is called after anything that a progress event should carry. */
export function jobContextFor(job: ActiveJob, deps: DispatcherDeps, changed: () => void): JobContext {
  const append = (text: string) => {
    job.log.append(text);
    changed();
  };
  return {
    id: job.record.id,
    signal: job.controller.signal,
    log: append,
    progress: (percent) => {
      job.percent = Math.max(0, Math.min(100, percent));
      changed();
    },
    report: (fields) => {
      job.reported = { ...job.reported, ...fields };
      changed();
    },
    run: async (argv, options = {}) => {
      const label = options.label ?? argv.join(' ');
      const result = await deps.runner.run(argv, {
        signal: job.controller.signal,
        timeoutMs: options.timeoutMs ?? 0,
        graceMs: deps.config.killGraceMs,
        input: options.input,
        onOutput: append,
      });
      job.returnCodes[label] = result.code !== null ? String(result.code) : (result.signal ?? 'killed');
      return result;
    },
  };
}
