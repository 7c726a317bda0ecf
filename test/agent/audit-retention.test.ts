/**
 * The agent's disk stays bounded however long it runs: the audit log keeps every change, sign-in and
 * refusal within its retention (age and rows, set by the administrator), counts reads per hour instead
 * of writing a row each, and the dispatcher keeps a bounded number of finished jobs and bytes of logs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { count } from 'drizzle-orm';
import { agentFor, clientFor, ManualClock } from '../helpers/agent.ts';
import { auditLog, type auditSummary, jobs } from '@hostadm/agent/store/schema.ts';
import type { TestAgent } from '../helpers/agent.ts';

const rowsIn = (agent: TestAgent, table: typeof auditLog | typeof auditSummary | typeof jobs) => agent.services.db.select({ n: count() }).from(table).get()!.n;

test('1,000 reads add no audit rows: they are one hourly count per user and action', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  const rowsBefore = rowsIn(agent, auditLog);
  for (let i = 0; i < 1000; i++) await admin.call('settings', 'list_ssl_certs');
  assert.equal(rowsIn(agent, auditLog), rowsBefore, 'no row per read');
  const [summary] = agent.services.audit.recentSummaries(1);
  assert.equal(summary?.action, 'list_ssl_certs');
  assert.equal(summary?.calls, 1000);
  // The next hour starts a new count.
  agent.clock.advance(3600);
  await admin.login('admin'); // the hour outlived the session
  await admin.call('settings', 'list_ssl_certs');
  assert.deepEqual(
    agent.services.audit.recentSummaries(2).map((s) => s.calls),
    [1, 1000],
  );
});

test('past the row limit the oldest rows go, the newest changes stay, and the table never grows past 110%', async (t) => {
  const agent = await agentFor(t, { config: { audit: { maxRows: 50 } } });
  const admin = await clientFor(t, agent, 'admin');
  let highest = 0;
  for (let i = 0; i < 300; i++) {
    await admin.call('users', 'groupadd', { name: `g${i}` });
    highest = Math.max(highest, rowsIn(agent, auditLog));
  }
  assert.ok(highest <= 55, `the audit log held ${highest} rows with a limit of 50`);
  const kept = agent.services.audit.recent(100).map((r) => r.action);
  assert.ok(kept.length <= 55 && kept.length >= 45, `${kept.length} rows kept`);
  assert.ok(kept.every((a) => a === 'groupadd'));
  const details = agent.services.audit.recent(1);
  assert.equal(details[0]?.action, 'groupadd', 'the newest change is there');
});

test('rows older than the retention go when the agent starts, and not before their time', async (t) => {
  const clock = new ManualClock();
  const first = await agentFor(t, { clock, config: { audit: { maxAgeDays: 30 } } });
  let admin = await clientFor(t, first, 'admin');
  await admin.call('users', 'groupadd', { name: 'old_change' });
  await admin.call('settings', 'list_ssl_certs');
  admin.close();
  clock.advance(29 * 86_400);
  const second = await first.restart();
  t.after(() => second.close());
  assert.ok(
    second.services.audit.recent(10).some((r) => r.action === 'groupadd'),
    '29 days old: kept',
  );

  clock.advance(2 * 86_400);
  admin = await clientFor(t, second, 'admin');
  await admin.call('users', 'groupadd', { name: 'new_change' });
  admin.close();
  const third = await second.restart();
  t.after(() => third.close());
  const changes = third.services.audit.recent(100).filter((r) => r.action === 'groupadd');
  assert.equal(changes.length, 1, 'only the new change is left');
  assert.equal(changes[0]!.at.getTime() > clock.now() - 86_400_000, true);
  assert.equal(third.services.audit.recentSummaries(10).filter((s) => s.action === 'list_ssl_certs').length, 0, 'the old hourly count went too');
});

test('finished jobs past the count or log-size bound go, oldest first; pending and running ones never', async (t) => {
  const agent = await agentFor(t, { dispatcher: { maxFinishedJobs: 10, maxStoredLogBytes: 2000 } });
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  const finished = (id: string) =>
    admin.nextEvent((e) => {
      const a = (e.args as { args: Record<string, unknown> }).args;
      return a.proc_id === id && a.state === 'finished';
    });
  // A long job stays running through all of it.
  await admin.request('rpc', 'dispatcher', { action: 'run', long_one: 'sleep 600' });
  for (let i = 0; i < 40; i++) {
    const done = finished(`j${i}`);
    await admin.request('rpc', 'dispatcher', { action: 'run', [`j${i}`]: `echo ${'x'.repeat(i % 2 === 0 ? 20 : 300)}` });
    await done;
  }
  const stored = agent.services.db.select({ id: jobs.id, state: jobs.state, bytes: jobs.logBytes }).from(jobs).all();
  const done = stored.filter((j) => j.state === 'finished');
  assert.ok(done.length <= 10, `${done.length} finished jobs kept, bound 10`);
  assert.ok(done.reduce((n, j) => n + j.bytes, 0) <= 2000 * 1.05, 'log bytes within the bound');
  assert.ok(
    done.some((j) => j.id === 'j39'),
    'the newest finished job is kept',
  );
  assert.ok(!done.some((j) => j.id === 'j0'), 'the oldest went');
  assert.ok(
    stored.some((j) => j.id === 'long_one' && j.state === 'running'),
    'the running job is untouched',
  );
  const listed = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: { no_queue: Record<string, unknown> } };
  assert.ok(!('j0' in listed.jobs.no_queue) && 'j39' in listed.jobs.no_queue && 'long_one' in listed.jobs.no_queue);
});
