/**
 * Hostile values in the one string argument of `services` (`services`, a name or a list of names),
 * for every action on every platform: each is a 400 naming the field, no host command runs (the
 * runners record every call), and the simulated host is unchanged.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';
import { expectError, keySession, listServices } from './services-support.ts';

const HOSTILE: Array<[string, string]> = [
  ['command separator', 'sshd; rm -rf /'],
  ['command substitution', '$(id)'],
  ['backticks', '`id`'],
  ['pipe', 'sshd|sh'],
  ['and-list', 'sshd && reboot'],
  ['option', '-rf'],
  ['long option', '--help'],
  ['newline', 'sshd\nreboot'],
  ['NUL', 'sshd\u0000reboot'],
  ['100 000 characters', 'a'.repeat(100_000)],
  ['path', '../../bin/sh'],
  ['glob', 'ssh*'],
];

const ACTIONS = ['start', 'stop', 'restart', 'enable', 'disable'];

/** Every hostile value, alone, as the only array item, and after a valid name: all refused. */
async function assertRefused(client: TestClient): Promise<void> {
  for (const action of ACTIONS) {
    for (const [label, value] of HOSTILE) {
      for (const services of [value, [value], ['sshd', value]]) {
        const err = expectError(await client.call('services', action, { services }), 400);
        assert.ok(
          err.errors?.some((e) => e.field === 'services' || e.field.startsWith('services.')),
          `${action} ${label}: ${JSON.stringify(err).slice(0, 300)}`,
        );
      }
    }
  }
  // list_services takes nothing; a smuggled argument is refused too.
  const err = expectError(await client.call('services', 'list_services', { services: '$(id)' }), 400);
  assert.ok(err.errors?.some((e) => e.field === 'services'));
}

async function agentOn(t: TestContext, platform: 'freebsd' | 'linux', runner: RecordingRunner): Promise<TestAgent> {
  const agent = await startTestAgent({ platform, runner });
  t.after(() => agent.dispose());
  return agent;
}

test('FreeBSD: hostile names are 400s and no command runs', async (t) => {
  const runner = new RecordingRunner([{ match: ['id', '-Gn', 'root'], stdout: 'wheel\n' }]);
  const root = await keySession(t, await agentOn(t, 'freebsd', runner));
  runner.calls.length = 0;
  await assertRefused(root);
  assert.deepEqual(runner.calls, []);
});

test('Linux: hostile names are 400s and no command runs (not even the init system check)', async (t) => {
  const runner = new RecordingRunner([{ match: ['id', '-Gn', 'root'], stdout: 'root\n' }]);
  const root = await keySession(t, await agentOn(t, 'linux', runner));
  runner.calls.length = 0;
  await assertRefused(root);
  assert.deepEqual(runner.calls, []);
});

test('sim: hostile names are 400s and the host is unchanged', async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const admin = await TestClient.connect(agent.url);
  t.after(() => admin.close());
  await admin.login('admin');
  const before = await listServices(admin);
  await assertRefused(admin);
  assert.deepEqual(await listServices(admin), before);
});
