/**
 * Hostile values in every string argument of `admin/users`: shell metacharacters, option-like
 * values, line breaks, NUL and 100 000 characters. On FreeBSD and Linux (RecordingRunner: every
 * command recorded) each is a 400 naming its field before any command runs; on the sim host the
 * accounts stay as they were. The two kinds of free text are the exceptions, and their own tests
 * show where they go: a password travels only on stdin, and a GECOS comment with `&` is one argv
 * element after `-c`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { SimPlatform } from '@hostadm/agent/platforms/sim/index.ts';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

const HOSTILE = ['; rm -rf /', '$(id)', '`id`', 'a|b', 'a && b', '-rf', '--help', 'a\nb', 'a\0b', 'x'.repeat(100_000)];
/** Path fields must start with `/`, so each hostile value is also tried behind a real directory. */
const PATHS = [...HOSTILE, ...HOSTILE.filter((v) => !v.startsWith('-')).map((v) => `/home/${v}`)];

type Args = Record<string, unknown>;
interface Case {
  action: string;
  base: Args;
  field: string;
  values: readonly unknown[];
}

const ACCOUNT_FIELDS: Array<[string, readonly unknown[]]> = [
  ['uid', HOSTILE],
  ['change', HOSTILE],
  ['class', HOSTILE],
  ['comment', HOSTILE.filter((v) => v !== 'a && b')],
  ['expire', HOSTILE],
  ['group', HOSTILE],
  ['home_dir', PATHS],
  ['other_groups', [...HOSTILE, ...HOSTILE.map((v) => ['wheel', v])]],
  ['shell', PATHS],
];

const CASES: Case[] = [
  { action: 'useradd', base: { password: 'pw' }, field: 'name', values: HOSTILE },
  { action: 'useradd', base: { name: 'bob' }, field: 'password', values: ['a\nb', 'a\rb', 'a\0b', 'x'.repeat(100_000)] },
  ...ACCOUNT_FIELDS.map(([field, values]) => ({ action: 'useradd', base: { name: 'bob', password: 'pw' }, field, values })),
  { action: 'userdelete', base: {}, field: 'name', values: HOSTILE },
  { action: 'userdelete', base: { name: 'bob' }, field: 'clean_home', values: HOSTILE },
  { action: 'usermod', base: { comment: 'x' }, field: 'name', values: HOSTILE },
  { action: 'usermod', base: { name: 'admin' }, field: 'newname', values: HOSTILE },
  { action: 'usermod', base: { name: 'admin' }, field: 'password', values: ['a\nb', 'a\0b', 'x'.repeat(100_000)] },
  ...ACCOUNT_FIELDS.map(([field, values]) => ({ action: 'usermod', base: { name: 'admin' }, field, values })),
  { action: 'groupadd', base: {}, field: 'name', values: HOSTILE },
  { action: 'groupadd', base: { name: 'crew' }, field: 'gid', values: HOSTILE },
  { action: 'groupadd', base: { name: 'crew' }, field: 'users', values: HOSTILE.map((v) => [v]) },
  { action: 'groupdelete', base: {}, field: 'name', values: HOSTILE },
  { action: 'groupmod', base: { users: [] }, field: 'name', values: HOSTILE },
  ...['users', 'add_users', 'remove_users'].map((field) => ({ action: 'groupmod', base: { name: 'wheel' }, field, values: HOSTILE.map((v) => ['admin', v]) })),
];

async function rootClient(t: TestContext, agent: TestAgent): Promise<TestClient> {
  const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
  return client;
}

function assertRefused(reply: Envelope, field: string, what: string): void {
  assert.equal(reply.name, 'error', `${what} was accepted`);
  const args = reply.args as { code: number; errors?: Array<{ field: string }> };
  assert.equal(args.code, 400, `${what}: ${JSON.stringify(args).slice(0, 300)}`);
  assert.ok(
    args.errors?.some((e) => e.field === field || e.field.startsWith(`${field}.`)),
    `${what}: does not name ${field}: ${JSON.stringify(args.errors)}`,
  );
}

async function everyCase(client: TestClient, check: (what: string) => void): Promise<number> {
  let n = 0;
  for (const c of CASES) {
    for (const value of c.values) {
      const what = `${c.action} ${c.field}=${JSON.stringify(value).slice(0, 40)}`;
      assertRefused(await client.call('users', c.action, { ...c.base, [c.field]: value }), c.field, what);
      check(what);
      n++;
    }
  }
  return n;
}

for (const platform of ['freebsd', 'linux'] as const) {
  test(`${platform}: every hostile value is a 400 naming its field, and no command runs`, async (t) => {
    const runner = new RecordingRunner();
    const agent = await startTestAgent({ platform, runner });
    t.after(() => agent.dispose());
    const client = await rootClient(t, agent);
    const n = await everyCase(client, (what) => assert.deepEqual(runner.calls, [], `${what} ran a command`));
    assert.ok(n > 200);
  });
}

test('sim: every hostile value is a 400 naming its field, and the accounts stay as they were', async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const client = await rootClient(t, agent);
  const state = () => JSON.stringify((agent.services.platform as SimPlatform).store.slice('accounts', () => ({})).get());
  const before = state();
  await everyCase(client, (what) => assert.equal(state(), before, `${what} changed the accounts`));
});

test('free text: a hostile password goes only to stdin, a comment with & is one argv element', async (t) => {
  const users = 'root:*:0:0::0:0:Charlie &:/root:/bin/csh\nadmin:*:1001:1001::0:0:Admin:/home/admin:/bin/sh\n';
  const runner = new RecordingRunner([
    { match: ['pw', 'usershow', '-a'], stdout: users },
    { match: ['pw', 'groupshow', '-a'], stdout: 'wheel:*:0:root\nadmin:*:1001:\n' },
    { match: (argv) => argv[0] === 'pw' },
  ]);
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  t.after(() => agent.dispose());
  const client = await rootClient(t, agent);
  for (const password of HOSTILE.filter((v) => !/[\n\0]/.test(v) && v.length < 1000)) {
    const from = runner.calls.length;
    assert.equal((await client.call('users', 'usermod', { name: 'admin', password })).name, 'response');
    const change = runner.calls.length - 1;
    assert.deepEqual(runner.calls[change], ['pw', 'usermod', '-n', 'admin', '-h', '0']);
    assert.equal(runner.options[change]?.input, `${password}\n`);
    for (const argv of runner.calls.slice(from)) assert.ok(!argv.includes(password));
  }
  assert.equal((await client.call('users', 'usermod', { name: 'admin', comment: 'Tom && Jerry' })).name, 'response');
  assert.deepEqual(runner.calls.at(-1), ['pw', 'usermod', '-n', 'admin', '-c', 'Tom && Jerry']);
});
