/**
 * Queue semantics with real processes: FIFO one-at-a-time on pkg_queue, parallelism on no_queue, the
 * queue bound, class-operation events in the spec's shape, and paced sim work with percentages.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classJobEvent } from '@hostadm/shared/api/dispatcher.ts';
import { pendingAck } from '@hostadm/shared/api/fields.ts';
import { QueuedActions, type JobPlan } from '@hostadm/agent/jobs/queued-actions.ts';
import { runSimulatedSteps } from '@hostadm/agent/jobs/simulated-work.ts';
import type { AgentOptions } from '@hostadm/agent/agent.ts';
import { classes } from '@hostadm/agent/classes/index.ts';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

async function setup(t: TestContext, overrides: Partial<AgentOptions> = {}): Promise<{ agent: TestAgent; admin: TestClient; dir: string }> {
  // These tests are about the dispatcher driving real processes; sim simulates jobs unless told otherwise.
  const agent = await startTestAgent({ simHostCommands: true, ...overrides });
  const admin = await TestClient.connect(agent.url);
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-queues-'));
  t.after(async () => {
    admin.close();
    await agent.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.login('admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  return { agent, admin, dir };
}

const payload = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;
const idOf = (p: Record<string, unknown>) => (p.proc_id ?? (p.process_details as { process_id?: string } | undefined)?.process_id) as string;
const finished = (client: TestClient, id: string) => client.nextEvent((e) => idOf(payload(e)) === id && payload(e).state === 'finished');

/** A pkg-like class job: appends start/end marks to a file around a short real sleep. */
const markerPlan = (file: string, name: string): JobPlan => ({
  steps: [{ argv: ['sh', '-c', `echo "start ${name}" >> "$0"; sleep 0.15; echo "end ${name}" >> "$0"; echo done ${name}`, file], label: `mark ${name}` }],
  fields: { action: 'pkg_test', updates_available: 'false' },
  logField: 'pkg_log',
});

test("pkg_queue runs one job at a time, in FIFO order; the class event has the spec's shape", async (t) => {
  const { agent, admin, dir } = await setup(t);
  const queued = new QueuedActions(agent.services.jobs);
  const file = join(dir, 'marks');
  const acks = ['a', 'b', 'c', 'd'].map((name) => {
    const ack = queued.submit({
      system: 'admin/pkgdemo',
      action: 'pkg_test',
      queue: 'pkg_queue',
      ack: 'proc_id',
      owner: 'admin',
      plan: markerPlan(file, name),
    });
    assert.ok('proc_id' in ack);
    return ack;
  });
  for (const ack of acks) {
    assert.ok(pendingAck().safeParse(ack).success);
    assert.match(ack.proc_id, /^admin_pkg_test-\{[0-9a-f-]{36}\}$/);
  }
  const list = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as {
    jobs: { pkg_queue: Record<string, { state: string; queue_position: string }> };
  };
  const states = acks.map((a) => list.jobs.pkg_queue[a.proc_id]);
  assert.deepEqual(
    states.map((s) => s?.state),
    ['running', 'pending', 'pending', 'pending'],
  );
  assert.deepEqual(
    states.map((s) => s?.queue_position),
    ['0', '1', '2', '3'],
  );

  const last = await finished(admin, acks[3]?.proc_id ?? '');
  assert.deepEqual(readFileSync(file, 'utf8').trim().split('\n'), ['start a', 'end a', 'start b', 'end b', 'start c', 'end c', 'start d', 'end d']);
  const p = payload(last);
  assert.ok(classJobEvent().safeParse(p).success, JSON.stringify(p));
  assert.equal(p.event_system, 'admin/pkgdemo', 'a class of its own: admin/pkg registers its job type with the agent');
  assert.equal(p.state, 'finished');
  assert.equal(p.action, 'pkg_test');
  assert.equal(p.updates_available, 'false');
  assert.equal(p.pkg_log, 'done d\n');
  const details = p.process_details as Record<string, unknown>;
  assert.equal(details.process_id, acks[3]?.proc_id);
  assert.deepEqual(details.cmd_list, ['mark d']);
  assert.equal(details['return_codes/mark d'], '0');
  assert.equal(details.state, 'finished');
  assert.ok(!Number.isNaN(Date.parse(details.time_finished as string)));
});

test('no_queue runs jobs in parallel up to its bound', async (t) => {
  const { admin, dir } = await setup(t, { dispatcher: { noQueueConcurrency: 3 } });
  const release = join(dir, 'release');
  const wait = (n: number) => `sh -c 'touch ${join(dir, `started-${n}`)}; while [ ! -e ${release} ]; do sleep 0.05; done'`;
  const done = finished(admin, 'p4');
  await admin.request('rpc', 'dispatcher', { action: 'run', p1: wait(1), p2: wait(2), p3: wait(3), p4: wait(4) });
  for (let i = 0; i < 200 && ![1, 2, 3].every((n) => existsSync(join(dir, `started-${n}`))); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(
    [1, 2, 3].every((n) => existsSync(join(dir, `started-${n}`))),
    'three jobs run at the same time',
  );
  assert.equal(existsSync(join(dir, 'started-4')), false, 'the fourth waits for a free slot');
  writeFileSync(release, '');
  assert.equal(payload(await done).success, 'true');
});

test('a full queue refuses new jobs with 503 and accepts none of a refused request', async (t) => {
  const { admin } = await setup(t, { dispatcher: { noQueueConcurrency: 1, maxPendingPerQueue: 2 } });
  const running = admin.nextEvent((e) => payload(e).proc_id === 'hold' && payload(e).state === 'running');
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'run', hold: 'sleep 30' })).args, { started: ['hold'] });
  await running;
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'run', q1: 'true', q2: 'true' })).args, { started: ['q1', 'q2'] });
  const refused = await admin.request('rpc', 'dispatcher', { action: 'run', q3: 'true' });
  assert.equal(refused.name, 'error');
  assert.equal((refused.args as { code: number }).code, 503);
  assert.match((refused.args as { message: string }).message, /queue no_queue is full/);
  const list = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: { no_queue: Record<string, unknown> } };
  assert.deepEqual(Object.keys(list.jobs.no_queue).sort(), ['hold', 'q1', 'q2']);
  await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: ['hold', 'q1', 'q2'] });
});

test('sim-style work reports percentages and output over time, and stops when killed', async (t) => {
  // admin/vm left out: its own queued actions would already own the job type this test submits to.
  const { agent, admin } = await setup(t, { dispatcher: { progressIntervalMs: 20 }, classes: { ...classes, 'admin/vm': null } });
  const queued = new QueuedActions(agent.services.jobs);
  const download = (steps: number): JobPlan => ({
    commands: ['fetch https://example.invalid/image.iso'],
    fields: { filename: 'image.iso' },
    work: async (ctx) => ({
      success: await runSimulatedSteps(
        ctx,
        Array.from({ length: steps }, (_, i) => ({ line: `chunk ${i + 1}`, ms: 60 })),
      ),
    }),
  });
  const fetchiso = (steps: number) => {
    const ack = queued.submit({ system: 'admin/vm', action: 'fetchiso', queue: 'no_queue', ack: 'queueid', owner: 'admin', plan: download(steps) });
    assert.ok('queueid' in ack);
    return { proc_id: ack.queueid };
  };
  const ack = fetchiso(5);
  const done = finished(admin, ack.proc_id);
  const last = payload(await done);
  assert.equal(last.percent_done, '100%');
  const progress = admin.events.map(payload).filter((p) => idOf(p) === ack.proc_id && p.state === 'running' && typeof p.percent_done === 'string');
  const distinct = new Set(progress.map((p) => p.percent_done));
  assert.ok(distinct.size >= 2, `several distinct percentages were reported before the end: ${[...distinct].join(', ')}`);
  assert.ok(progress.every((p) => p.event_system === 'admin/vm'));
  // The outcome is the completion event's alone (spec: `time_finished` once finished).
  assert.ok(
    progress.every((p) => !('success' in p) && !('time_finished' in (p.process_details as object))),
    'no outcome before the end',
  );
  assert.ok(!Number.isNaN(Date.parse((last.process_details as { time_finished: string }).time_finished)));
  assert.equal(last.filename, 'image.iso');

  const killable = fetchiso(1000);
  const killedDone = finished(admin, killable.proc_id);
  await admin.nextEvent((e) => idOf(payload(e)) === killable.proc_id && payload(e).state === 'running');
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: killable.proc_id })).args, { killed: { jobs: [killable.proc_id] } });
  assert.equal(payload(await killedDone).success, 'false');
});
