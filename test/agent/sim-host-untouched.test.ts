/**
 * The sim platform never touches the machine it runs on: dispatcher jobs are simulated (events, logs
 * and states as for real, no process), unless the agent is started with `simHostCommands`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, TestClient, type Envelope } from '../helpers/agent.ts';
import type { AgentOptions } from '@hostadm/agent/agent.ts';

async function setup(t: TestContext, overrides: Partial<AgentOptions> = {}) {
  const agent = await startTestAgent(overrides);
  const admin = await TestClient.connect(agent.url);
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-sim-untouched-'));
  t.after(async () => {
    admin.close();
    await agent.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.login('admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  return { admin, dir };
}

const payload = (e: Envelope) => (e.args as { args: Record<string, string | string[]> }).args;
const finished = (client: TestClient, id: string) => client.nextEvent((e) => payload(e).proc_id === id && payload(e).state === 'finished');

test('sim: a dispatcher job that would write a file completes with its events and log, and the file is never made', async (t) => {
  const { admin, dir } = await setup(t);
  const target = join(dir, 'etc.tar');
  const done = finished(admin, 'tar-1');
  const reply = await admin.request('rpc', 'dispatcher', { action: 'run', 'tar-1': [`touch ${join(dir, 'touched')}`, `tar -cf ${target} /etc/hostname`] });
  assert.deepEqual(reply.args, { started: ['tar-1'] });
  const event = payload(await done);
  assert.equal(event.success, 'true');
  assert.equal(existsSync(target), false, 'tar wrote nothing');
  assert.equal(existsSync(join(dir, 'touched')), false, 'touch made nothing');
  const log = await admin.request('rpc', 'dispatcher', { action: 'log', job_id: 'tar-1' });
  const text = JSON.stringify(log.args);
  assert.match(text, /\[sim\] simulated, not run on this machine: touch /);
  assert.match(text, /\[sim\] simulated, not run on this machine: tar -cf /);
});

test('sim: echo, true and false behave as they would, so demos show real-looking output and failures', async (t) => {
  const { admin } = await setup(t);
  const ok = finished(admin, 'echo-1');
  await admin.request('rpc', 'dispatcher', { action: 'run', 'echo-1': 'echo hello sim' });
  assert.equal(payload(await ok).state, 'finished');
  const log = await admin.request('rpc', 'dispatcher', { action: 'log', job_id: 'echo-1' });
  assert.match(JSON.stringify(log.args), /hello sim/);

  const failed = finished(admin, 'false-1');
  await admin.request('rpc', 'dispatcher', { action: 'run', 'false-1': 'false' });
  const p = payload(await failed);
  assert.equal(p.success, 'false', 'a simulated `false` fails like the real one');
  assert.match(p.reason as string, /"false" exited with code 1/);
});

test('sim with simHostCommands: the same job runs for real (the documented opt-in)', async (t) => {
  const { admin, dir } = await setup(t, { simHostCommands: true });
  const done = finished(admin, 'touch-1');
  await admin.request('rpc', 'dispatcher', { action: 'run', 'touch-1': `touch ${join(dir, 'touched')}` });
  await done;
  assert.equal(existsSync(join(dir, 'touched')), true);
});
