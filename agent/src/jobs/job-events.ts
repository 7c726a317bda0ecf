/**
 * The `dispatcher` event payloads, in the spec's two shapes (run jobs; queued class operations).
 * The outcome (`success`, `time_finished`, `reason`) is in a job's completion event only: a spec
 * client reads `success: "false"` as a failure, so a progress event must not carry one.
 */
import type { JobEventView, JobOutcome, JobType } from './types.ts';

export interface EventJob {
  id: string;
  commands: string[];
  startedAt: Date | null;
  finishedAt: Date | null;
  returnCodes: Record<string, string>;
  logTruncated: boolean;
  logCapBytes: number;
  reason: string;
  percent: number | null;
  /** Fields the running job reported (`JobContext.report`). */
  reported: Readonly<Record<string, string>>;
}

const iso = (d: Date | null) => (d ? d.toISOString() : '');
const percentField = (p: number | null) => (p === null ? {} : { percent_done: `${Math.round(p)}%` });

export function jobEventPayload<P>(type: JobType<P> | undefined, job: EventJob, view: JobEventView<P>): Record<string, unknown> {
  const finished = view.state === 'finished';
  if (type?.classEvent) {
    const details: Record<string, string | string[]> = {
      time_started: iso(job.startedAt),
      ...(finished ? { time_finished: iso(job.finishedAt) } : {}),
      cmd_list: job.commands,
      process_id: job.id,
      state: view.state,
    };
    for (const [command, code] of Object.entries(job.returnCodes)) details[`return_codes/${command}`] = code;
    return {
      event_system: type.classEvent.system,
      state: view.state,
      process_details: details,
      ...percentField(job.percent),
      ...job.reported,
      ...(finished ? { success: String(view.outcome?.success ?? false), reason: job.reason } : {}),
      ...type.classEvent.fields(view),
      ...(view.outcome?.fields ?? {}),
    };
  }
  return {
    cmd_list: job.commands,
    log: finished ? view.log : view.newOutput,
    proc_id: job.id,
    ...(finished ? { success: String(view.outcome?.success ?? false) } : {}),
    time_started: iso(job.startedAt),
    ...(finished ? { time_finished: iso(job.finishedAt), reason: job.reason } : {}),
    state: view.state,
    log_truncated: String(job.logTruncated),
    log_cap_bytes: String(job.logCapBytes),
    // Progress while it runs; the completion event keeps the spec's run-job shape (success says the rest).
    ...(finished ? {} : percentField(job.percent)),
    ...(view.outcome?.fields ?? {}),
  };
}

export function failedOutcome(reason: string): JobOutcome {
  return { success: false, reason };
}
