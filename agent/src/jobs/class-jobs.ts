/**
 * How a class queues long work: submit a job of a registered type and answer with the spec's
 * pending acknowledgement. The id is `admin_<action>-{<uuid>}`, as the spec shows.
 */
import { randomUUID } from 'node:crypto';
import type { QueueName } from '@hostadm/shared/protocol/define.ts';
import type { Dispatcher } from './dispatcher.ts';

export interface ClassJobRequest {
  action: string;
  type: string;
  params: unknown;
  queue: QueueName;
  owner: string;
}

export function classJobId(action: string): string {
  return `admin_${action}-{${randomUUID()}}`;
}

/** Submits the job and returns `{proc_cmd, proc_id, status: "pending"}` (pkg-style acknowledgement). */
export function submitWithPendingAck(dispatcher: Dispatcher, req: ClassJobRequest) {
  const id = classJobId(req.action);
  dispatcher.submit([{ id, type: req.type, params: req.params, queue: req.queue, owner: req.owner }]);
  const record = dispatcher.read(id);
  return { proc_cmd: (record?.commands ?? []).join('; '), proc_id: id, status: 'pending' as const };
}

/** Submits the job and returns `{command, comment: "Task Queued", queueid}` (fetchiso/startupdate style). */
export function submitWithQueuedAck(dispatcher: Dispatcher, req: ClassJobRequest) {
  const id = classJobId(req.action);
  dispatcher.submit([{ id, type: req.type, params: req.params, queue: req.queue, owner: req.owner }]);
  const record = dispatcher.read(id);
  return { command: (record?.commands ?? []).join('; '), comment: 'Task Queued', queueid: id };
}
