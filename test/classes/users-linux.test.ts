/**
 * `admin/users` on the real Linux platform inside a throwaway namespace with its own /etc and
 * /home: every action through the agent, each change checked in the sandbox's own files and with
 * its own tools, the limited-user rules, and multi-step changes that fail half way leaving nothing
 * behind (a runner that makes one command fail).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner, type CommandRunner } from '@hostadm/agent/runner/runner.ts';
import { parseLsblk } from '@hostadm/agent/platforms/linux/parse/users.ts';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';

const can = canSandbox();
const DAY = 86_400;

async function clientAs(agent: TestAgent, user: string, level: 'full' | 'limited'): Promise<TestClient> {
  const session = agent.services.sessions.create({ user, level, groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  const reply = await client.request('rpc', 'auth_token', { token: session.token });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return client;
}

function ok(reply: Envelope): unknown {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args;
}

function failed(reply: Envelope, code: number, field?: string): string {
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  const args = reply.args as { code: number; message: string; errors?: Array<{ field: string }> };
  assert.equal(args.code, code, args.message);
  if (field)
    assert.ok(
      args.errors?.some((e) => e.field === field),
      JSON.stringify(args),
    );
  return args.message;
}

async function sh(sandbox: LinuxSandbox, ...argv: string[]): Promise<string> {
  const r = await sandbox.runner.run(argv);
  assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

async function exists(sandbox: LinuxSandbox, db: 'passwd' | 'group', key: string): Promise<boolean> {
  return (await sandbox.runner.run(['getent', db, key])).code === 0;
}

/** The member field of a group's gshadow(5) line, read from the sandbox's /etc. */
function gshadowMembers(sandbox: LinuxSandbox, group: string): string | undefined {
  const line = readFileSync(join(sandbox.etc, 'gshadow'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${group}:`));
  return line?.split(':')[3];
}

/** The sandbox runner, except that commands named in `failing` exit 1 without running. */
function failingRunner(inner: CommandRunner, failing: Set<string>): CommandRunner {
  return {
    async run(argv, options) {
      if (failing.has(argv[0] ?? '')) {
        return {
          argv: [...argv],
          code: 1,
          signal: null,
          stdout: '',
          stderr: `${argv[0]}: made to fail by the test`,
          timedOut: false,
          truncated: false,
          durationMs: 0,
        };
      }
      return inner.run(argv, options);
    },
  };
}

test('users on the real Linux platform', { skip: can.ok ? false : can.reason }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  await sh(sandbox, 'useradd', '-M', '-G', 'operator', '-c', 'Olga Op', 'olga');
  const failing = new Set<string>();
  const agent = await startTestAgent({ platform: 'linux', runner: failingRunner(createRunner({ prefix: sandbox.prefix }), failing) });
  t.after(() => agent.dispose());
  const root = await clientAs(agent, 'root', 'full');
  t.after(() => root.close());
  const olga = await clientAs(agent, 'olga', 'limited');
  t.after(() => olga.close());
  const shadow = async (name: string) => (await sh(sandbox, 'getent', 'shadow', name)).split(':');
  const today = Math.floor(Date.now() / 1000 / DAY);

  await t.test('usershow: every account of the sandbox for root and for olga, her own with canremove false', async () => {
    const all = ok(await root.call('users', 'usershow')) as Record<string, Record<string, string>>;
    assert.deepEqual(all.root, {
      name: 'root',
      uid: '0',
      gid: '0',
      class: '',
      change: '0',
      expire: '0',
      comment: 'root',
      home_dir: '/root',
      shell: '/bin/bash',
      canremove: 'false',
    });
    assert.equal(all.olga?.comment, 'Olga Op');
    assert.ok(all.daemon && all.nobody);
    const mine = ok(await olga.call('users', 'usershow')) as Record<string, Record<string, string>>;
    assert.deepEqual(Object.keys(mine).sort(), Object.keys(all).sort());
    assert.equal(mine.olga?.canremove, 'false');
    assert.equal(mine.root?.canremove, undefined);
  });

  await t.test('groupshow: all groups with members; olga sees only her own groups', async () => {
    const all = ok(await root.call('users', 'groupshow')) as Record<string, { gid: string; users: string[] }>;
    assert.deepEqual(all.operator, { name: 'operator', gid: '37', users: ['olga'] });
    assert.deepEqual(all.sudo?.users, ['']);
    const mine = ok(await olga.call('users', 'groupshow')) as Record<string, { users: string[] }>;
    assert.deepEqual(Object.keys(mine).sort(), ['olga', 'operator']);
    assert.deepEqual(mine.operator?.users, ['olga']);
  });

  await t.test('useradd creates the account, its home, groups, aging and a yescrypt password', async () => {
    const change = (today + 30) * DAY;
    ok(
      await root.call('users', 'useradd', {
        name: 'bob',
        password: 'B0b secret: $(x)',
        comment: 'Bob B, Room 4',
        home_dir: '/home/bob',
        shell: '/bin/sh',
        other_groups: ['operator', 'sudo'],
        expire: '20-Mar-2037',
        change: String(change),
      }),
    );
    const passwd = (await sh(sandbox, 'getent', 'passwd', 'bob')).split(':');
    assert.deepEqual(passwd.slice(4), ['Bob B, Room 4', '/home/bob', '/bin/sh']);
    assert.deepEqual((await sh(sandbox, 'id', '-Gn', 'bob')).split(' ').sort(), ['bob', 'operator', 'sudo']);
    assert.ok(existsSync(join(sandbox.home, 'bob')), 'home created');
    const s = await shadow('bob');
    assert.match(s[1] ?? '', /^\$y\$/, 'hashed by chpasswd with yescrypt');
    assert.equal(s[7], String(2121120000 / DAY));
    const shown = (ok(await root.call('users', 'usershow')) as Record<string, Record<string, string>>).bob;
    assert.equal(shown?.expire, '2121120000');
    assert.equal(shown?.change, String(change));
    assert.equal(shown?.class, '');
  });

  await t.test('useradd: a failed password step removes the account again, but not a home that was there before', async () => {
    mkdirSync(join(sandbox.home, 'pre'));
    failing.add('chpasswd');
    try {
      failed(await root.call('users', 'useradd', { name: 'carl', password: 'x', home_dir: '/home/pre' }), 500);
    } finally {
      failing.delete('chpasswd');
    }
    assert.equal(await exists(sandbox, 'passwd', 'carl'), false);
    assert.equal(await exists(sandbox, 'group', 'carl'), false);
    assert.ok(existsSync(join(sandbox.home, 'pre')), 'the pre-existing directory is kept');
  });

  await t.test('useradd refusals: class is FreeBSD-only (501), taken names and unknown groups (400); nothing created', async () => {
    assert.match(failed(await root.call('users', 'useradd', { name: 'cora', password: 'x', class: 'staff' }), 501), /login classes/);
    failed(await root.call('users', 'useradd', { name: 'bob', password: 'x' }), 400, 'name');
    failed(await root.call('users', 'useradd', { name: 'cora', password: 'x', other_groups: ['nosuch'] }), 400, 'other_groups');
    failed(await root.call('users', 'useradd', { name: 'cora', password: 'x', uid: '0' }), 400, 'uid');
    assert.equal(await exists(sandbox, 'passwd', 'cora'), false);
  });

  await t.test('usermod renames and changes every field in one go', async () => {
    ok(
      await root.call('users', 'usermod', {
        name: 'bob',
        newname: 'bobby',
        uid: '4321',
        comment: 'Bobby',
        shell: '/bin/bash',
        group: 'operator',
        other_groups: 'sudo',
        expire: '0',
        change: '0',
      }),
    );
    assert.equal(await exists(sandbox, 'passwd', 'bob'), false);
    const passwd = (await sh(sandbox, 'getent', 'passwd', 'bobby')).split(':');
    assert.deepEqual([passwd[2], passwd[3], passwd[4], passwd[6]], ['4321', '37', 'Bobby', '/bin/bash']);
    assert.deepEqual((await sh(sandbox, 'id', '-Gn', 'bobby')).split(' ').sort(), ['operator', 'sudo']);
    const s = await shadow('bobby');
    assert.deepEqual([s[4], s[7]], ['', ''], 'no maximum age, no expiry');
    const shown = (ok(await root.call('users', 'usershow')) as Record<string, Record<string, string>>).bobby;
    assert.deepEqual([shown?.change, shown?.expire], ['0', '0']);
  });

  await t.test('usermod: when the last step fails, the new password and aging are rolled back', async () => {
    const before = await shadow('bobby');
    failing.add('usermod');
    try {
      failed(await root.call('users', 'usermod', { name: 'bobby', password: 'another one', change: String((today + 5) * DAY), comment: 'X' }), 500);
    } finally {
      failing.delete('usermod');
    }
    const after = await shadow('bobby');
    assert.deepEqual(after.slice(1, 5), before.slice(1, 5), 'hash, last change and ages as before');
    assert.equal((await sh(sandbox, 'getent', 'passwd', 'bobby')).split(':')[4], 'Bobby');
  });

  await t.test('a past change time forces a password change at the next login', async () => {
    ok(await root.call('users', 'usermod', { name: 'bobby', change: '1' }));
    assert.equal((await shadow('bobby'))[2], '0');
    assert.equal((ok(await root.call('users', 'usershow')) as Record<string, Record<string, string>>).bobby?.change, '1');
  });

  await t.test('olga changes her own comment and shell; her groups, uid and other accounts are refused', async () => {
    ok(await olga.call('users', 'usermod', { name: 'olga', comment: 'Olga O', shell: '/bin/bash' }));
    const passwd = (await sh(sandbox, 'getent', 'passwd', 'olga')).split(':');
    assert.deepEqual([passwd[4], passwd[6]], ['Olga O', '/bin/bash']);
    failed(await olga.call('users', 'usermod', { name: 'olga', other_groups: ['sudo'] }), 403);
    failed(await olga.call('users', 'usermod', { name: 'olga', uid: '0' }), 403);
    failed(await olga.call('users', 'usermod', { name: 'bobby', comment: 'x' }), 403);
    failed(await olga.call('users', 'useradd', { name: 'evil', password: 'x' }), 403);
    assert.deepEqual((await sh(sandbox, 'id', '-Gn', 'olga')).split(' ').sort(), ['olga', 'operator']);
  });

  await t.test('groups: add with members and a gid, set/add/remove members, delete', async () => {
    ok(await root.call('users', 'groupadd', { name: 'crew', gid: '2500', users: ['olga'] }));
    assert.equal(await sh(sandbox, 'getent', 'group', 'crew'), 'crew:x:2500:olga');
    ok(await root.call('users', 'groupmod', { name: 'crew', add_users: ['bobby'] }));
    assert.equal(await sh(sandbox, 'getent', 'group', 'crew'), 'crew:x:2500:olga,bobby');
    assert.equal(gshadowMembers(sandbox, 'crew'), 'olga,bobby');
    ok(await root.call('users', 'groupmod', { name: 'crew', remove_users: ['olga'] }));
    assert.equal(await sh(sandbox, 'getent', 'group', 'crew'), 'crew:x:2500:bobby');
    ok(await root.call('users', 'groupmod', { name: 'crew', users: [] }));
    assert.equal(await sh(sandbox, 'getent', 'group', 'crew'), 'crew:x:2500:');
    assert.deepEqual((ok(await root.call('users', 'groupshow')) as Record<string, { users: string[] }>).crew?.users, ['']);
    assert.equal(gshadowMembers(sandbox, 'crew'), '', 'gshadow follows group');
    ok(await root.call('users', 'groupdelete', { name: 'crew' }));
    assert.equal(await exists(sandbox, 'group', 'crew'), false);
    failed(await root.call('users', 'groupdelete', { name: 'operator' }), 400, 'name'); // bobby's primary group
    failed(await root.call('users', 'groupadd', { name: 'sudo' }), 400, 'name');
    failed(await olga.call('users', 'groupmod', { name: 'sudo', add_users: ['olga'] }), 403);
  });

  await t.test('groupadd: a failed member step removes the new group again', async () => {
    failing.add('gpasswd');
    try {
      failed(await root.call('users', 'groupadd', { name: 'temp', users: ['olga'] }), 500);
    } finally {
      failing.delete('gpasswd');
    }
    assert.equal(await exists(sandbox, 'group', 'temp'), false);
  });

  await t.test('userdelete removes the account and its home; never the caller or root', async () => {
    ok(await root.call('users', 'userdelete', { name: 'bobby' }));
    assert.equal(await exists(sandbox, 'passwd', 'bobby'), false);
    assert.equal(existsSync(join(sandbox.home, 'bob')), false);
    failed(await root.call('users', 'userdelete', { name: 'root' }), 400, 'name');
    failed(await olga.call('users', 'userdelete', { name: 'olga' }), 403);
    failed(await root.call('users', 'userdelete', { name: 'bobby' }), 400, 'name');
  });

  await t.test('personacrypt_listdevs reports the removable disks lsblk sees (none in this VM)', async () => {
    const live = await createRunner().run(['lsblk', '-J', '-b', '-o', 'NAME,RM,SIZE,MODEL,TYPE']);
    assert.deepEqual(ok(await olga.call('users', 'personacrypt_listdevs')), parseLsblk(live.stdout));
  });
});
