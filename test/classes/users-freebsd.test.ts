/**
 * FreeBSD users: the parsers against real pw(8) output (test/fixtures/freebsd/users, sources in the
 * .source.md files), then every action through a real agent on the FreeBSD platform whose runner
 * is a RecordingRunner answering like a fresh FreeBSD host. The argv each action runs (and what it
 * writes to stdin) is compared with the checked-in snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { parseGroupshow, parsePersonacryptList, parseUsershow } from '@hostadm/agent/platforms/freebsd/parse/users.ts';
import { freebsdPasswordVerifier } from '@hostadm/agent/platforms/freebsd/password.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { sessionClientFor, startTestAgent, type TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/users/${name}`, import.meta.url), 'utf8');

const USERS = `${fixture('usershow-default.txt')}admin:*:1001:1001::0:0:Administrator:/home/admin:/bin/sh\n`;
const GROUPS = `${fixture('groupshow-default.txt')}admin:*:1001:\n`;

test('pw usershow -a: every account of a fresh FreeBSD host, all fields as strings', () => {
  const users = parseUsershow(fixture('usershow-default.txt'));
  assert.equal(users.length, 27);
  assert.deepEqual(users[0], {
    name: 'root',
    uid: '0',
    gid: '0',
    class: '',
    change: '0',
    expire: '0',
    comment: 'Charlie &',
    home_dir: '/root',
    shell: '/bin/csh',
  });
  assert.equal(users.find((u) => u.name === 'toor')?.shell, '', 'toor has no shell');
  assert.equal(users.find((u) => u.name === 'nobody')?.uid, '65534');
});

test('pw usershow lines from the pw test suite: expiry and default group', () => {
  const users = parseUsershow(fixture('usershow-pw-tests.txt'));
  assert.equal(users.length, 4);
  assert.deepEqual(users[2], {
    name: 'foo',
    uid: '1001',
    gid: '442',
    class: '',
    change: '0',
    expire: '0',
    comment: 'User &',
    home_dir: '/home/foo',
    shell: '/bin/sh',
  });
  assert.equal(users[3]?.expire, '2121120000');
});

test('the 7-field V7 form is read too', () => {
  assert.deepEqual(parseUsershow(fixture('usershow-v7.txt'))[0], {
    name: 'root',
    uid: '0',
    gid: '0',
    class: '',
    change: '0',
    expire: '0',
    comment: 'Charlie &',
    home_dir: '/root',
    shell: '/bin/csh',
  });
});

test('pw groupshow: members split, empty member lists empty', () => {
  const groups = parseGroupshow(fixture('groupshow-default.txt'));
  assert.equal(groups.length, 30);
  assert.deepEqual(groups[0], { name: 'wheel', gid: '0', members: ['root'] });
  assert.deepEqual(
    groups.find((g) => g.name === 'nogroup'),
    { name: 'nogroup', gid: '65533', members: [] },
  );
  assert.deepEqual(parseGroupshow(fixture('groupshow-pw-tests.txt'))[2], { name: 'testgroup', gid: '1002', members: ['testuser'] });
});

test('personacrypt list -r: devices keyed by name, gpart complaints skipped', () => {
  assert.deepEqual(parsePersonacryptList(fixture('personacrypt-list-r.txt')), {
    da0: '<SanDisk Cruzer 1.26> 7.5G',
    da1: '<Kingston DataTraveler 3.0 PMAP>',
  });
});

function freebsdRunner(): RecordingRunner {
  return new RecordingRunner([
    { match: ['pw', 'usershow', '-a'], stdout: USERS },
    { match: ['pw', 'groupshow', '-a'], stdout: GROUPS },
    { match: ['personacrypt', 'list', '-r'], stdout: fixture('personacrypt-list-r.txt') },
    { match: (argv) => argv[0] === 'pw' },
  ]);
}

async function agentWith(t: TestContext, runner: RecordingRunner): Promise<TestAgent> {
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  t.after(() => agent.dispose());
  return agent;
}

function ok(reply: Envelope): unknown {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args;
}

test('each action runs pw as an administrator would; passwords only on stdin (argv snapshot)', async (t) => {
  const runner = freebsdRunner();
  const agent = await agentWith(t, runner);
  const root = await sessionClientFor(t, agent, 'root', 'full');
  const operator = await sessionClientFor(t, agent, 'operator', 'limited');
  const calls: Array<[TestClient, string, Record<string, unknown>]> = [
    [root, 'usershow', {}],
    [root, 'groupshow', {}],
    [root, 'useradd', { name: 'bob', password: 'pw; $(reboot)' }],
    [
      root,
      'useradd',
      {
        name: 'carol',
        password: 'secret',
        uid: '2001',
        comment: 'Carol C, Room 2',
        home_dir: '/home/carol',
        expire: '20-Mar-2037',
        change: '+3w',
        shell: '/bin/csh',
        group: 'staff',
        other_groups: ['wheel', 'operator'],
        class: 'russian',
      },
    ],
    [root, 'useradd', { name: 'svc', password: 'secret', home_dir: '/nonexistent' }],
    [root, 'userdelete', { name: 'admin' }],
    [root, 'userdelete', { name: 'admin', clean_home: 'false' }],
    [root, 'usermod', { name: 'admin', newname: 'boss', comment: 'The Boss', other_groups: 'wheel', password: 'new pw' }],
    [operator, 'usermod', { name: 'operator', shell: '/bin/sh' }],
    [root, 'groupadd', { name: 'crew', gid: '3000', users: ['admin', 'operator'] }],
    [root, 'groupadd', { name: 'empty' }],
    [root, 'groupdelete', { name: 'guest' }],
    [root, 'groupmod', { name: 'staff', users: ['admin'] }],
    [root, 'groupmod', { name: 'staff', users: [] }],
    [root, 'groupmod', { name: 'staff', add_users: ['admin', 'operator'] }],
    [root, 'groupmod', { name: 'staff', remove_users: ['operator'] }],
    [root, 'personacrypt_listdevs', {}],
  ];
  const lines: string[] = [''];
  for (const [client, action, args] of calls) {
    const from = runner.calls.length;
    ok(await client.call('users', action, args));
    lines.push(`${action} ${JSON.stringify(args)}:`);
    for (let i = from; i < runner.calls.length; i++) {
      const input = runner.options[i]?.input;
      lines.push(`  ${JSON.stringify(runner.calls[i])}${input === undefined ? '' : `  stdin ${JSON.stringify(input)}`}`);
    }
  }
  for (const argv of runner.calls) for (const pw of ['pw; $(reboot)', 'secret', 'new pw']) assert.ok(!argv.includes(pw), 'a password in argv');
  // Plain text, one argv a line (as JSON, so argument boundaries show).
  t.assert.snapshot(`${lines.join('\n')}\n`, { serializers: [(v) => String(v)] });
});

test('replies: canremove on the caller, [""] for empty groups, the limited views', async (t) => {
  const agent = await agentWith(t, freebsdRunner());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  const users = ok(await root.call('users', 'usershow')) as Record<string, Record<string, string>>;
  assert.equal(Object.keys(users).length, 28);
  assert.equal(users.root?.canremove, 'false');
  const groups = ok(await root.call('users', 'groupshow')) as Record<string, { users: string[] }>;
  assert.deepEqual(groups.daemon?.users, ['']);
  const operator = await sessionClientFor(t, agent, 'operator', 'limited');
  // Every account, as the spec's usershow says; the caller's own is the one marked canremove false.
  const seen = ok(await operator.call('users', 'usershow')) as Record<string, { canremove?: string }>;
  assert.ok(seen.root && seen.admin && seen.nobody);
  assert.deepEqual(
    Object.entries(seen)
      .filter(([, u]) => u.canremove === 'false')
      .map(([name]) => name),
    ['operator'],
  );
  // FreeBSD's operator account: primary group operator (5), and member of nothing else.
  assert.deepEqual(ok(await operator.call('users', 'groupshow')), { operator: { name: 'operator', gid: '5', users: ['operator'] } });
});

test("a pw failure is a 500 with pw's message; a host without personacrypt answers 501", async (t) => {
  const runner = new RecordingRunner([
    { match: ['pw', 'usershow', '-a'], stdout: USERS },
    { match: ['pw', 'groupshow', '-a'], stdout: GROUPS },
    { match: (argv) => argv[1] === 'useradd', code: 65, stderr: "pw: invalid character `:' in field\n" },
    { match: ['personacrypt', 'list', '-r'], code: 127, stderr: 'command not found: personacrypt\n' },
  ]);
  const agent = await agentWith(t, runner);
  const root = await sessionClientFor(t, agent, 'root', 'full');
  const failedAdd = await root.call('users', 'useradd', { name: 'dan', password: 'x' });
  assert.equal(failedAdd.name, 'error');
  assert.deepEqual(failedAdd.args, { code: 500, message: "creating account dan failed: pw: invalid character `:' in field" });
  const noTool = await root.call('users', 'personacrypt_listdevs');
  assert.equal((noTool.args as { code: number }).code, 501);
  assert.match((noTool.args as { message: string }).message, /personacrypt is not installed/);
});

test('password sign-in on FreeBSD uses OpenPAM; where it is missing the reason is given, not a wrong-password answer', async () => {
  // This machine is Linux: no libpam.so.6 / libc.so.7, so the verifier must say why it cannot work.
  await assert.rejects(freebsdPasswordVerifier()('root', 'x'), (err: unknown) => {
    assert.ok(err instanceof HostadmError);
    assert.equal(err.code, 'UNSUPPORTED');
    assert.match(err.message, /libpam\.so\.6/);
    return true;
  });
});
