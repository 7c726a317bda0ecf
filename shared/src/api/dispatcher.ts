/** rpc `dispatcher`: caller-submitted jobs and the job list. */
import { z } from 'zod';
import { action, defineClass, QUEUES } from '../protocol/define.ts';
import { keyedBy, str } from './fields.ts';

export const jobId = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:{}-]*$/, 'may hold only letters, digits and _ . : { } -')
  .describe('Job id');

/** One command line: a binary plus arguments, split without a shell (see docs/protocol.md). */
const commandLine = z
  .string()
  .min(1, 'must not be empty')
  .max(8192, 'must be at most 8192 characters')
  .regex(/^[^\u0000]*$/, 'must not contain NUL')
  .describe('A command: binary plus arguments; no shell, no pipes');

export const jobRecord = z
  .object({
    commands: z.array(z.string()).describe('The job\'s commands in order'),
    queue_position: str('Position in its queue, `0` for the job that runs'),
    state: z.enum(['pending', 'running', 'finished']).describe('Job state'),
  })
  .describe('A dispatcher job');

export const dispatcher = defineClass({
  namespace: 'rpc',
  name: 'dispatcher',
  description: 'Queued jobs: run commands, list jobs, cancel jobs',
  limitedAccess: 'read',
  actions: {
    list: action({
      description: 'List jobs grouped by queue, then by job id',
      args: z.strictObject({}),
      reply: z.object({
        jobs: z
          .partialRecord(z.enum(QUEUES).describe('Queue name'), keyedBy('Job id', jobRecord, 'Jobs of that queue'))
          .describe('Queues holding job records keyed by job id; empty queues are left out'),
      }),
      access: 'read',
    }),
    kill: action({
      description: 'Cancel pending or running jobs (full access)',
      args: z.strictObject({
        job_id: z
          .union([jobId, z.array(jobId).min(1)])
          .transform((v) => (Array.isArray(v) ? v : [v]))
          .describe('Job id, or an array of job ids'),
      }),
      reply: z.object({
        killed: z
          .object({ jobs: z.array(z.string()).describe('Ids of the jobs actually cancelled') })
          .describe('What was cancelled'),
      }),
      access: 'full',
    }),
    run: action({
      description: 'Run commands as jobs: each key is a job id, each value a command or a chain of commands',
      args: z
        .record(jobId, z.union([commandLine, z.array(commandLine).min(1, 'a chain needs at least one command')]))
        .refine((jobs) => Object.keys(jobs).length > 0, 'at least one job is required')
        .describe('Job id to command (string) or chain (array of strings)'),
      reply: z.object({ started: z.array(z.string()).describe('Ids of the jobs accepted') }),
      access: 'wheel',
      queued: 'no_queue',
    }),
  },
});
