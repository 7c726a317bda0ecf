/**
 * Shared by the update tests: calling `admin/update`, waiting out a background check, and running an
 * update to its completion event.
 */
import assert from 'node:assert/strict';
import type { Envelope, TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';

export interface CheckReply {
  last_check: string;
  checkupdates: Record<string, unknown> & { status: string; details: string };
}

export interface QueuedAck {
  command: string;
  comment: string;
  queueid: string;
}

/** The reply args of a successful call. */
export async function upd(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await client.call('update', action, args);
  assert.equal(reply.name, 'response', `update ${action} ${JSON.stringify(args)}: ${JSON.stringify(reply.args)}`);
  return reply.args as Record<string, unknown>;
}

export async function updError(client: TestClient, action: string, args: Record<string, unknown>, code: number) {
  return expectError(await client.call('update', action, args), code);
}

/** `checkupdates` until the background check has answered (a slow host answers `checkingforupdates` first). */
export async function checkUntilAnswered(client: TestClient, force = false): Promise<CheckReply> {
  let reply = (await upd(client, 'checkupdates', force ? { force: true } : {})) as unknown as CheckReply;
  for (let i = 0; i < 600 && reply.checkupdates.status === 'checkingforupdates'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    reply = (await upd(client, 'checkupdates')) as unknown as CheckReply;
  }
  return reply;
}

export const eventArgs = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;
const processId = (e: Envelope) => (eventArgs(e).process_details as { process_id?: string } | undefined)?.process_id;

/** Every event of job `id` received so far. */
export function eventsOf(client: TestClient, id: string): Array<Record<string, unknown>> {
  return client.events.filter((e) => processId(e) === id).map(eventArgs);
}

export function finishedEvent(client: TestClient, id: string): Promise<Record<string, unknown>> {
  return client.nextEvent((e) => processId(e) === id && eventArgs(e).state === 'finished').then(eventArgs);
}

export function runningEvent(client: TestClient, id: string): Promise<Record<string, unknown>> {
  return client.nextEvent((e) => processId(e) === id && eventArgs(e).state === 'running').then(eventArgs);
}

/** Starts an update (the client must be subscribed to `dispatcher`) and returns its acknowledgement. */
export async function startUpdate(client: TestClient, args: Record<string, unknown>): Promise<QueuedAck> {
  const reply = await upd(client, 'startupdate', args);
  assert.deepEqual(Object.keys(reply), ['startupdate']);
  const ack = reply.startupdate as QueuedAck;
  assert.deepEqual(Object.keys(ack).sort(), ['command', 'comment', 'queueid']);
  assert.equal(ack.comment, 'Task Queued');
  assert.match(ack.queueid, /^admin_startupdate-\{[0-9a-f-]{36}\}$/);
  return ack;
}
