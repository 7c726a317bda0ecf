/**
 * The SDK and the agent refuse the same values (one source of validation: the contract). For every
 * string field of the users, fs, services and systemmanager actions, fast-check generates values
 * (names, paths, dates, numbers, control characters, any Unicode) and asks both:
 * - the SDK: `check(contract.args, args)` from client/sdk/src/validate.ts, what it runs before sending;
 * - a real agent on the FreeBSD platform, over its WebSocket: it accepted the value when it answered
 *   or went on to ask the host (a RecordingRunner that fails every command, so nothing changes).
 *   Refusing without asking the host is a refusal on the value's form alone.
 * Both must agree on every value. Checks that need the host's state (no such account, a name already
 * taken) come after the host was asked, so they do not count as the form's.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { check } from '@hostadm/client/sdk/src/validate.ts';
import { users } from '@hostadm/shared/api/users.ts';
import { fs } from '@hostadm/shared/api/fs.ts';
import { services } from '@hostadm/shared/api/services.ts';
import { systemmanager } from '@hostadm/shared/api/systemmanager.ts';
import { pkg } from '@hostadm/shared/api/pkg.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';

/** Characters that matter to some rule somewhere: separators, option dashes, quotes, control bytes, scripts. */
const TRICKY = [...'aZ09_.-$@:+/,&\'’()#!* \t\n\u0000\u007f;|`"\\=%~éЖ中\u0301'];

const values: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.constantFrom(...TRICKY), maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.stringMatching(/^[a-z_][a-z0-9_.$@-]{0,40}$/),
  fc.stringMatching(/^-?[a-z0-9.]{1,8}\/-?[A-Za-z0-9_.+ -]{1,12}(@[a-z]{1,5})?$/),
  fc.stringMatching(/^\/[A-Za-z0-9_.+@ /:-]{0,30}$/),
  fc.stringMatching(/^(\d{1,13}|\+\d{1,7}[mhdwoyx]|\d{1,3}-([A-Za-z]{3}|\d{1,3})-\d{1,5})$/),
  fc.constantFrom('', '..', '/..', '/a/../b', '-', '-x', '0', '4294967294', '4294967295', 'root', 'a'.repeat(32), 'a'.repeat(33), '.hidden'),
);

interface Case {
  contract: ClassContract;
  action: string;
  field: string;
  args: (value: string) => Record<string, unknown>;
}

const NEW = { name: 'newbie', password: 'secret' };
const accountFields = ['uid', 'change', 'class', 'comment', 'expire', 'group', 'home_dir', 'shell', 'other_groups'];

const cases: Case[] = [
  ...['name', 'password', ...accountFields].map((field): Case => ({ contract: users, action: 'useradd', field, args: (v) => ({ ...NEW, [field]: v }) })),
  { contract: users, action: 'useradd', field: 'other_groups[]', args: (v) => ({ ...NEW, other_groups: ['wheel', v] }) },
  { contract: users, action: 'userdelete', field: 'name', args: (v) => ({ name: v }) },
  { contract: users, action: 'userdelete', field: 'clean_home', args: (v) => ({ name: 'admin', clean_home: v }) },
  ...['name', 'newname', 'password', ...accountFields].map(
    (field): Case => ({
      contract: users,
      action: 'usermod',
      field,
      args: (v) => ({ name: 'admin', comment: 'x', [field]: v }),
    }),
  ),
  { contract: users, action: 'groupadd', field: 'name', args: (v) => ({ name: v }) },
  { contract: users, action: 'groupadd', field: 'gid', args: (v) => ({ name: 'crew', gid: v }) },
  { contract: users, action: 'groupadd', field: 'users[]', args: (v) => ({ name: 'crew', users: [v] }) },
  { contract: users, action: 'groupdelete', field: 'name', args: (v) => ({ name: v }) },
  ...['users', 'add_users', 'remove_users'].map(
    (field): Case => ({ contract: users, action: 'groupmod', field: `${field}[]`, args: (v) => ({ name: 'staff', [field]: [v] }) }),
  ),
  { contract: users, action: 'groupmod', field: 'name', args: (v) => ({ name: v, add_users: ['admin'] }) },
  { contract: fs, action: 'dirlist', field: 'dir', args: (v) => ({ dir: v }) },
  ...['start', 'stop', 'restart', 'enable', 'disable'].map(
    (action): Case => ({ contract: services, action, field: 'services', args: (v) => ({ services: v }) }),
  ),
  { contract: services, action: 'start', field: 'services[]', args: (v) => ({ services: ['sshd', v] }) },
  { contract: systemmanager, action: 'setsysctl', field: 'sysctl', args: (v) => ({ sysctl: v, value: '1' }) },
  { contract: systemmanager, action: 'setsysctl', field: 'value', args: (v) => ({ sysctl: 'kern.maxfiles', value: v }) },
  { contract: systemmanager, action: 'killproc', field: 'pid', args: (v) => ({ pid: v, signal: 'TERM' }) },
  { contract: systemmanager, action: 'killproc', field: 'signal', args: (v) => ({ pid: '4242', signal: v }) },
  { contract: pkg, action: 'pkg_install', field: 'pkg_origins', args: (v) => ({ pkg_origins: v }) },
  { contract: pkg, action: 'pkg_lock', field: 'pkg_origins[]', args: (v) => ({ pkg_origins: ['editors/vim', v] }) },
  { contract: pkg, action: 'pkg_info', field: 'category', args: (v) => ({ category: v }) },
  { contract: pkg, action: 'pkg_info', field: 'repo', args: (v) => ({ repo: v }) },
  { contract: pkg, action: 'pkg_search', field: 'search_term', args: (v) => ({ search_term: v }) },
  { contract: pkg, action: 'pkg_search', field: 'search_excludes[]', args: (v) => ({ search_term: 'vim', search_excludes: [v] }) },
];

/**
 * Values refused for what they name, not their form: the signed-in account (it cannot delete
 * itself), root (never deleted), PID 1 and the agent's own process (never signalled).
 */
function protectedValue(c: Case, value: string): boolean {
  if (c.action === 'userdelete' && c.field === 'name') return value === 'root';
  if (c.action === 'killproc' && c.field === 'pid') return /^0*1$/.test(value) || Number(value) === process.pid;
  return false;
}

async function rootClient(t: TestContext) {
  const runner = new RecordingRunner([{ match: () => true, code: 1, stderr: 'refused by the test host' }]);
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  t.after(() => agent.dispose());
  return { runner, client: await sessionClientFor(t, agent, 'root', 'full') };
}

test('the SDK and the agent accept and refuse the same values in every string field', async (t) => {
  const { runner, client } = await rootClient(t);
  let refusedByBoth = 0;
  let acceptedByBoth = 0;
  for (const c of cases) {
    const schema = c.contract.actions[c.action]?.args;
    assert.ok(schema, `${c.contract.name} ${c.action} has a contract`);
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(!protectedValue(c, value));
        const args = c.args(value);
        const sdkAccepts = check(schema, args).length === 0;
        const asked = runner.calls.length;
        const reply = await client.call(c.contract.name, c.action, args);
        const agentAccepts = reply.name === 'response' || runner.calls.length > asked;
        assert.equal(
          agentAccepts,
          sdkAccepts,
          `${c.contract.name} ${c.action} ${c.field}=${JSON.stringify(value)}: SDK ${sdkAccepts ? 'accepts' : 'refuses'}, agent answered ${JSON.stringify(reply.args)}`,
        );
        if (sdkAccepts) acceptedByBoth++;
        else refusedByBoth++;
      }),
      { numRuns: 120 },
    );
  }
  // Both sides of every rule were exercised, not only one.
  assert.ok(acceptedByBoth > cases.length * 10, `only ${acceptedByBoth} accepted values`);
  assert.ok(refusedByBoth > cases.length * 10, `only ${refusedByBoth} refused values`);
});

test('names the old contract admitted but the host refused are now refused before sending', () => {
  const useradd = users.actions.useradd?.args;
  assert.ok(useradd);
  for (const name of ['a@b', 'svc:x', 'c+d', 'a'.repeat(33)]) {
    const problems = check(useradd, { name, password: 'x' });
    assert.deepEqual(
      problems.map((p) => p.field),
      ['name'],
      name,
    );
    assert.match(problems[0]?.message ?? '', /must be at most 32 letters, digits/);
  }
  // A value the general rule refuses keeps the general rule's words alone.
  assert.deepEqual(
    check(useradd, { name: '-x', password: 'x' }).map((p) => p.message),
    ['may hold only letters, digits and . _ : @ + - and must not start with - or . (got "-x")'],
  );
  assert.deepEqual(
    check(useradd, { name: 'bob', password: 'x', expire: '31-02-2030' }).map((p) => p.field),
    ['expire'],
  );
  assert.deepEqual(
    check(users.actions.usermod?.args ?? useradd, { name: 'bob' }).map((p) => p.message),
    ['nothing to change: give at least one field besides name (got "bob")'],
  );
});
