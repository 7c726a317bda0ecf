/**
 * `admin/users` on the simulated FreeBSD host, through a real agent and WebSocket clients: what an
 * admin and a limited (operator) user see and may change, changes read back through the agent and
 * through sign-in, persistence across a restart, and the 400s that leave the host unchanged.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { SIM_PASSWORD, startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

type Users = Record<string, Record<string, string>>;
type Groups = Record<string, { name: string; gid: string; users: string[] }>;

async function agentFor(t: TestContext): Promise<TestAgent> {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  return agent;
}

async function signIn(t: TestContext, agent: TestAgent, user: string, password = SIM_PASSWORD): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  await client.login(user, password);
  return client;
}

async function ok(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const reply = await client.call('users', action, args);
  assert.equal(reply.name, 'response', `${action} ${JSON.stringify(args)} -> ${JSON.stringify(reply.args)}`);
  return reply.args;
}

function assertError(reply: Envelope, code: number, field?: string): void {
  assert.equal(reply.name, 'error', JSON.stringify(reply));
  const args = reply.args as { code: number; message: string; errors?: Array<{ field: string }> };
  assert.equal(args.code, code, args.message);
  if (field)
    assert.ok(
      args.errors?.some((e) => e.field === field),
      `expected an error naming ${field}: ${JSON.stringify(args)}`,
    );
}

async function canSignIn(agent: TestAgent, user: string, password: string): Promise<boolean> {
  const client = await TestClient.connect(agent.url);
  try {
    const reply = await client.request('rpc', 'auth', { username: user, password });
    return reply.name === 'response';
  } finally {
    client.close();
  }
}

test('an admin lists every account; only its own entry says canremove false', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  const users = (await ok(admin, 'usershow')) as Users;
  assert.equal(Object.keys(users).length, 28, "the sign-in accounts and FreeBSD 14's 25 system accounts");
  for (const name of ['admin', 'operator', 'root', 'toor', 'daemon', 'sshd', 'www', 'nobody']) assert.ok(users[name], name);
  assert.deepEqual(users.root, {
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
  assert.equal(users.admin?.canremove, 'false');
  assert.equal(users.operator?.canremove, undefined);
});

test('a limited user sees every account, as the spec says (its own with canremove false), and only their own groups', async (t) => {
  const agent = await agentFor(t);
  const operator = await signIn(t, agent, 'operator');
  const users = (await ok(operator, 'usershow')) as Users;
  const admin = await signIn(t, agent, 'admin');
  const all = (await ok(admin, 'usershow')) as Users;
  assert.deepEqual(Object.keys(users).sort(), Object.keys(all).sort());
  assert.ok(Object.keys(users).length > 1);
  assert.equal(users.operator?.canremove, 'false');
  assert.equal(users.admin?.canremove, undefined);
  const { canremove: _ownMark, ...adminAsOthersSeeIt } = all.admin ?? {};
  assert.deepEqual(users.admin, adminAsOthersSeeIt, 'the same record the admin sees, without its own-account mark');
  const groups = (await ok(operator, 'groupshow')) as Groups;
  assert.deepEqual(groups, { operator: { name: 'operator', gid: '5', users: ['operator'] } });
});

test('an admin sees every group with its members, and [""] for an empty group', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  const groups = (await ok(admin, 'groupshow')) as Groups;
  assert.deepEqual(groups.wheel, { name: 'wheel', gid: '0', users: ['root', 'admin'] });
  assert.deepEqual(groups.www, { name: 'www', gid: '80', users: [''] });
});

test('useradd creates the account, its own group and memberships; the new user signs in; it survives a restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  const admin = await signIn(t, agent, 'admin');
  await ok(admin, 'useradd', {
    name: 'bob',
    password: 'Bob pass; $(id) `x`',
    comment: 'Bob Builder, Room 4',
    shell: '/bin/csh',
    other_groups: ['operator'],
    expire: '20-Mar-2037',
    change: '1900000000',
  });
  const users = (await ok(admin, 'usershow')) as Users;
  assert.deepEqual(users.bob, {
    name: 'bob',
    uid: '1002',
    gid: '1002',
    class: '',
    change: '1900000000',
    expire: '2121120000',
    comment: 'Bob Builder, Room 4',
    home_dir: '/home/bob',
    shell: '/bin/csh',
  });
  const groups = (await ok(admin, 'groupshow')) as Groups;
  assert.deepEqual(groups.bob, { name: 'bob', gid: '1002', users: [''] });
  assert.deepEqual(groups.operator?.users, ['root', 'operator', 'bob']);
  // The password went into the same accounts sign-in reads: bob (operator) signs in with it.
  assert.equal(await canSignIn(agent, 'bob', 'Bob pass; $(id) `x`'), true);
  assert.equal(await canSignIn(agent, 'bob', 'wrong'), false);

  agent = await agent.restart();
  const again = await signIn(t, agent, 'admin');
  assert.deepEqual(((await ok(again, 'usershow')) as Users).bob?.uid, '1002');
  assert.equal(await canSignIn(agent, 'bob', 'Bob pass; $(id) `x`'), true);
});

test('useradd refuses what cannot be applied, naming the field, and changes nothing', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  const before = await ok(admin, 'usershow');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 'admin', password: 'x' }, 'name'],
    [{ name: 'carol', password: 'x', uid: '1001' }, 'uid'],
    [{ name: 'carol', password: 'x', group: 'nosuchgroup' }, 'group'],
    [{ name: 'carol', password: 'x', other_groups: ['wheel', 'nosuch'] }, 'other_groups'],
    [{ name: 'carol', password: 'x', expire: 'next tuesday' }, 'expire'],
    [{ name: 'carol', password: 'x', change: '31-02-2030' }, 'change'],
    [{ name: 'carol', password: 'line\nroot:x' }, 'password'],
    [{ name: 'carol', password: 'x', comment: 'a:b' }, 'comment'],
    [{ name: 'carol', password: 'x', home_dir: '/home/with space' }, 'home_dir'],
    [{ name: 'carol' }, 'password'],
  ];
  for (const [args, field] of cases) assertError(await admin.call('users', 'useradd', args), 400, field);
  assert.deepEqual(await ok(admin, 'usershow'), before);
});

test('userdelete removes the account, its empty own group and its memberships; never yourself or root', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  await ok(admin, 'useradd', { name: 'dave', password: 'pw-dave', other_groups: 'wheel' });
  await ok(admin, 'userdelete', { name: 'dave', clean_home: false });
  assert.equal(((await ok(admin, 'usershow')) as Users).dave, undefined);
  const groups = (await ok(admin, 'groupshow')) as Groups;
  assert.equal(groups.dave, undefined);
  assert.deepEqual(groups.wheel?.users, ['root', 'admin']);

  assertError(await admin.call('users', 'userdelete', { name: 'admin' }), 400, 'name');
  assertError(await admin.call('users', 'userdelete', { name: 'root' }), 400, 'name');
  assertError(await admin.call('users', 'userdelete', { name: 'nosuch' }), 400, 'name');
  assert.ok(((await ok(admin, 'usershow')) as Users).root);
});

test('usermod renames, regroups and changes the password; sign-in follows', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  await ok(admin, 'useradd', { name: 'erin', password: 'first', other_groups: ['operator', 'www'] });
  await ok(admin, 'usermod', { name: 'erin', newname: 'erin2', password: 'second', other_groups: 'operator', group: 'www', uid: 4242 });
  const users = (await ok(admin, 'usershow')) as Users;
  assert.equal(users.erin, undefined);
  assert.equal(users.erin2?.uid, '4242');
  assert.equal(users.erin2?.gid, '80');
  const groups = (await ok(admin, 'groupshow')) as Groups;
  assert.deepEqual(groups.operator?.users, ['root', 'operator', 'erin2']);
  assert.deepEqual(groups.www?.users, ['']);
  assert.equal(await canSignIn(agent, 'erin2', 'second'), true);
  assert.equal(await canSignIn(agent, 'erin2', 'first'), false);

  assertError(await admin.call('users', 'usermod', { name: 'erin2' }), 400, 'name');
  assertError(await admin.call('users', 'usermod', { name: 'nosuch', comment: 'x' }), 400, 'name');
  assertError(await admin.call('users', 'usermod', { name: 'erin2', newname: 'admin' }), 400, 'newname');
  assertError(await admin.call('users', 'usermod', { name: 'erin2', uid: '0' }), 400, 'uid');
});

test('a limited user changes only their own password, comment and shell; anything else is 403 and changes nothing', async (t) => {
  const agent = await agentFor(t);
  const operator = await signIn(t, agent, 'operator');
  await ok(operator, 'usermod', { name: 'operator', comment: 'Night shift', shell: '/bin/csh', password: 'op-new' });
  const mine = ((await ok(operator, 'usershow')) as Users).operator;
  assert.equal(mine?.comment, 'Night shift');
  assert.equal(mine?.shell, '/bin/csh');
  assert.equal(await canSignIn(agent, 'operator', 'op-new'), true);

  // Adding themselves to wheel would be privilege escalation.
  assertError(await operator.call('users', 'usermod', { name: 'operator', other_groups: ['wheel'] }), 403);
  assertError(await operator.call('users', 'usermod', { name: 'operator', uid: '0' }), 403);
  assertError(await operator.call('users', 'usermod', { name: 'operator', group: 'wheel' }), 403);
  assertError(await operator.call('users', 'usermod', { name: 'admin', comment: 'hacked' }), 403);
  assertError(await operator.call('users', 'usermod', { name: 'admin', password: 'hacked' }), 403);
  const admin = await signIn(t, agent, 'admin');
  const groups = (await ok(admin, 'groupshow')) as Groups;
  assert.deepEqual(groups.wheel?.users, ['root', 'admin']);
  assert.equal(((await ok(admin, 'usershow')) as Users).admin?.comment, 'Administrator');
  assert.equal(await canSignIn(agent, 'admin', SIM_PASSWORD), true);
});

test('a limited user cannot create, delete or regroup anything (403)', async (t) => {
  const agent = await agentFor(t);
  const operator = await signIn(t, agent, 'operator');
  const calls: Array<[string, Record<string, unknown>]> = [
    ['useradd', { name: 'mallory', password: 'x' }],
    ['userdelete', { name: 'admin' }],
    ['groupadd', { name: 'crew' }],
    ['groupdelete', { name: 'www' }],
    ['groupmod', { name: 'wheel', add_users: ['operator'] }],
  ];
  for (const [action, args] of calls) assertError(await operator.call('users', action, args), 403);
  const admin = await signIn(t, agent, 'admin');
  assert.deepEqual(((await ok(admin, 'groupshow')) as Groups).wheel?.users, ['root', 'admin']);
});

test('groups: add with members, set/add/remove members, delete; refusals name the field', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  await ok(admin, 'groupadd', { name: 'crew', users: ['operator'] });
  await ok(admin, 'groupadd', { name: 'staff2', gid: '3000' });
  let groups = (await ok(admin, 'groupshow')) as Groups;
  assert.deepEqual(groups.crew, { name: 'crew', gid: '1002', users: ['operator'] });
  assert.deepEqual(groups.staff2, { name: 'staff2', gid: '3000', users: [''] });

  await ok(admin, 'groupmod', { name: 'crew', add_users: ['admin', 'operator'] });
  assert.deepEqual(((await ok(admin, 'groupshow')) as Groups).crew?.users, ['operator', 'admin']);
  await ok(admin, 'groupmod', { name: 'crew', remove_users: ['operator'] });
  assert.deepEqual(((await ok(admin, 'groupshow')) as Groups).crew?.users, ['admin']);
  await ok(admin, 'groupmod', { name: 'crew', users: [] });
  assert.deepEqual(((await ok(admin, 'groupshow')) as Groups).crew?.users, ['']);
  await ok(admin, 'groupdelete', { name: 'crew' });
  groups = (await ok(admin, 'groupshow')) as Groups;
  assert.equal(groups.crew, undefined);

  assertError(await admin.call('users', 'groupadd', { name: 'wheel' }), 400, 'name');
  assertError(await admin.call('users', 'groupadd', { name: 'other', gid: '0' }), 400, 'gid');
  assertError(await admin.call('users', 'groupadd', { name: 'other', users: ['ghost'] }), 400, 'users');
  assertError(await admin.call('users', 'groupdelete', { name: 'ghosts' }), 400, 'name');
  assertError(await admin.call('users', 'groupdelete', { name: 'admin' }), 400, 'name'); // admin's primary group
  assertError(await admin.call('users', 'groupmod', { name: 'ghosts', users: [] }), 400, 'name');
  assertError(await admin.call('users', 'groupmod', { name: 'wheel', add_users: ['ghost'] }), 400, 'add_users');
  assertError(await admin.call('users', 'groupmod', { name: 'wheel', users: [], add_users: ['admin'] }), 400, 'users');
  assertError(await admin.call('users', 'groupmod', { name: 'wheel' }), 400, 'users');
  assert.equal(((await ok(admin, 'groupshow')) as Groups).other, undefined);
});

test('personacrypt_listdevs lists the simulated USB sticks as personacrypt does', async (t) => {
  const agent = await agentFor(t);
  const operator = await signIn(t, agent, 'operator');
  assert.deepEqual(await ok(operator, 'personacrypt_listdevs'), {
    da0: '<SanDisk Cruzer Blade 1.00> 7.5G',
    da1: '<Kingston DataTraveler 3.0 PMAP> 29G',
  });
});

test('a session ends when its account is deleted, renamed or its access group changes; other changes leave it', async (t) => {
  const agent = await agentFor(t);
  const admin = await signIn(t, agent, 'admin');
  for (const name of ['fred', 'gina', 'hank', 'ivy', 'jon']) await ok(admin, 'useradd', { name, password: `${name}-pw`, other_groups: ['operator'] });
  const [fred, gina, hank, ivy, jon] = await Promise.all(['fred', 'gina', 'hank', 'ivy', 'jon'].map((n) => signIn(t, agent, n, `${n}-pw`)));
  const signedOut = async (client: TestClient | undefined) => (await client!.call('users', 'usershow')).name === 'error';

  await ok(admin, 'groupmod', { name: 'operator', remove_users: ['fred'] });
  assert.equal(await signedOut(fred), true, 'no longer in operator');
  await ok(admin, 'usermod', { name: 'gina', other_groups: ['wheel'] });
  assert.equal(await signedOut(gina), true, 'now wheel: sign in again for the new rights');
  await ok(admin, 'userdelete', { name: 'hank' });
  assert.equal(await signedOut(hank), true, 'deleted');
  await ok(admin, 'usermod', { name: 'ivy', newname: 'ivy2' });
  assert.equal(await signedOut(ivy), true, 'renamed');
  await ok(admin, 'usermod', { name: 'jon', comment: 'Jon J', other_groups: ['operator', 'www'] });
  assert.equal(await signedOut(jon), false, 'still operator, still limited');
  await ok(admin, 'groupadd', { name: 'crew', users: ['admin'] });
  await ok(admin, 'groupmod', { name: 'crew', users: [] });
  assert.equal(await signedOut(admin), false, 'leaving an ordinary group changes no access');
});
