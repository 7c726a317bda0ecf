/**
 * Shared by the pkg tests: a queued action's acknowledgement checked against the spec's shape, and
 * its completion event (`event_system: admin/pkg`, `action`, `pkg_log`) awaited over the socket.
 */
import assert from 'node:assert/strict';
import { classJobEvent } from '@hostadm/shared/api/dispatcher.ts';
import { adminClasses } from '@hostadm/shared/api/index.ts';
import type { Envelope, TestClient } from '../helpers/agent.ts';

export const eventArgs = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;
const processId = (e: Envelope) => (eventArgs(e).process_details as { process_id?: string } | undefined)?.process_id;

export interface Completed {
  ack: { proc_cmd: string; proc_id: string; status: string };
  event: Record<string, unknown>;
  /** Events of the job while it ran (progress). */
  running: Array<Record<string, unknown>>;
}

/** Calls a queued pkg action, checks the acknowledgement, and waits for the completion event. */
export async function queued(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<Completed> {
  const reply = await client.call('pkg', action, args);
  assert.equal(reply.name, 'response', `${action} ${JSON.stringify(args)}: ${JSON.stringify(reply.args)}`);
  assert.deepEqual(Object.keys(reply.args as object), [action]);
  const contract = adminClasses.pkg.actions[action as keyof typeof adminClasses.pkg.actions];
  assert.ok(contract.reply.safeParse(reply.args).success, `${action}: the reply matches the contract`);
  const ack = (reply.args as Record<string, Completed['ack']>)[action] as Completed['ack'];
  assert.deepEqual(Object.keys(ack).sort(), ['proc_cmd', 'proc_id', 'status']);
  assert.equal(ack.status, 'pending');
  assert.match(ack.proc_id, new RegExp(`^admin_${action}-\\{[0-9a-f-]{36}\\}$`));
  const done = await client.nextEvent((e) => processId(e) === ack.proc_id && eventArgs(e).state === 'finished');
  assert.equal(done.id, 'none');
  const event = eventArgs(done);
  assert.ok(classJobEvent().safeParse(event).success, JSON.stringify(event));
  assert.equal(event.event_system, 'admin/pkg');
  assert.equal(event.action, action);
  assert.equal(typeof event.pkg_log, 'string');
  const running = client.events.filter((e) => processId(e) === ack.proc_id && eventArgs(e).state === 'running').map(eventArgs);
  return { ack, event, running };
}

/** Like `queued`, and the job succeeded. */
export async function succeeded(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<Completed> {
  const done = await queued(client, action, args);
  assert.equal(done.event.success, 'true', `${action}: ${done.event.reason} ${done.event.pkg_log}`);
  return done;
}

/** The reply args of a successful read. */
export async function read(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await client.call('pkg', action, args);
  assert.equal(reply.name, 'response', `${action} ${JSON.stringify(args)}: ${JSON.stringify(reply.args)}`);
  const contract = adminClasses.pkg.actions[action as keyof typeof adminClasses.pkg.actions];
  const parsed = contract.reply.safeParse(reply.args);
  assert.ok(parsed.success, `${action}: ${JSON.stringify(parsed.error?.issues)}`);
  return reply.args as Record<string, unknown>;
}

/** The fields of the spec's "Package" resource that every record carries (the rest come with `result: full` or as annotations). */
export const PACKAGE_FIELDS = [
  'arch',
  'automatic',
  'comment',
  'dep_formula',
  'desc',
  'flatsize',
  'id',
  'licenselogic',
  'locked',
  'maintainer',
  'manifestdigest',
  'message',
  'mtree_id',
  'name',
  'origin',
  'pkg_format_version',
  'prefix',
  'time',
  'version',
  'www',
];
