/**
 * Shared by the vm tests: calling the class, reading a refusal's named field, and following a
 * `fetchiso` job's dispatcher events to its end.
 */
import assert from 'node:assert/strict';
import type { Envelope, TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';

export async function vmOk(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await client.call('vm', action, args);
  assert.equal(reply.name, 'response', `vm ${action} ${JSON.stringify(args)}: ${JSON.stringify(reply.args)}`);
  return reply.args as Record<string, unknown>;
}

/** Asserts a refusal with `code` whose field errors name `field`. */
export async function vmRefused(client: TestClient, action: string, args: Record<string, unknown>, code: number, field?: string): Promise<string> {
  const error = expectError(await client.call('vm', action, args), code);
  if (field !== undefined)
    assert.ok(
      error.errors?.some((e) => e.field === field),
      `${action} ${JSON.stringify(args)}: expected field ${field}: ${JSON.stringify(error)}`,
    );
  return error.message;
}

export type JobEvent = Record<string, unknown> & { state: string; process_details: { process_id: string } };

const eventArgs = (e: Envelope) => (e.args as { args: JobEvent }).args;

/** Queues `fetchiso` and returns every event of its job, the completion last. */
export async function fetchIso(client: TestClient, url: string): Promise<{ queueid: string; events: JobEvent[] }> {
  const ack = (await vmOk(client, 'fetchiso', { url })).fetchiso as { command: string; comment: string; queueid: string };
  assert.equal(ack.comment, 'Task Queued');
  const ours = (e: Envelope) => eventArgs(e)?.process_details?.process_id === ack.queueid;
  await client.nextEvent((e) => ours(e) && eventArgs(e).state === 'finished');
  return { queueid: ack.queueid, events: client.events.filter(ours).map(eventArgs) };
}
