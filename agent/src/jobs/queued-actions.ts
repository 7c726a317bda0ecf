/**
 * Queued class actions, run for their handlers: a handler only plans the work (argv steps, or an async
 * function that reports progress) and names the event's extra fields; this module submits the job to
 * the queue the contract names, answers with the spec's acknowledgement and, through one job type per
 * class, publishes the spec's events (`event_system: "admin/<class>"`, `process_details`, ...).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { pendingAck, queuedAck } from '@hostadm/shared/api/fields.ts';
import type { AckForm, QueueName } from '@hostadm/shared/protocol/define.ts';
import type { Dispatcher } from './dispatcher.ts';
import { runSteps } from './run-job.ts';
import type { JobContext, JobOutcome, JobType } from './types.ts';

/** One command of a planned job; `label` is how it is shown (`cmd_list`, `return_codes/<label>`). */
export interface JobStep {
  argv: readonly string[];
  label?: string;
}

interface PlanFields {
  /** Fields every event of the job carries, as the spec lists them for the action (`action`, `filename`). */
  fields?: Readonly<Record<string, string>>;
  /** The event field that carries the job's output (`pkg_log`, `update_log`): new output while running, the whole log at the end. */
  logField?: string;
}

/** Commands run in order, stopping at the first that fails. Survives an agent restart while pending. */
export interface StepsPlan extends PlanFields {
  steps: readonly JobStep[];
}

/**
 * Work that is more than a list of commands (a download that reports its percentage, a check whose
 * result becomes an event field). `ctx.progress(percent)` feeds `percent_done`, `ctx.run(argv)` runs a
 * command through the platform's runner, and the outcome's `fields` join the completion event. A
 * function cannot be stored: if the agent stops before the job starts, the job ends with a reason.
 */
export interface WorkPlan extends PlanFields {
  /** The commands as shown in the acknowledgement and in `cmd_list`. */
  commands: readonly string[];
  work(ctx: JobContext): Promise<JobOutcome>;
}

export type JobPlan = StepsPlan | WorkPlan;

export function isJobPlan(value: unknown): value is JobPlan {
  if (value === null || typeof value !== 'object') return false;
  if ('steps' in value) return Array.isArray(value.steps) && value.steps.length > 0;
  return 'work' in value && typeof value.work === 'function' && 'commands' in value && Array.isArray(value.commands);
}

/** What the job type stores: everything but the work function, so a pending job can be reported (and steps rerun) after a restart. */
const storedPlan = z.object({
  action: z.string(),
  commands: z.array(z.string()),
  steps: z.array(z.object({ argv: z.array(z.string()).min(1), label: z.string() })).optional(),
  fields: z.record(z.string(), z.string()),
  logField: z.string().optional(),
});
type StoredPlan = z.infer<typeof storedPlan>;

export const NOT_RESUMABLE = 'cannot resume: the agent stopped before this job started and its work cannot be stored; submit it again';

type Ack = z.input<ReturnType<typeof pendingAck>> | z.input<ReturnType<typeof queuedAck>>;

/** Submits planned jobs of queued class actions. One per agent; classes register on first use. */
export class QueuedActions {
  private readonly dispatcher: Dispatcher;
  /** Work functions of jobs not yet finished, by job id (steps need none: they are stored). */
  private readonly work = new Map<string, WorkPlan['work']>();
  private readonly systems = new Set<string>();

  constructor(dispatcher: Dispatcher) {
    this.dispatcher = dispatcher;
  }

  /** Registers the job type of a class (`admin/pkg`), so its pending jobs resume after a restart. */
  registerClass(system: string): void {
    if (this.systems.has(system)) return;
    this.systems.add(system);
    this.dispatcher.register(this.jobType(system));
  }

  /** Queues the planned job and returns the acknowledgement in the contract's form. */
  submit(req: { system: string; action: string; queue: QueueName; ack: AckForm; owner: string; plan: JobPlan }): Ack {
    this.registerClass(req.system);
    this.forgetFinished();
    const id = `admin_${req.action}-{${randomUUID()}}`;
    const { plan } = req;
    const steps = 'steps' in plan ? plan.steps.map((s) => ({ argv: [...s.argv], label: s.label ?? s.argv.join(' ') })) : undefined;
    const params: StoredPlan = {
      action: req.action,
      commands: 'commands' in plan ? [...plan.commands] : (steps ?? []).map((s) => s.label),
      ...(steps ? { steps } : {}),
      fields: { ...plan.fields },
      ...(plan.logField ? { logField: plan.logField } : {}),
    };
    if ('work' in plan) this.work.set(id, plan.work);
    try {
      this.dispatcher.submit([{ id, type: jobTypeName(req.system), params, queue: req.queue, owner: req.owner }]);
    } catch (err) {
      this.work.delete(id);
      throw err;
    }
    const command = params.commands.join('; ');
    return req.ack === 'proc_id' ? { proc_cmd: command, proc_id: id, status: 'pending' } : { command, comment: 'Task Queued', queueid: id };
  }

  /** Work of jobs that ended without running (killed while pending) is dropped here. */
  private forgetFinished(): void {
    for (const id of this.work.keys()) if (this.dispatcher.read(id)?.state === 'finished') this.work.delete(id);
  }

  private jobType(system: string): JobType<StoredPlan> {
    return {
      name: jobTypeName(system),
      parse: (params) => storedPlan.parse(params),
      commands: (params) => params.commands,
      run: async (params, ctx) => {
        if (params.steps) return runSteps(ctx, params.steps);
        const work = this.work.get(ctx.id);
        if (!work) return { success: false, reason: NOT_RESUMABLE };
        try {
          return await work(ctx);
        } finally {
          this.work.delete(ctx.id);
        }
      },
      classEvent: {
        system,
        fields: (view) => ({
          ...view.params.fields,
          ...(view.params.logField ? { [view.params.logField]: view.state === 'finished' ? view.log : view.newOutput } : {}),
        }),
      },
    };
  }
}

function jobTypeName(system: string): string {
  return `queued ${system}`;
}
