/**
 * Queued class actions over a real socket, through the path every queued class takes: the handler
 * only plans (argv steps, or a function that reports progress) and the pipeline submits to the
 * contract's queue, answers with the contract's acknowledgement and publishes the spec's events.
 * `admin/demo` is a demonstration class defined here (no class the agent serves today has a queued
 * action of its own): a contract, one handler table, and one entry added to the registry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { classJobEvent } from '@hostadm/shared/api/dispatcher.ts';
import { pendingAck, queuedAck, safeName } from '@hostadm/shared/api/fields.ts';
import { action, defineClass } from '@hostadm/shared/protocol/define.ts';
import { classes } from '@hostadm/agent/classes/index.ts';
import { implementClass } from '@hostadm/agent/classes/types.ts';
import { NOT_RESUMABLE } from '@hostadm/agent/jobs/queued-actions.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { agentFor, clientFor, startTestAgent, TestClient, type Envelope } from '../helpers/agent.ts';

/** What the `toucher` greeting would create if the sim platform ran host commands. */
const TOUCH_TARGET = join(tmpdir(), `hostadm-demo-untouched-${process.pid}-${Date.now()}`);

const demo = defineClass({
  namespace: 'admin',
  name: 'demo',
  description: 'Demonstration of queued actions (tests only)',
  limitedAccess: 'read',
  actions: {
    greet: action({
      description: 'Echo a greeting in two steps (pkg-style acknowledgement)',
      args: z.strictObject({ name: safeName('Who to greet') }),
      reply: z.object({ greet: pendingAck() }),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    fetch: action({
      description: 'Pretend to download, reporting progress (fetchiso-style acknowledgement)',
      args: z.strictObject({ chunks: z.number().int().min(1).max(1000).describe('How many chunks') }),
      reply: z.object({ fetch: queuedAck() }),
      access: 'write',
      queued: 'no_queue',
      ack: 'queueid',
    }),
  },
});

const demoImpl = implementClass(demo, () => ({
  async greet(args) {
    // A check that needs the host's state would refuse here, before anything is queued.
    if (args.name === 'nobody') throw badRequest('name: nobody is not here', [{ field: 'name', message: 'not here' }]);
    if (args.name === 'toucher') return { steps: [{ argv: ['touch', TOUCH_TARGET] }], logField: 'pkg_log' };
    return {
      steps: [
        { argv: ['echo', 'hello', args.name] },
        { argv: args.name === 'failing' ? ['false'] : args.name === 'slow' ? ['sleep', '3600'] : ['echo', 'bye'] },
      ],
      fields: { action: 'greet' },
      logField: 'pkg_log',
    };
  },
  async fetch(args) {
    return {
      commands: [`fetch ${args.chunks} chunks`],
      fields: { filename: 'demo.iso' },
      async work(ctx) {
        for (let i = 1; i <= args.chunks; i++) {
          if (ctx.signal.aborted) return { success: false };
          await new Promise((resolve) => setTimeout(resolve, 30));
          ctx.log(`chunk ${i}\n`);
          ctx.progress((i / args.chunks) * 100);
        }
        const echoed = await ctx.run(['echo', 'verified'], { label: 'verify demo.iso' });
        return { success: echoed.code === 0, fields: { download_rate: '1 MB/s' } };
      },
    };
  },
}));

const served = { ...classes, 'admin/demo': demoImpl };

const eventOf = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;
const processId = (e: Envelope) => (eventOf(e).process_details as { process_id?: string } | undefined)?.process_id;
const finished = (client: TestClient, id: string) => client.nextEvent((e) => processId(e) === id && eventOf(e).state === 'finished');

test("a planned steps job: pkg-style acknowledgement, then the completion event in the spec's shape", async (t) => {
  const agent = await agentFor(t, { classes: served });
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);

  const reply = await admin.request('admin', 'demo', { action: 'greet', name: 'world' });
  assert.equal(reply.name, 'response', JSON.stringify(reply));
  const ack = (reply.args as { greet: { proc_cmd: string; proc_id: string; status: string } }).greet;
  assert.deepEqual(Object.keys(reply.args as object), ['greet']);
  assert.equal(ack.proc_cmd, 'echo hello world; echo bye');
  assert.match(ack.proc_id, /^admin_greet-\{[0-9a-f-]{36}\}$/);
  assert.equal(ack.status, 'pending');

  const done = await finished(admin, ack.proc_id);
  assert.equal(done.id, 'none', 'completion events of queued class operations carry id "none"');
  const event = eventOf(done);
  assert.ok(classJobEvent().safeParse(event).success, JSON.stringify(event));
  assert.equal(event.event_system, 'admin/demo');
  assert.equal(event.success, 'true');
  assert.equal(event.action, 'greet');
  assert.equal(event.pkg_log, 'hello world\nbye\n', 'the whole log at the end, in the field the plan names');
  const details = event.process_details as Record<string, unknown>;
  assert.deepEqual(details.cmd_list, ['echo hello world', 'echo bye']);
  assert.equal(details['return_codes/echo hello world'], '0');
  assert.equal(details['return_codes/echo bye'], '0');
  assert.equal(details.state, 'finished');

  const list = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: Record<string, Record<string, unknown>> };
  assert.ok(list.jobs.pkg_queue?.[ack.proc_id], 'the job ran on the queue the contract names');
});

test('on the sim platform a planned host command is simulated, never run', async (t) => {
  const agent = await agentFor(t, { classes: served });
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  const ack = ((await admin.request('admin', 'demo', { action: 'greet', name: 'toucher' })).args as { greet: { proc_id: string } }).greet;
  const event = eventOf(await finished(admin, ack.proc_id));
  assert.equal(event.success, 'true');
  assert.match(String(event.pkg_log), /\[sim\] simulated, not run/);
  assert.equal(existsSync(TOUCH_TARGET), false);
});

test('a failing step ends the job with its return code and a reason; a refused plan queues nothing', async (t) => {
  const agent = await agentFor(t, { classes: served });
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);

  const ack = ((await admin.request('admin', 'demo', { action: 'greet', name: 'failing' })).args as { greet: { proc_id: string } }).greet;
  const event = eventOf(await finished(admin, ack.proc_id));
  assert.equal(event.success, 'false');
  assert.equal(event.reason, '"false" exited with code 1');
  assert.equal((event.process_details as Record<string, unknown>)['return_codes/false'], '1');

  const refused = await admin.request('admin', 'demo', { action: 'greet', name: 'nobody' });
  assert.equal(refused.name, 'error');
  assert.equal((refused.args as { code: number }).code, 400);
  const bad = await admin.request('admin', 'demo', { action: 'greet', name: '-rf' });
  assert.equal((bad.args as { code: number }).code, 400, 'the contract refuses before the handler plans');
  const list = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: { pkg_queue?: Record<string, unknown> } };
  assert.deepEqual(Object.keys(list.jobs.pkg_queue ?? {}), [ack.proc_id]);
});

test('a planned function: fetchiso-style acknowledgement, progress events, outcome fields in the completion event', async (t) => {
  const agent = await agentFor(t, { classes: served, dispatcher: { progressIntervalMs: 10 } });
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);

  const reply = await admin.request('admin', 'demo', { action: 'fetch', chunks: 8 });
  const ack = (reply.args as { fetch: { command: string; comment: string; queueid: string } }).fetch;
  assert.deepEqual(Object.keys(ack).sort(), ['command', 'comment', 'queueid']);
  assert.equal(ack.command, 'fetch 8 chunks');
  assert.equal(ack.comment, 'Task Queued');
  assert.match(ack.queueid, /^admin_fetch-\{[0-9a-f-]{36}\}$/);

  const done = await finished(admin, ack.queueid);
  const event = eventOf(done);
  assert.equal(done.id, 'none');
  assert.equal(event.event_system, 'admin/demo');
  assert.equal(event.success, 'true');
  assert.equal(event.percent_done, '100%');
  assert.equal(event.filename, 'demo.iso');
  assert.equal(event.download_rate, '1 MB/s');
  assert.equal((event.process_details as Record<string, unknown>)['return_codes/verify demo.iso'], '0');
  const progress = admin.events.filter((e) => processId(e) === ack.queueid && eventOf(e).state === 'running');
  assert.ok(
    progress.some((e) => typeof eventOf(e).percent_done === 'string'),
    'progress reached the subscriber before the end',
  );
  assert.ok(progress.every((e) => e.id === 'none' && eventOf(e).event_system === 'admin/demo'));
});

test('after a restart, pending steps run again; pending work that is a function ends with a reason', async (t) => {
  let agent = await startTestAgent({ classes: served, dispatcher: { noQueueConcurrency: 1 } });
  t.after(() => agent.dispose());
  let admin = await TestClient.connect(agent.url);
  await admin.login('admin');
  // Hold both queues with jobs that run until the agent stops, so the next ones stay pending.
  await admin.request('rpc', 'dispatcher', { action: 'run', hold: 'sleep 3600' });
  await admin.request('admin', 'demo', { action: 'greet', name: 'slow' });
  const greet = ((await admin.request('admin', 'demo', { action: 'greet', name: 'again' })).args as { greet: { proc_id: string } }).greet;
  const fetch = ((await admin.request('admin', 'demo', { action: 'fetch', chunks: 1 })).args as { fetch: { queueid: string } }).fetch;
  admin.close();

  agent = await agent.restart();
  admin = await TestClient.connect(agent.url);
  t.after(() => admin.close());
  await admin.login('admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  const read = async (id: string) =>
    (await admin.request('rpc', 'dispatcher', { action: 'log', job_id: id })).args as { log: { state: string; success: string; reason: string; log: string } };
  for (let i = 0; i < 400 && (await read(greet.proc_id)).log.state !== 'finished'; i++) await new Promise((r) => setTimeout(r, 25));
  const greeted = (await read(greet.proc_id)).log;
  assert.equal(greeted.success, 'true');
  assert.equal(greeted.log, 'hello again\nbye\n');
  for (let i = 0; i < 400 && (await read(fetch.queueid)).log.state !== 'finished'; i++) await new Promise((r) => setTimeout(r, 25));
  const fetched = (await read(fetch.queueid)).log;
  assert.equal(fetched.success, 'false');
  assert.equal(fetched.reason, NOT_RESUMABLE);
});
