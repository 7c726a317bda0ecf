/**
 * Hostile values for every string argument of `fs` (its one: `dir`). Each is a 400 naming the
 * field, no command runs (a RecordingRunner with no replies records every attempt), and the sim
 * host's state file is untouched. An absolute path that merely contains shell metacharacters is a
 * legal path: it reaches the host as one argv element, never through a shell.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { PlatformKind } from '@hostadm/agent/platforms/types.ts';
import type { CommandRunner } from '@hostadm/agent/runner/runner.ts';
import { startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';

const HOSTILE_DIRS: unknown[] = [
  '; rm -rf /',
  '$(id)',
  '`id`',
  '| cat /etc/master.passwd',
  '&& reboot',
  '-rf',
  '--help',
  '-exec',
  'etc\n/root',
  '/etc\n/root',
  '/etc\r',
  '/etc\0',
  '\0',
  '/tmp/\u001b[2J',
  'x'.repeat(100_000),
  `/${'a'.repeat(100_000)}`,
  '/tmp/../root',
  '..',
  '.',
  '~root',
  ' /etc',
  '',
  ['/etc'],
  { path: '/etc' },
  null,
  true,
];

async function fullClient(agent: TestAgent): Promise<TestClient> {
  const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
  return client;
}

for (const platform of ['linux', 'freebsd', 'sim'] satisfies PlatformKind[]) {
  test(`fs dirlist refuses hostile input before any command runs (${platform})`, async (t) => {
    const runner = new RecordingRunner();
    const agent = await startTestAgent({ platform, runner });
    t.after(() => agent.dispose());
    const client = await fullClient(agent);
    t.after(() => client.close());
    const stateFile = join(agent.dataDir, 'sim', 'state.json');
    const stateBefore = platform === 'sim' ? readFileSync(stateFile, 'utf8') : '';

    for (const dir of HOSTILE_DIRS) {
      const reply = await client.call('fs', 'dirlist', { dir });
      const label = JSON.stringify(dir).slice(0, 40);
      assert.equal(reply.name, 'error', label);
      const args = reply.args as { code: number; errors?: Array<{ field: string }> };
      assert.equal(args.code, 400, label);
      assert.deepEqual([...new Set(args.errors?.map((e) => e.field))], ['dir'], label);
    }
    for (const extra of [
      { dir: '/', '; rm -rf /': 1 },
      { dir: '/', exec: '$(id)' },
    ]) {
      const reply = await client.call('fs', 'dirlist', extra);
      assert.equal((reply.args as { code: number }).code, 400);
    }

    assert.deepEqual(runner.calls, [], 'no command ran');
    if (platform === 'sim') assert.equal(readFileSync(stateFile, 'utf8'), stateBefore, 'the sim host is unchanged');
  });
}

test('a legal path holding metacharacters reaches the host as one literal argument', async (t) => {
  const odd = '/tmp/a; rm -rf / $(id) `id` | x && y';
  const calls: string[][] = [];
  // realpath -m answers every step as given; stat knows only / and /tmp.
  const runner: CommandRunner = {
    async run(argv) {
      calls.push([...argv]);
      const isStat = argv[0] === 'stat';
      const stdout = isStat
        ? '0 0 41ed /\u00000 0 43ff /tmp\u0000'
        : argv
            .slice(4)
            .map((s) => `${s}\u0000`)
            .join('');
      return { argv: [...argv], code: isStat ? 1 : 0, signal: null, stdout, stderr: '', timedOut: false, truncated: false, durationMs: 0 };
    },
  };
  const agent = await startTestAgent({ platform: 'linux', runner });
  t.after(() => agent.dispose());
  const client = await fullClient(agent);
  t.after(() => client.close());
  const reply = await client.call('fs', 'dirlist', { dir: odd });
  assert.equal((reply.args as { code: number }).code, 400, 'it does not exist');
  assert.equal(calls.length, 2);
  for (const argv of calls) {
    assert.equal(argv.at(-1), odd, 'the whole path is one argument');
    assert.ok(!['sh', 'bash', 'dash', 'env'].includes(argv[0] ?? ''), 'never through a shell');
  }
  assert.deepEqual(calls[0]?.slice(0, 4), ['realpath', '-m', '-z', '--']);
});
