/**
 * Replication on the simulated host, over a real socket: a task added (its reply without the
 * password), run twice (a full copy, then an increment) with progress events and the completion
 * event's fields, an unreachable remote refused without storing the task, and a limited user refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, type Envelope, type TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { okCall } from './powerd-support.ts';

const TASK = {
  host: 'backup.example.org',
  port: '22',
  user: 'repl',
  password: 's3cret pass',
  dataset: 'tank',
  remotedataset: 'vault/tank',
  frequency: 'manual',
};
const eventOf = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;

async function run(admin: TestClient): Promise<{ done: Record<string, unknown>; percents: number[] }> {
  const before = admin.events.length;
  await okCall(admin, 'snapshot', 'runreplication', { dataset: 'tank', host: TASK.host });
  const mine = (e: Envelope) => admin.events.indexOf(e) >= before && eventOf(e).action === 'runreplication';
  const done = eventOf(await admin.nextEvent((e) => mine(e) && eventOf(e).state === 'finished'));
  const percents = admin.events
    .filter(mine)
    .map((e) => Number.parseFloat(String(eventOf(e).percent_done)))
    .filter(Number.isFinite);
  return { done, percents };
}

test('sim: add (no password in the reply), list, run full then incremental with progress, init, remove', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher', 'life-preserver']);
  const added = await okCall(admin, 'snapshot', 'addreplication', TASK);
  assert.deepEqual(added, { addreplication: { frequency: 'manual', host: TASK.host, ldataset: 'tank', port: '22', rdataset: 'vault/tank', user: 'repl' } });
  assert.ok(!JSON.stringify(added).includes(TASK.password));
  assert.deepEqual(await okCall(admin, 'snapshot', 'listreplication'), {
    listreplication: { [`tank->${TASK.host}`]: { dataset: 'tank', frequency: 'manual', host: TASK.host, port: '22', rdset: 'vault/tank', user: 'repl' } },
  });
  const first = await run(admin);
  assert.equal(first.done.success, 'true');
  assert.equal(first.done.incremental, 'false');
  assert.ok(first.percents.length > 0, 'progress events');
  const second = await run(admin);
  assert.equal(second.done.incremental, 'true');
  await okCall(admin, 'snapshot', 'initreplication', { dataset: 'tank', host: TASK.host });
  assert.equal((await run(admin)).done.incremental, 'false', 'full again after initreplication');
  await okCall(admin, 'snapshot', 'removereplication', { dataset: 'tank', host: TASK.host });
  assert.deepEqual(await okCall(admin, 'snapshot', 'listreplication'), { listreplication: {} });
});

test('sim: an unreachable remote is a 500 and stores nothing; bad names 400; a limited user 403', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  assert.match(expectError(await admin.call('snapshot', 'addreplication', { ...TASK, host: 'gone.invalid' }), 500).message, /Could not resolve hostname/);
  expectError(await admin.call('snapshot', 'addreplication', { ...TASK, port: '70000' }), 400);
  expectError(await admin.call('snapshot', 'addreplication', { ...TASK, remotedataset: '-oops' }), 400);
  assert.deepEqual(await okCall(admin, 'snapshot', 'listreplication'), { listreplication: {} });
  const operator = await clientFor(t, agent, 'operator');
  expectError(await operator.call('snapshot', 'addreplication', TASK), 403);
});
