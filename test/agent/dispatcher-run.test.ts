/**
 * `dispatcher run/list/kill/log/acknowledge` over a real WebSocket with real processes: chains, kill
 * of a process group, events in the spec's shape, duplicate ids, access rules, log cap.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import type { AgentOptions } from '@hostadm/agent/agent.ts';

/** `list` with nothing to show: the spec's three queues, each empty. */
const NO_JOBS = { jobs: { no_queue: {}, pkg_queue: {}, jail_queue: {} } };

async function setup(t: TestContext, overrides: Partial<AgentOptions> = {}): Promise<{ agent: TestAgent; admin: TestClient; dir: string }> {
  // These tests are about the dispatcher driving real processes; sim simulates jobs unless told otherwise.
  const agent = await startTestAgent({ simHostCommands: true, ...overrides });
  const admin = await TestClient.connect(agent.url);
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-jobs-'));
  t.after(async () => {
    admin.close();
    await agent.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.login('admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  return { agent, admin, dir };
}

const finishedEvent = (client: TestClient, id: string) =>
  client.nextEvent((e) => {
    const a = (e.args as { args: Record<string, unknown> }).args;
    return a.proc_id === id && a.state === 'finished';
  });

const payload = (e: Envelope) => (e.args as { name: string; args: Record<string, string | string[]> }).args;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed child may linger as a zombie until its parent reaps it: that is gone for our purposes.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

test("run: a command runs, and its completion event has the spec's run-job shape", async (t) => {
  const { admin } = await setup(t);
  const done = finishedEvent(admin, 'hello-1');
  const reply = await admin.request('rpc', 'dispatcher', { action: 'run', 'hello-1': `printf '%s' "hello world"` });
  assert.deepEqual(reply.args, { started: ['hello-1'] });
  const event = await done;
  assert.equal(event.id, '');
  assert.equal(event.name, 'event');
  assert.equal(event.namespace, 'events');
  assert.equal((event.args as { name: string }).name, 'dispatcher');
  const p = payload(event);
  assert.deepEqual(p.cmd_list, [`printf '%s' "hello world"`]);
  assert.equal(p.log, 'hello world');
  assert.equal(p.success, 'true');
  assert.equal(p.proc_id, 'hello-1');
  assert.ok(!Number.isNaN(Date.parse(p.time_started as string)));
  assert.ok(Date.parse(p.time_finished as string) >= Date.parse(p.time_started as string));
});

test('a chain stops at the first failing command; later commands never run', async (t) => {
  const { admin, dir } = await setup(t);
  const marker = join(dir, 'should-not-exist');
  const done = finishedEvent(admin, 'chain');
  await admin.request('rpc', 'dispatcher', { action: 'run', chain: ['echo one', 'false', `touch ${marker}`] });
  const p = payload(await done);
  assert.equal(p.success, 'false');
  assert.match(p.reason as string, /"false" exited with code 1/);
  assert.equal(p.log, 'one\n');
  assert.equal(existsSync(marker), false);
  const log = await admin.request('rpc', 'dispatcher', { action: 'log', job_id: 'chain' });
  assert.deepEqual((log.args as { log: { return_codes: unknown } }).log.return_codes, { 'echo one': '0', false: '1' });
});

test('a missing binary fails the job clearly; shell syntax is not interpreted', async (t) => {
  const { admin, dir } = await setup(t);
  const done = finishedEvent(admin, 'nobin');
  await admin.request('rpc', 'dispatcher', { action: 'run', nobin: 'no-such-binary-xyz --flag' });
  const p = payload(await done);
  assert.equal(p.success, 'false');
  assert.match(p.log as string, /command not found: no-such-binary-xyz/);
  const target = join(dir, 'pwned');
  const literal = finishedEvent(admin, 'literal');
  await admin.request('rpc', 'dispatcher', { action: 'run', literal: `echo hi; touch ${target}` });
  assert.equal(payload(await literal).log, `hi; touch ${target}\n`);
  assert.equal(existsSync(target), false);
});

test('kill ends a running sleep and its children (the whole process group)', async (t) => {
  const { admin } = await setup(t);
  const started = admin.nextEvent((e) => payload(e).proc_id === 'sleeper' && /\d+/.test(String(payload(e).log)));
  await admin.request('rpc', 'dispatcher', { action: 'run', sleeper: `sh -c 'sleep 300 & echo $!; wait'` });
  const childPid = Number(String(payload(await started).log).trim());
  assert.ok(alive(childPid), 'the child sleep is running');
  const done = finishedEvent(admin, 'sleeper');
  const reply = await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: ['sleeper', 'never-existed'] });
  assert.deepEqual(reply.args, { killed: { jobs: ['sleeper'] } });
  const p = payload(await done);
  assert.equal(p.success, 'false');
  assert.match(p.reason as string, /killed by admin/);
  for (let i = 0; i < 100 && alive(childPid); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(alive(childPid), false, 'the child sleep was killed with its group');
  const again = await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: 'sleeper' });
  assert.deepEqual(again.args, { killed: { jobs: [] } }, 'a finished job is not reported as killed');
});

test('list shows running, pending and finished jobs; acknowledge removes finished ones; ids are unique', async (t) => {
  const { admin } = await setup(t, { dispatcher: { noQueueConcurrency: 1 } });
  const runningStarted = admin.nextEvent((e) => payload(e).proc_id === 'first' && payload(e).state === 'running');
  await admin.request('rpc', 'dispatcher', { action: 'run', first: 'sleep 30', second: 'echo two' });
  await runningStarted;
  const list = await admin.request('rpc', 'dispatcher', { action: 'list' });
  assert.deepEqual(list.args, {
    jobs: {
      no_queue: {
        first: { commands: ['sleep 30'], queue_position: '0', state: 'running' },
        second: { commands: ['echo two'], queue_position: '1', state: 'pending' },
      },
      pkg_queue: {},
      jail_queue: {},
    },
  });
  const dup = await admin.request('rpc', 'dispatcher', { action: 'run', first: 'echo again' });
  assert.equal(dup.name, 'error');
  assert.equal((dup.args as { code: number }).code, 409);
  assert.match((dup.args as { message: string }).message, /"first" already exists/);

  const secondDone = finishedEvent(admin, 'second');
  await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: 'first' });
  await secondDone;
  const after = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as {
    jobs: { no_queue: Record<string, { state: string; success?: string }> };
  };
  assert.equal(after.jobs.no_queue.first?.state, 'finished');
  assert.equal(after.jobs.no_queue.first?.success, 'false');
  assert.equal(after.jobs.no_queue.second?.success, 'true');
  const ack = await admin.request('rpc', 'dispatcher', { action: 'acknowledge', job_id: ['first', 'second'] });
  assert.deepEqual(ack.args, { acknowledged: { jobs: ['first', 'second'] } });
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'list' })).args, NO_JOBS);
  const log = await admin.request('rpc', 'dispatcher', { action: 'log', job_id: 'second' });
  assert.equal((log.args as { log: { log: string } }).log.log, 'two\n', 'an acknowledged job stays readable');
});

test('bad requests change nothing: a bad command in one job refuses them all; operators may not run or kill', async (t) => {
  const { agent, admin } = await setup(t);
  const bad = await admin.request('rpc', 'dispatcher', { action: 'run', good: 'echo ok', broken: `echo "unterminated` });
  assert.equal((bad.args as { code: number }).code, 400);
  assert.deepEqual((bad.args as { errors: unknown }).errors, [{ field: 'broken', message: 'unterminated double quote' }]);
  const badId = await admin.request('rpc', 'dispatcher', { action: 'run', 'bad id;rm': 'echo x' });
  assert.equal((badId.args as { code: number }).code, 400);
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'list' })).args, NO_JOBS);

  const operator = await TestClient.connect(agent.url);
  t.after(() => operator.close());
  await operator.login('operator');
  const run = await operator.request('rpc', 'dispatcher', { action: 'run', op: 'id' });
  assert.equal((run.args as { code: number }).code, 403);
  const kill = await operator.request('rpc', 'dispatcher', { action: 'kill', job_id: 'x' });
  assert.equal((kill.args as { code: number }).code, 403);
  assert.equal((await operator.request('rpc', 'dispatcher', { action: 'list' })).name, 'response', 'operators may look');
  assert.deepEqual((await admin.request('rpc', 'dispatcher', { action: 'list' })).args, NO_JOBS);
});

test('running jobs report output as it comes; logs are capped and the cap is reported', async (t) => {
  const { admin } = await setup(t, { dispatcher: { logCapBytes: 1000 } });
  const progress = admin.nextEvent((e) => payload(e).proc_id === 'talker' && payload(e).state === 'running' && String(payload(e).log).includes('first'));
  const done = finishedEvent(admin, 'talker');
  await admin.request('rpc', 'dispatcher', {
    action: 'run',
    talker: [`sh -c 'echo first; sleep 0.5; echo second'`, `sh -c 'head -c 5000 /dev/zero | tr "\\0" x'`],
  });
  await progress;
  const p = payload(await done);
  assert.equal(p.success, 'true');
  assert.equal(p.log_truncated, 'true');
  assert.equal(p.log_cap_bytes, '1000');
  assert.ok(Buffer.byteLength(String(p.log)) < 1100);
  assert.match(String(p.log), /^first\nsecond\nx+\n\[log truncated: cap of 1000 bytes reached\]\n$/);
});

test('run and kill are in the audit log with the caller and the job ids', async (t) => {
  const { agent, admin } = await setup(t);
  const done = finishedEvent(admin, 'audited');
  await admin.request('rpc', 'dispatcher', { action: 'run', audited: 'true' });
  await done;
  await admin.request('rpc', 'dispatcher', { action: 'kill', job_id: 'audited' });
  const rows = agent.services.audit.recent(20).filter((r) => r.name === 'dispatcher');
  const run = rows.find((r) => r.action === 'run');
  const kill = rows.find((r) => r.action === 'kill');
  assert.equal(run?.user, 'admin');
  assert.match(run?.detail ?? '', /started audited: true/);
  assert.equal(kill?.user, 'admin');
  assert.match(kill?.detail ?? '', /killed \(none\)/);
});
