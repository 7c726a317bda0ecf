/**
 * Each user sees only what is theirs (issue 12 item 2): over real sockets, an operator (limited)
 * subscribed to `dispatcher` never receives an admin's job events, not even the replayed last event;
 * `dispatcher list` shows it only its own jobs; `log` of another user's job answers like a missing
 * job. Full-access users see everything. Before this change every subscriber got every event.
 *
 * "Not delivered" is checked without timers: the agent writes an event to every subscribed socket
 * while publishing, so once a later reply has arrived on that socket, a delivered event would be there.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import { RUN_JOB_TYPE } from '@hostadm/agent/jobs/run-job.ts';

const jobEvents = (client: TestClient, id: string) => client.events.filter((e) => (e.args as { args: { proc_id?: string } }).args.proc_id === id);

const finished = (client: TestClient, id: string) =>
  client.nextEvent((e) => {
    const a = (e.args as { args: Record<string, unknown> }).args;
    return a.proc_id === id && a.state === 'finished';
  });

async function signedIn(t: TestContext, agent: TestAgent, user: string): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  await client.login(user);
  return client;
}

function listed(reply: Envelope): string[] {
  const jobs = (reply.args as { jobs: Record<string, Record<string, unknown>> }).jobs;
  return Object.values(jobs)
    .flatMap((q) => Object.keys(q))
    .sort();
}

test("an operator never receives an admin's job events, live or replayed, and does not see them in list or log", async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const admin = await signedIn(t, agent, 'admin');
  const root = await signedIn(t, agent, 'root');
  const operator = await signedIn(t, agent, 'operator');
  for (const c of [admin, root, operator]) await c.request('events', 'subscribe', ['dispatcher']);

  // Live: the admin's job, with its command line and output.
  assert.equal((await admin.request('rpc', 'dispatcher', { action: 'run', secret_job: 'echo admin-secret-output' })).name, 'response');
  await finished(admin, 'secret_job');
  await finished(root, 'secret_job');
  await operator.request('rpc', 'query', {});
  assert.deepEqual(jobEvents(operator, 'secret_job'), [], "the operator received the admin's job events");

  // Replayed: a fresh operator connection subscribing gets no admin event as "the last one".
  const late = await signedIn(t, agent, 'operator');
  await late.request('events', 'subscribe', ['dispatcher']);
  await late.request('rpc', 'query', {});
  assert.deepEqual(late.events, [], "the replayed last event was the admin's");

  // list and log.
  assert.deepEqual(listed(await operator.request('rpc', 'dispatcher', { action: 'list' })), []);
  assert.deepEqual(listed(await root.request('rpc', 'dispatcher', { action: 'list' })), ['secret_job']);
  const theirs = await operator.request('rpc', 'dispatcher', { action: 'log', job_id: 'secret_job' });
  const missing = await operator.request('rpc', 'dispatcher', { action: 'log', job_id: 'no_such_job' });
  assert.equal(theirs.name, 'error');
  assert.equal((theirs.args as { code: number }).code, (missing.args as { code: number }).code, "another user's job must look like a missing one");
  assert.doesNotMatch(JSON.stringify(theirs.args), /admin-secret-output|echo/);
});

test("an operator's own job: the operator and full access see its events and list entry; the replay picks the newest it may see", async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const admin = await signedIn(t, agent, 'admin');
  const operator = await signedIn(t, agent, 'operator');
  for (const c of [admin, operator]) await c.request('events', 'subscribe', ['dispatcher']);

  // Operators cannot `run`; their jobs come from queued class operations, submitted as theirs.
  agent.services.jobs.submit([{ id: 'op_job', type: RUN_JOB_TYPE, params: { commands: ['true'] }, queue: 'no_queue', owner: 'operator' }]);
  await finished(operator, 'op_job');
  await finished(admin, 'op_job');
  assert.deepEqual(listed(await operator.request('rpc', 'dispatcher', { action: 'list' })), ['op_job']);
  assert.equal((await operator.request('rpc', 'dispatcher', { action: 'log', job_id: 'op_job' })).name, 'response');

  // A newer admin job: a new operator subscriber is replayed the operator's own job, the admin's newest.
  await admin.request('rpc', 'dispatcher', { action: 'run', admin_job: 'true' });
  await finished(admin, 'admin_job');
  const lateOperator = await signedIn(t, agent, 'operator');
  const lateAdmin = await signedIn(t, agent, 'admin');
  for (const c of [lateOperator, lateAdmin]) {
    await c.request('events', 'subscribe', ['dispatcher']);
    await c.request('rpc', 'query', {});
  }
  const proc = (c: TestClient) => c.events.map((e) => (e.args as { args: { proc_id: string } }).args.proc_id);
  assert.deepEqual(proc(lateOperator), ['op_job']);
  assert.deepEqual(proc(lateAdmin), ['admin_job']);
});

test('a job without a recorded owner is visible to full access only', async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const admin = await signedIn(t, agent, 'admin');
  const operator = await signedIn(t, agent, 'operator');
  for (const c of [admin, operator]) await c.request('events', 'subscribe', ['dispatcher']);
  agent.services.jobs.submit([{ id: 'orphan', type: RUN_JOB_TYPE, params: { commands: ['true'] }, queue: 'no_queue', owner: '' }]);
  await finished(admin, 'orphan');
  await operator.request('rpc', 'query', {});
  assert.deepEqual(jobEvents(operator, 'orphan'), []);
  assert.deepEqual(listed(await operator.request('rpc', 'dispatcher', { action: 'list' })), []);
});
