/** rpc `dispatcher`: caller-submitted jobs and the job list. */
import { z } from 'zod';
import { action, defineClass, QUEUES, lazy } from '../protocol/define.ts';
import { keyedBy, str } from './fields.ts';

export const jobId = lazy(() =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(128, 'must be at most 128 characters')
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:{}-]*$/, 'may hold only letters, digits and _ . : { } -')
    .describe('Job id'),
);

/** One command line: a binary plus arguments, split without a shell (see docs/protocol.md). */
const commandLine = lazy(() =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(8192, 'must be at most 8192 characters')
    .regex(/^[^\u0000]*$/, 'must not contain NUL')
    .describe('A command: binary plus arguments; no shell, no pipes'),
);

export const jobRecord = lazy(() =>
  z
    .object({
      commands: z.array(z.string()).describe("The job's commands in order"),
      queue_position: str('Position in its queue: `0` while it runs, `1` for the next pending job, ...; `-` once finished'),
      state: z.enum(['pending', 'running', 'finished']).describe('Job state'),
      success: z.enum(['true', 'false']).optional().describe('Finished jobs only: whether every command succeeded'),
      reason: str('Finished jobs only: why it ended early (killed, interrupted by an agent restart); empty otherwise').optional(),
    })
    .describe('A dispatcher job'),
);

const jobIds = lazy(() =>
  z
    .union([jobId(), z.array(jobId()).min(1)])
    .transform((v) => (Array.isArray(v) ? v : [v]))
    .describe('Job id, or an array of job ids'),
);

/** The `dispatcher` event of a `run` job (spec shape 1); progress events carry `state: running`. */
export const runJobEvent = lazy(() =>
  z
    .object({
      cmd_list: z.array(z.string()).describe("The job's commands"),
      log: str('Finished: the whole (capped) log; running: the output since the previous event'),
      proc_id: str('Job id'),
      success: z.enum(['true', 'false']).optional().describe('Completion events only: whether every command succeeded'),
      time_started: str('ISO 8601 start time'),
      time_finished: str('Completion events only: ISO 8601 end time').optional(),
      state: z.enum(['running', 'finished']).describe('Progress (`running`) or completion (`finished`)'),
      reason: str('Completion events only: why the job ended early; empty otherwise').optional(),
      log_truncated: z.enum(['true', 'false']).describe('Whether the log hit its size cap (the cap is in `log_cap_bytes`)'),
      log_cap_bytes: str('The log size cap in bytes'),
      percent_done: str('`<n>%` when the work reports progress').optional(),
    })
    .describe('A dispatcher event of a run job'),
);

/** `process_details` of a queued class operation's event (spec shape 2). */
export const processDetails = lazy(() =>
  z
    .object({
      time_started: str('ISO 8601 start time'),
      time_finished: str('Completion events only: ISO 8601 end time').optional(),
      cmd_list: z.array(z.string()).describe('The commands of the operation'),
      process_id: str('Job id'),
      state: z.enum(['running', 'finished']).describe('Job state'),
    })
    .catchall(str('`return_codes/<command>`: the return code of that command'))
    .describe('The job behind a queued class operation'),
);

export const classJobEvent = lazy(() =>
  z
    .object({
      event_system: str('`admin/<class>`, for example `admin/pkg`'),
      state: z.enum(['running', 'finished']).describe('Progress (`running`) or completion (`finished`)'),
      process_details: processDetails(),
      percent_done: str('`<n>%` when the work reports progress').optional(),
    })
    .catchall(z.unknown().describe('Fields the class adds (pkg_log, action, update_log, ...)'))
    .describe('A dispatcher event of a queued class operation'),
);

export const dispatcher = defineClass({
  namespace: 'rpc',
  name: 'dispatcher',
  description: 'Queued jobs: run commands, list jobs, cancel jobs',
  limitedAccess: 'read',
  actions: {
    list: action({
      description: 'List jobs grouped by queue, then by job id',
      args: () => z.strictObject({}),
      reply: () =>
        z.object({
          jobs: z
            .record(z.enum(QUEUES).describe('Queue name'), keyedBy('Job id', jobRecord(), 'Jobs of that queue'))
            .describe('The three queues (`no_queue`, `pkg_queue`, `jail_queue`, an empty one as `{}`) holding job records keyed by job id'),
        }),
      access: 'read',
    }),
    kill: action({
      description: 'Cancel pending or running jobs (full access)',
      args: () => z.strictObject({ job_id: jobIds() }),
      reply: () =>
        z.object({
          killed: z.object({ jobs: z.array(z.string()).describe('Ids of the jobs actually cancelled') }).describe('What was cancelled'),
        }),
      access: 'full',
    }),
    run: action({
      description: 'Run commands as jobs: each key is a job id, each value a command or a chain of commands',
      args: () =>
        z
          .record(jobId(), z.union([commandLine(), z.array(commandLine()).min(1, 'a chain needs at least one command')]))
          .refine((jobs) => Object.keys(jobs).length > 0, 'at least one job is required')
          .describe('Job id to command (string) or chain (array of strings)'),
      reply: () => z.object({ started: z.array(z.string()).describe('Ids of the jobs accepted') }),
      access: 'wheel',
      queued: 'no_queue',
    }),
    // Not in the spec: finished jobs stay listed (with their logs) until acknowledged or retention ends.
    acknowledge: action({
      description: 'Remove finished jobs from the list (their events were seen); pending or running ids are ignored',
      args: () => z.strictObject({ job_id: jobIds() }),
      reply: () =>
        z.object({
          acknowledged: z.object({ jobs: z.array(z.string()).describe('Ids removed from the list') }).describe('What was acknowledged'),
        }),
      access: 'wheel',
    }),
    log: action({
      description: "Read a job's record and log (running: the output so far)",
      args: () => z.strictObject({ job_id: jobId() }),
      reply: () =>
        z.object({
          log: z
            .object({
              job_id: str('Job id'),
              state: z.enum(['pending', 'running', 'finished']).describe('Job state'),
              commands: z.array(z.string()).describe("The job's commands"),
              success: z.enum(['true', 'false', '']).describe('Whether it succeeded; empty until finished'),
              reason: str('Why it ended early; empty otherwise'),
              time_started: str('ISO 8601; empty while pending'),
              time_finished: str('ISO 8601; empty until finished'),
              return_codes: z.record(z.string().describe('Command'), str('Return code')).describe('Return code per command run'),
              log: str('The output, capped'),
              log_truncated: z.enum(['true', 'false']).describe('Whether the log hit its cap'),
            })
            .describe('The job'),
        }),
      access: 'read',
    }),
  },
});
