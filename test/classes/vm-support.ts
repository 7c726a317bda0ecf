/**
 * Shared by the vm tests: calling the class, reading a refusal's named field, and following a
 * `fetchiso` job's dispatcher events to its end.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { CommandRunner } from '@hostadm/agent/runner/runner.ts';
import { startTestAgent, type Envelope, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession } from './services-support.ts';

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

/** What a FreeBSD driver test's fake host records: every argv run, with its data directory's real path. */
export interface RecordingHost {
  calls: string[][];
  mount: string;
}

export type Step = (label: string, action: string, args: Record<string, unknown>, reply?: unknown) => Promise<Record<string, unknown>>;

/**
 * A `step` that calls an action (checking its reply when given) and files the argv it ran under
 * `label` in `ran`, the fake host's directory shown as `shownAs` (what the argv snapshot holds).
 */
export function argvSteps(client: TestClient, host: RecordingHost, shownAs: string): { ran: Record<string, string[][]>; step: Step } {
  const ran: Record<string, string[][]> = {};
  const step: Step = async (label, action, args, reply) => {
    host.calls.length = 0;
    const got = await vmOk(client, action, args);
    if (reply !== undefined) assert.deepEqual(got, reply, label);
    ran[label] = host.calls.map((argv) => argv.map((a) => a.replaceAll(host.mount, shownAs)));
    return got;
  };
  return { ran, step };
}

/**
 * The part of a guest's life every FreeBSD driver walks alike, once `web1` (a 20G disk0, stopped)
 * and the ISO `FreeBSD-14.3.iso` exist: install, stop, start, a refused delete of a running guest, a
 * second disk added, listed, resized (and a refused shrink), removed, the ISO removed, the guest deleted.
 */
export async function walkInstalledGuest(client: TestClient, step: Step): Promise<void> {
  await step('install', 'install', { name: 'web1', iso: 'FreeBSD-14.3.iso' }, { install: { iso: 'FreeBSD-14.3.iso', name: 'web1' } });
  await step('stop', 'stop', { name: 'web1' }, { stop: { name: 'web1' } });
  await step('start', 'start', { name: 'web1' }, { start: { name: 'web1' } });
  await vmRefused(client, 'delete', { name: 'web1' }, 409, 'name');
  await step('stop again', 'stop', { name: 'web1' });
  await step('adddisk', 'adddisk', { name: 'web1', size: '8G' }, { adddisk: { web1: { size: '8G' } } });
  await step('listdisks', 'listdisks', { name: 'web1' }, { listdisks: { disk0: '20G', disk1: '8G' } });
  await step('resizedisk', 'resizedisk', { name: 'web1', disk: 'disk1', size: '16G' }, { resizedisk: { disk: 'disk1', name: 'web1', size: '16G' } });
  await vmRefused(client, 'resizedisk', { name: 'web1', disk: 'disk0', size: '20G' }, 400, 'size');
  await step('deletedisk', 'deletedisk', { name: 'web1', disk: 'disk1' }, { deletedisk: { disk: 'disk1', name: 'web1' } });
  await step('rmiso', 'rmiso', { target: 'FreeBSD-14.3.iso' }, { rmiso: { target: 'FreeBSD-14.3.iso' } });
  await step('delete', 'delete', { name: 'web1' }, { delete: { name: 'web1' } });
}

/**
 * An agent on the FreeBSD platform whose commands go to `makeHost(dir)` (a fake vm tool over a
 * temporary directory), with `tool` as its vm driver, and a root session subscribed to dispatcher events.
 */
export async function freebsdVmAgent<H extends RecordingHost & CommandRunner>(
  t: TestContext,
  tool: 'vm-bhyve' | 'iohyve',
  makeHost: (dir: string) => H,
): Promise<{ host: H; root: TestClient }> {
  const mount = mkdtempSync(join(tmpdir(), `hostadm-${tool}-`));
  t.after(() => rmSync(mount, { recursive: true, force: true }));
  const host = makeHost(mount);
  const agent = await startTestAgent({ platform: 'freebsd', runner: host, maxIsoBytes: 1024 * 1024, freebsdVmTool: tool });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  await root.request('events', 'subscribe', ['dispatcher']);
  host.calls.length = 0;
  return { host, root };
}
