/** Shared by the zfs and snapshot tests: calls that must succeed, the names ZFS refuses, waiting for job events. */
import assert from 'node:assert/strict';
import type { Envelope, TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';

/** The reply args of a successful call. */
export async function okArgs<T = Record<string, unknown>>(client: TestClient, cls: string, action: string, args: Record<string, unknown> = {}): Promise<T> {
  const reply = await client.call(cls, action, args);
  assert.equal(reply.name, 'response', `${cls} ${action}: ${JSON.stringify(reply.args)}`);
  return reply.args as T;
}

/** A 400 naming `field`. */
export async function refused(client: TestClient, cls: string, action: string, args: Record<string, unknown>, field: string): Promise<void> {
  const err = expectError(await client.call(cls, action, args), 400);
  assert.ok(
    err.errors?.some((e) => e.field === field),
    `${action} ${JSON.stringify(args)}: no error on ${field}: ${JSON.stringify(err)}`,
  );
}

/** Pool names ZFS (or hostadm, to keep each name one safe argv element) refuses. */
export const BAD_POOLS = [
  '-tank',
  'mirror',
  'mirror2',
  'raidz1',
  'draidx',
  'spare',
  'log',
  'c0d0',
  '1tank',
  'tank/x',
  'tank@s',
  'ta nk',
  'tank;id',
  '',
  'p'.repeat(256),
];
/** Dataset names refused. */
export const BAD_DATASETS = [
  '-tank',
  'tank/-x',
  'tank/.',
  'tank/..',
  'tank//a',
  'tank/a/',
  'tank@s',
  'tank#b',
  'tank/a b',
  'tank/$(id)',
  'log/a',
  `tank/${'d'.repeat(255)}`,
];
/** Snapshot names refused. */
export const BAD_SNAPS = ['-s', '.s', 'a@b', 'a/b', 'a#b', 'a b', '', 's'.repeat(254)];

/** The `admin/snapshot` dispatcher event that finished job `action` (cronsnap, cronscrub, runreplication) on `subject`. */
export function finishedJob(action: string, subject: string) {
  return (env: Envelope) => {
    const a = (env.args as { name: string; args: Record<string, unknown> }).args;
    return (
      (env.args as { name: string }).name === 'dispatcher' &&
      a.event_system === 'admin/snapshot' &&
      a.state === 'finished' &&
      a.action === action &&
      (a.pool === subject || a.dataset === subject)
    );
  };
}

export function eventArgs(env: Envelope): Record<string, unknown> {
  return (env.args as { args: Record<string, unknown> }).args;
}
