/**
 * Events and jobs through the SDK: the async iterator and the callback, job handles for `dispatcher
 * run` (progress steps, completion, several jobs, kill, fast jobs whose completion beats the reply),
 * following an existing job, and the matching of class-operation events (shape 2) by process id.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestClient } from '../helpers/agent.ts';
import { HostadmRequestError, jobSucceeded, type ClassJobEvent, type HostadmEvent, type JobProgress } from '../../client/sdk/src/node.ts';
import { eventJobId, JobTracker, progressOf } from '../../client/sdk/src/jobs.ts';
import { agentFor, clientFor, until } from './support.ts';

const jobOf = (e: HostadmEvent) => (e.name === 'dispatcher' ? eventJobId(e.args) : undefined);

test('events.subscribe is an async iterator; on("event") sees the same events; close() unsubscribes', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const stream = client.events.subscribe(['dispatcher']);
  await stream.ready;
  const seen: HostadmEvent[] = [];
  const off = client.on('event', (e) => seen.push(e));

  // Another connection starts a job; this one hears about it.
  const other = await TestClient.connect(agent.url);
  t.after(() => other.close());
  await other.login('admin');
  await other.request('rpc', 'dispatcher', { action: 'run', echo1: 'echo hello' });

  const received: HostadmEvent[] = [];
  for await (const event of stream) {
    if (jobOf(event) !== 'echo1') continue;
    received.push(event);
    if (event.name === 'dispatcher' && event.args.state === 'finished') break;
  }
  const last = received.at(-1)!;
  assert.equal(last.name, 'dispatcher');
  if (last.name === 'dispatcher') {
    assert.equal(last.args.success, 'true');
    assert.equal((last.args as { log: string }).log, 'hello\n');
  }
  assert.ok(seen.filter((e) => jobOf(e) === 'echo1').length >= received.length);
  off();

  // `break` ended the stream; a callback subscription works the same way.
  const heard: string[] = [];
  const listener = client.events.listen('dispatcher', (e) => {
    const id = jobOf(e);
    if (id) heard.push(id);
  });
  await listener.ready;
  await other.request('rpc', 'dispatcher', { action: 'run', echo2: 'echo again' });
  await until(() => heard.includes('echo2'), 5000, 'the echo2 event');
  await listener.close();

  // An unknown event name is refused by the contract before anything is sent.
  const bad = client.events.subscribe(['dispatcher', 'no-such-event']);
  await assert.rejects(bad.ready, (err: unknown) => err instanceof HostadmRequestError && err.local && err.code === 400 && err.fieldErrors[0]?.field === '1');
  await assert.rejects(bad.next(), HostadmRequestError);
});

test('dispatcher run gives a job handle: progress steps, then the completion event', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const job = await client.rpc.dispatcher.run({ chain1: ['echo one', 'sleep 0.4', 'echo two'] });
  assert.equal(job.id, 'chain1');
  assert.deepEqual(job.ack, { started: ['chain1'] });
  const steps: JobProgress[] = [];
  for await (const step of job.progress) steps.push(step);
  const done = await job.done;
  assert.equal(done.success, 'true');
  assert.equal(jobSucceeded(done), true);
  assert.equal(job.completion, done);
  assert.equal((done as { proc_id: string }).proc_id, 'chain1');
  // The steps' outputs together are the job's whole log.
  assert.equal(steps.map((s) => s.output).join(''), 'one\ntwo\n');
  assert.ok(steps.some((s) => s.event.state === 'running'));
  // Iterating again replays every step.
  const again: JobProgress[] = [];
  for await (const step of job.progress) again.push(step);
  assert.equal(again.length, steps.length);
});

test('several jobs in one run: one handle each; a failing job completes with success false', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const job = await client.rpc.dispatcher.run({ ok1: 'echo fine', bad1: ['echo before', 'false', 'echo never'] });
  assert.deepEqual(job.jobs.map((j) => j.id).sort(), ['bad1', 'ok1']);
  const all = await job.allDone();
  const byId = Object.fromEntries(all.map((c) => [(c as { proc_id: string }).proc_id, c]));
  assert.equal(byId.ok1?.success, 'true');
  assert.equal(byId.bad1?.success, 'false');
  assert.match(String(byId.bad1?.reason), /"false" exited with code 1/);
});

test('fast jobs: a completion that arrives before the acknowledgement is not lost', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const jobs = await Promise.all(Array.from({ length: 8 }, (_, i) => client.rpc.dispatcher.run({ [`fast${i}`]: 'true' })));
  const done = await Promise.all(jobs.map((j) => j.done));
  assert.ok(done.every((d) => d.success === 'true'));
});

test('kill cancels a running job; its handle completes with the reason', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const job = await client.rpc.dispatcher.run({ sleeper: 'sleep 30' });
  // Wait until it runs (its first progress step), then cancel it.
  for await (const _ of job.progress) break;
  assert.equal(await job.kill(), true);
  const done = await job.done;
  assert.equal(done.success, 'false');
  assert.match(String(done.reason), /killed/);
  assert.equal(await job.kill(), false);
});

test('client.job follows a job started elsewhere, and one that already finished (read from its record)', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  const other = await TestClient.connect(agent.url);
  t.after(() => other.close());
  await other.login('admin');

  await other.request('rpc', 'dispatcher', { action: 'run', early: 'echo early' });
  await new Promise((r) => setTimeout(r, 300));
  const finished = await client.job('early');
  const early = await finished.done;
  assert.equal(early.success, 'true');
  assert.equal((early as { log: string }).log, 'early\n');

  await other.request('rpc', 'dispatcher', { action: 'run', later: ['sleep 0.3', 'echo later'] });
  const running = await client.job('later');
  assert.equal(((await running.done) as { log: string }).log, 'later\n');
});

test('class-operation events (spec shape 2) are matched by process_details.process_id, with percent and *_log output', () => {
  const released: string[] = [];
  const tracker = new JobTracker({
    retainEvents: () => undefined,
    releaseEvents: () => released.push('dispatcher'),
    killJob: async () => false,
  });
  const id = 'admin_pkg_upgrade-{0b7b6e3c-1d1f-4f53-9d0a-4a4e1c2f5b10}';
  const end = tracker.beginCapture();
  // (The contract's catch-all for `return_codes/<command>` makes this shape unwritable as a literal type.)
  const details = (state: 'running' | 'finished') =>
    ({ time_started: 't0', time_finished: '', cmd_list: ['pkg upgrade -y'], process_id: id, state }) as unknown as ClassJobEvent['process_details'];
  // This event arrives before the acknowledgement naming the job: it is buffered.
  tracker.onEvent({ event_system: 'admin/pkg', state: 'running', process_details: details('running'), percent_done: '40%', pkg_log: 'Fetching 3 packages\n' });
  const job = tracker.track(id);
  end();
  tracker.onEvent({
    event_system: 'admin/pkg',
    state: 'finished',
    process_details: details('finished'),
    success: 'true',
    reason: '',
    pkg_log: 'done\n',
    action: 'pkg_upgrade',
  });
  assert.equal(job.completion?.success, 'true');
  assert.deepEqual(released, ['dispatcher']);
  const step = progressOf(id, { event_system: 'admin/pkg', state: 'running', process_details: details('running'), percent_done: '40%', pkg_log: 'x' });
  assert.equal(step.percent, 40);
  assert.equal(step.output, 'x');
  assert.equal(eventJobId({ queueid: 'q1' }), 'q1');
});
