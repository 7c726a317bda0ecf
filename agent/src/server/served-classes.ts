/**
 * The classes this agent serves, built once from the registry: each implementation's handlers, and
 * for every queued action whose contract declares `ack`, the step the handler leaves to the pipeline
 * (submit the planned job to the contract's queue, answer `{<action>: <acknowledgement>}`; the job's
 * type publishes the events).
 */
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { AnyHandlers, ServedClasses } from '../classes/types.ts';
import { isJobPlan, type QueuedActions } from '../jobs/queued-actions.ts';
import { subsystemKey } from './access.ts';
import type { AgentServices, AuthedContext } from './context.ts';

export interface ServedClass {
  contract: ClassContract;
  handlers: AnyHandlers;
}

/** Keyed by `<namespace>/<class>`; a class whose platform cannot serve it (`create` → null) is absent. */
export function serveClasses(services: AgentServices, classes: ServedClasses, queued: QueuedActions): Map<string, ServedClass> {
  const served = new Map<string, ServedClass>();
  for (const [key, impl] of Object.entries(classes)) {
    if (!impl) continue;
    if (subsystemKey(impl.contract) !== key) throw new Error(`class registered as ${key} implements ${subsystemKey(impl.contract)}`);
    const handlers = impl.create(services);
    if (!handlers) continue;
    const table: Record<string, (args: unknown, ctx: AuthedContext) => Promise<unknown>> = {};
    for (const [action, contract] of Object.entries(impl.contract.actions)) {
      const handler = handlers[action];
      if (!handler) throw new Error(`${key} has no handler for ${action}`);
      const { queued: queue, ack } = contract;
      if (ack === null) {
        table[action] = handler;
        continue;
      }
      if (queue === false) throw new Error(`${key} ${action} declares an acknowledgement but no queue`);
      queued.registerClass(key);
      table[action] = async (args, ctx) => {
        const plan = await handler(args, ctx);
        if (!isJobPlan(plan)) throw new HostadmError('HOST_ERROR', `${key} ${action} planned no work to queue`);
        const reply = queued.submit({ system: key, action, queue, ack, owner: ctx.session.user, plan });
        const id = 'proc_id' in reply ? reply.proc_id : reply.queueid;
        // The handler may have said more (which package, which URL); the job id is always recorded.
        ctx.audit.detail = ctx.audit.detail ? `${ctx.audit.detail}; queued ${id}` : `queued ${id}`;
        return { [action]: reply };
      };
    }
    served.set(key, { contract: impl.contract, handlers: table });
  }
  return served;
}
