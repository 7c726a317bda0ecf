/**
 * `update`: system and package updates. What every platform shares lives here:
 * - one update at a time (a second `startupdate` while one is queued or running is a 409), and
 *   `checkupdates` says `updaterunning` meanwhile;
 * - the update job writes its own log (`update-<UTC time>-<target>.log`), listed and read by
 *   `listlogs`/`readlogs` beside the logs the host keeps, and its output is the event's `update_log`;
 * - `stopupdate` kills the running update job's whole process group through the dispatcher (the
 *   original looked its jobs up at the wrong level and never found them, bug 12), plus any update the
 *   host's own updater runs; with nothing running it is a 409, not a silent success;
 * - after an update the cached check is forgotten, so the next `checkupdates` asks the host again.
 */
import { update } from '@hostadm/shared/api/update.ts';
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { Dispatcher } from '../jobs/dispatcher.ts';
import type { JobContext, JobOutcome } from '../jobs/types.ts';
import type { UpdateLogWriter, UpdateSettings, UpdateTarget } from '../platforms/ports/update.ts';
import { UpdateChecker } from './update-check.ts';
import { implementClass } from './types.ts';

const SUCCESS = { result: 'success' } as const;
const UPDATE_JOB = /^admin_startupdate-/;
/** The agent's own view of its queues: whether any update runs is a fact about the host, whoever started it. */
const THE_AGENT_ITSELF = { user: '', full: true } as const;

export const updateImpl = implementClass(update, ({ platform, jobs, clock }) => {
  const port = platform.ports.update;
  if (!port) return null;
  const checker = new UpdateChecker(port, clock);
  /** Whether a startupdate is between its acknowledgement and its job's submission (two at once must not both pass). */
  let planning = false;
  return {
    checkupdates: async (args) => checker.answer(args.force === 'true', activeUpdates(jobs)[0] ?? null),
    listbranches: async () => ({ listbranches: await port.branches() }),
    listlogs: async () => {
      const out: Record<string, { name: string; started: string; finished: string }> = {};
      for (const log of await port.store.listLogs()) {
        out[log.name] = { name: log.name, started: String(Math.floor(log.started)), finished: String(Math.floor(log.finished)) };
      }
      return { listlogs: out };
    },
    readlogs: async (args) => {
      const out: Record<string, string> = {};
      const missing: string[] = [];
      for (const name of new Set(args.logs)) {
        const text = await port.store.readLog(name);
        if (text === null) missing.push(name);
        else out[name] = text;
      }
      if (missing.length > 0) {
        throw badRequest(
          `logs: no update log named ${missing.join(', ')} (listlogs names them)`,
          missing.map((name) => ({ field: 'logs', message: `no update log named ${name}` })),
        );
      }
      return { readlogs: out };
    },
    listsettings: async () => ({ listsettings: await port.store.readSettings() }),
    changesettings: async (args) => {
      const next: UpdateSettings = { ...(await port.store.readSettings()) };
      for (const key of ['maxbe', 'package_set', 'package_url', 'auto_update'] as const) {
        const value = args[key];
        if (value !== undefined) next[key] = String(value);
      }
      await port.store.writeSettings(next);
      return { changesettings: SUCCESS };
    },
    startupdate: async (args, ctx) => {
      const busy = activeUpdates(jobs)[0];
      if (busy !== undefined || planning)
        throw new HostadmError('CONFLICT', `an update is already queued or running${busy ? ` (job ${busy})` : ''}; stopupdate stops it`);
      planning = true;
      try {
        const run = await port.planUpdate(args, { settings: await port.store.readSettings(), lastCheck: await checker.lastResult() });
        ctx.audit.detail = `${describeTarget(args)}: ${run.commands.join('; ')}`;
        const logName = `update-${stamp(clock.now())}-${args.target}.log`;
        return {
          commands: run.commands,
          logField: 'update_log',
          work: async (job: JobContext): Promise<JobOutcome> => {
            const log = port.store.createLog(logName);
            log.append(`${describeTarget(args)}, started ${new Date(clock.now()).toISOString()}\n`);
            let outcome: JobOutcome = { success: false, reason: 'the update stopped unexpectedly' };
            try {
              outcome = await run.run(teeTo(job, log));
              return outcome;
            } catch (err) {
              outcome = { success: false, reason: err instanceof Error ? err.message : String(err) };
              throw err;
            } finally {
              const how = job.signal.aborted ? 'stopped' : outcome.success ? 'finished' : `failed${outcome.reason ? `: ${outcome.reason}` : ''}`;
              log.append(`\nUpdate ${how}, ${new Date(clock.now()).toISOString()}\n`);
              log.close();
              await port.store.writeCheck(null).catch(() => undefined);
            }
          },
        };
      } finally {
        // The pipeline submits the plan in the microtasks that follow this return; from then on the
        // dispatcher lists the job, so the flag may drop once they have run.
        setImmediate(() => {
          planning = false;
        });
      }
    },
    stopupdate: async (_args, ctx) => {
      const killed = await jobs.kill(activeUpdates(jobs), ctx.session.user);
      const others = port.stopOthers ? await port.stopOthers() : false;
      ctx.audit.detail = `stopped ${killed.join(', ') || '(no job)'}${others ? ' and the host updater' : ''}`;
      if (killed.length === 0 && !others) throw new HostadmError('CONFLICT', 'no update is running');
      return { stopupdate: SUCCESS };
    },
  };
});

/** Ids of update jobs queued or running, running first. */
function activeUpdates(jobs: Dispatcher): string[] {
  const ids: Array<[string, string]> = [];
  for (const queue of Object.values(jobs.list(THE_AGENT_ITSELF))) {
    for (const [id, record] of Object.entries(queue)) if (UPDATE_JOB.test(id) && record.state !== 'finished') ids.push([id, record.state]);
  }
  return ids.sort((a, b) => (a[1] === 'running' ? -1 : b[1] === 'running' ? 1 : 0)).map(([id]) => id);
}

function describeTarget(target: UpdateTarget): string {
  if (target.target === 'chbranch') return `Switching to ${target.branch}`;
  if (target.target === 'standalone') return `Installing ${target.tag}`;
  return 'Updating installed packages';
}

/** `20261125T031500Z`: sortable, and only characters every file system and `safeName` accept. */
function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** The job's context, with everything it logs and every command's output also written to the update log. */
function teeTo(job: JobContext, log: UpdateLogWriter): JobContext {
  return {
    id: job.id,
    signal: job.signal,
    progress: (percent) => job.progress(percent),
    report: (fields) => job.report(fields),
    log: (text) => {
      job.log(text);
      log.append(text);
    },
    run: async (argv, options) => {
      log.append(`# ${options?.label ?? argv.join(' ')}\n`);
      const result = await job.run(argv, options);
      log.append(result.stdout + result.stderr);
      return result;
    },
  };
}
