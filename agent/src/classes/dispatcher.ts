/** rpc `dispatcher`: run caller-submitted commands as jobs, list, kill, acknowledge, read logs. */
import { dispatcher as contract } from '@hostadm/shared/api/dispatcher.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { maySee, ownedBy, viewerOf } from '../events/audience.ts';
import { implementClass } from './types.ts';
import { splitCommandLine, CommandLineError } from '../jobs/command-line.ts';
import { RUN_JOB_TYPE } from '../jobs/run-job.ts';

export const dispatcherImpl = implementClass(contract, (services) => ({
  async run(args, ctx) {
    const jobs = Object.entries(args).map(([id, value]) => ({ id, commands: Array.isArray(value) ? value : [value] }));
    // Every command must split cleanly before any job is accepted (nothing half-applied).
    const problems = jobs.flatMap(({ id, commands }) =>
      commands.flatMap((command, i) => {
        try {
          splitCommandLine(command);
          return [];
        } catch (err) {
          if (!(err instanceof CommandLineError)) throw err;
          return [{ field: Array.isArray(args[id]) ? `${id}.${i}` : id, message: err.message }];
        }
      }),
    );
    if (problems.length > 0) throw badRequest(`invalid commands: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`, problems);
    const started = services.jobs.submit(
      jobs.map(({ id, commands }) => ({ id, type: RUN_JOB_TYPE, params: { commands }, queue: 'no_queue' as const, owner: ctx.session.user })),
    );
    ctx.audit.detail = `started ${started.join(', ')}: ${jobs.map((j) => j.commands.join(' && ')).join(' | ')}`;
    return { started };
  },
  async list(_args, ctx) {
    return { jobs: services.jobs.list(viewerOf(ctx.session)) };
  },
  async kill(args, ctx) {
    const jobs = await services.jobs.kill(args.job_id, ctx.session.user);
    ctx.audit.detail = `killed ${jobs.join(', ') || '(none)'}`;
    return { killed: { jobs } };
  },
  async acknowledge(args) {
    return { acknowledged: { jobs: services.jobs.acknowledge(args.job_id) } };
  },
  async log(args, ctx) {
    const job = services.jobs.read(args.job_id);
    // Another user's job answers exactly like a missing one: a limited user learns nothing of it.
    if (!job || !maySee(viewerOf(ctx.session), ownedBy(job.owner))) {
      throw badRequest(`job_id: no job "${args.job_id}" that you may read (never submitted, purged after its retention time, or another user's)`, [
        { field: 'job_id', message: 'no such job' },
      ]);
    }
    const iso = (d: Date | null) => (d ? d.toISOString() : '');
    return {
      log: {
        job_id: job.id,
        state: job.state,
        commands: job.commands,
        success: job.success === null ? ('' as const) : job.success ? ('true' as const) : ('false' as const),
        reason: job.reason,
        time_started: iso(job.startedAt),
        time_finished: iso(job.finishedAt),
        return_codes: job.returnCodes,
        log: job.log,
        log_truncated: job.logTruncated ? ('true' as const) : ('false' as const),
      },
    };
  },
}));
