/**
 * `admin/beadm` on the simulated FreeBSD host, through a real agent over its WebSocket: every action in
 * the spec's shapes and the flags (`N`, `R`, `NR`, `-`) moving as the spec's transitions say, the model
 * persisted across a restart, names checked (400 for bad ones, 404 for missing ones, nothing changed),
 * the running and next-boot environments protected (409), and a limited user refused (403).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { okCall } from './powerd-support.ts';

type BeRecords = Record<string, { active: string; date: string; mount: string; nick: string; space: string }>;

async function listbes(client: TestClient): Promise<BeRecords> {
  return (await okCall(client, 'beadm', 'listbes')).listbes as BeRecords;
}

const flags = (list: BeRecords) => Object.fromEntries(Object.entries(list).map(([name, be]) => [name, be.active]));

test('listbes in the spec shape: records keyed by name, flags, date, mount, nick, space', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await listbes(admin), {
    default: { active: 'NR', date: '2024-03-14', mount: '/', nick: '09:12', space: '2.41G' },
    '14.0-RELEASE-p6_2024-06-05_101213': { active: '-', date: '2024-06-05', mount: '-', nick: '10:12', space: '8.47M' },
  });
});

test('create, activate, mount, unmount, rename and destroy move the flags as the spec says, and persist', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await okCall(admin, 'beadm', 'createbe', { newbe: 'upgrade' }), { createbe: { newbe: 'upgrade' } });
  assert.deepEqual(await okCall(admin, 'beadm', 'createbe', { newbe: 'from-snap', clonefrom: 'default@2024-06-05-10:12:13-0' }), {
    createbe: { clonefrom: 'default@2024-06-05-10:12:13-0', newbe: 'from-snap' },
  });
  const created = (await listbes(admin)).upgrade;
  assert.equal(created?.active, '-');
  assert.match(created?.date ?? '', /^\d{4}-\d{2}-\d{2}$/);

  // `-` → `R`: active at next boot; the running one keeps `N`.
  assert.deepEqual(await okCall(admin, 'beadm', 'activatebe', { target: 'upgrade' }), { activatebe: { target: 'upgrade' } });
  assert.deepEqual(flags(await listbes(admin)), { default: 'N', '14.0-RELEASE-p6_2024-06-05_101213': '-', upgrade: 'R', 'from-snap': '-' });

  const mounted = (await okCall(admin, 'beadm', 'mountbe', { be: 'from-snap' })) as { mountbe: { be: string; mountpoint: string } };
  assert.equal(mounted.mountbe.be, 'from-snap');
  assert.match(mounted.mountbe.mountpoint, /^\/tmp\/be_mount\.[A-Za-z0-9_-]{4}$/);
  assert.deepEqual(await okCall(admin, 'beadm', 'mountbe', { be: 'upgrade', mountpoint: '/mnt/upgrade' }), {
    mountbe: { be: 'upgrade', mountpoint: '/mnt/upgrade' },
  });
  assert.equal((await listbes(admin)).upgrade?.mount, '/mnt/upgrade');

  // The model survives a restart of the agent.
  agent = await agent.restart();
  admin = await clientFor(t, agent, 'admin');
  assert.equal((await listbes(admin)).upgrade?.mount, '/mnt/upgrade');
  assert.equal((await listbes(admin)).upgrade?.active, 'R');

  assert.deepEqual(await okCall(admin, 'beadm', 'umountbe', { be: 'upgrade' }), { umountbe: { be: 'upgrade' } });
  assert.equal((await listbes(admin)).upgrade?.mount, '-');
  // `source` is the new name, `target` the existing one (the spec's wording); the R flag follows the rename.
  assert.deepEqual(await okCall(admin, 'beadm', 'renamebe', { source: '14.1-upgrade', target: 'upgrade' }), {
    renamebe: { source: '14.1-upgrade', target: 'upgrade' },
  });
  assert.equal((await listbes(admin))['14.1-upgrade']?.active, 'R');
  // A mounted environment is forcibly unmounted and destroyed.
  assert.deepEqual(await okCall(admin, 'beadm', 'destroybe', { target: 'from-snap' }), { destroybe: { target: 'from-snap' } });
  assert.deepEqual(Object.keys(await listbes(admin)).sort(), ['14.0-RELEASE-p6_2024-06-05_101213', '14.1-upgrade', 'default']);
});

test('names: bad ones are 400 naming the field, missing ones 404, taken ones 400; nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const before = await listbes(admin);
  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['createbe', { newbe: '-rf' }, 'newbe'],
    ['createbe', { newbe: 'a b' }, 'newbe'],
    ['createbe', { newbe: 'x;reboot' }, 'newbe'],
    ['createbe', { newbe: 'ok', clonefrom: 'a@b@c' }, 'clonefrom'],
    ['createbe', { newbe: 'x'.repeat(256) }, 'newbe'],
    ['renamebe', { source: 'new/name', target: 'default' }, 'source'],
    ['activatebe', { target: '' }, 'target'],
    ['destroybe', { target: '$(id)' }, 'target'],
    ['mountbe', { be: 'default', mountpoint: 'relative/dir' }, 'mountpoint'],
    ['umountbe', { be: '.hidden' }, 'be'],
  ];
  for (const [action, args, field] of bad) {
    const err = expectError(await admin.call('beadm', action, args), 400);
    assert.ok(err.errors?.some((e) => e.field === field) || err.message.includes(field), `${action} ${JSON.stringify(args)}: ${JSON.stringify(err)}`);
  }
  for (const [action, args, field] of [
    ['destroybe', { target: 'nope' }, 'target'],
    ['activatebe', { target: 'nope' }, 'target'],
    ['renamebe', { source: 'new', target: 'nope' }, 'target'],
    ['mountbe', { be: 'nope' }, 'be'],
    ['umountbe', { be: 'nope' }, 'be'],
    ['createbe', { newbe: 'copy', clonefrom: 'nope' }, 'clonefrom'],
  ] as const) {
    const err = expectError(await admin.call('beadm', action, args), 404);
    assert.match(err.message, new RegExp(`^${field}: no boot environment named nope`));
  }
  expectError(await admin.call('beadm', 'createbe', { newbe: 'default' }), 400);
  expectError(await admin.call('beadm', 'renamebe', { source: 'default', target: '14.0-RELEASE-p6_2024-06-05_101213' }), 400);
  assert.deepEqual(await listbes(admin), before);
});

test('the running and the next-boot environments are never destroyed, / never unmounted (409)', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.match(expectError(await admin.call('beadm', 'destroybe', { target: 'default' }), 409).message, /running boot environment/);
  assert.match(expectError(await admin.call('beadm', 'umountbe', { be: 'default' }), 409).message, /mounted at \//);
  assert.match(expectError(await admin.call('beadm', 'umountbe', { be: '14.0-RELEASE-p6_2024-06-05_101213' }), 409).message, /not mounted/);
  await okCall(admin, 'beadm', 'activatebe', { target: '14.0-RELEASE-p6_2024-06-05_101213' });
  assert.match(expectError(await admin.call('beadm', 'destroybe', { target: '14.0-RELEASE-p6_2024-06-05_101213' }), 409).message, /next boot/);
  assert.match(expectError(await admin.call('beadm', 'mountbe', { be: 'default' }), 409).message, /already mounted at \//);
  assert.equal(Object.keys(await listbes(admin)).length, 2);
});

test('an operator lists but every change is 403; query shows beadm read-only to them', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  assert.ok((await listbes(operator)).default);
  for (const [action, args] of [
    ['createbe', { newbe: 'x' }],
    ['renamebe', { source: 'y', target: 'default' }],
    ['activatebe', { target: 'default' }],
    ['destroybe', { target: '14.0-RELEASE-p6_2024-06-05_101213' }],
    ['mountbe', { be: '14.0-RELEASE-p6_2024-06-05_101213' }],
    ['umountbe', { be: 'default' }],
  ] as const) {
    expectError(await operator.call('beadm', action, args), 403);
  }
  assert.equal(((await operator.request('rpc', 'query', {})).args as Record<string, string>)['admin/beadm'], 'read');
  const admin = await clientFor(t, agent, 'admin');
  assert.equal(Object.keys(await listbes(admin)).length, 2);
});
