/**
 * `admin/snapshot` on the simulated FreeBSD host, over a real WebSocket: manual snapshots with their
 * comment, revert (newer snapshots go) and remove; schedules that fire on the agent's clock as
 * dispatcher jobs and prune to `keep` without touching manual snapshots; scrubs; settings and the
 * `life-preserver` warning; everything persisted across a restart; replication tasks refused with a
 * 500 where the remote cannot be reached; bad names and values a 400 naming the field, an operator 403.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { lastOccurrence } from '@hostadm/agent/snapshots/frequencies.ts';
import { autoSnapshotName } from '@hostadm/agent/snapshots/jobs.ts';
import { expectError } from './services-support.ts';
import { BAD_DATASETS, BAD_POOLS, BAD_SNAPS, eventArgs, finishedJob, okArgs, refused } from './zfs-support.ts';

// The clock jumps by days: sessions must outlive that.
const FAST = { config: { schedulerTickMs: 20, tokenTtlSeconds: 400 * 86400 } };
const snap = (client: TestClient, action: string, args: Record<string, unknown> = {}) => okArgs(client, 'snapshot', action, args);

async function listsnap(client: TestClient, pool: string): Promise<Record<string, { comment: string }>> {
  return (await snap(client, 'listsnap', { pool })).listsnap as Record<string, { comment: string }>;
}

/** Moves the agent's clock on and waits for the scheduled snapshot of that occurrence to finish. */
async function fireSnapshot(agent: TestAgent, client: TestClient, pool: string, seconds: number, frequency: string): Promise<Record<string, unknown>> {
  agent.clock.advance(seconds);
  const due = lastOccurrence(frequency, agent.clock.now()) as number;
  const expected = `${pool}@${autoSnapshotName(due)}`;
  const env = await client.nextEvent((e) => finishedJob('cronsnap', pool)(e) && eventArgs(e).snapshot === expected);
  return eventArgs(env);
}

test('createsnap with a comment, listsnap, revertsnap (newer snapshots go), removesnap; missing things are 404s', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await snap(admin, 'createsnap', { dataset: 'tank/media', snap: 's1', comment: 'before the import' }), {
    createsnap: { comment: 'before the import', dataset: 'tank/media', snap: 's1' },
  });
  assert.deepEqual(await snap(admin, 'createsnap', { dataset: 'tank/media', snap: 's2' }), { createsnap: { comment: '', dataset: 'tank/media', snap: 's2' } });
  assert.deepEqual(await listsnap(admin, 'tank'), { 'tank/media@s1': { comment: 'before the import' }, 'tank/media@s2': { comment: '' } });
  expectError(await admin.call('snapshot', 'createsnap', { dataset: 'tank/media', snap: 's1' }), 409);
  expectError(await admin.call('snapshot', 'createsnap', { dataset: 'tank/nothere', snap: 's1' }), 404);

  assert.deepEqual(await snap(admin, 'revertsnap', { dataset: 'tank/media', snap: 's1' }), { revertsnap: { dataset: 'tank/media', snap: 's1' } });
  assert.deepEqual(Object.keys(await listsnap(admin, 'tank')), ['tank/media@s1'], 'reverting destroys the newer snapshot');
  assert.deepEqual(await snap(admin, 'removesnap', { dataset: 'tank/media', snap: 's1' }), { removesnap: { dataset: 'tank/media', snap: 's1' } });
  assert.deepEqual(await listsnap(admin, 'tank'), {});
  for (const action of ['removesnap', 'revertsnap']) expectError(await admin.call('snapshot', action, { dataset: 'tank/media', snap: 's1' }), 404);
  expectError(await admin.call('snapshot', 'listsnap', { pool: 'nopool' }), 404);
  // The seeded manual snapshot of zroot is listed with its comment.
  assert.deepEqual(await listsnap(admin, 'zroot'), { 'zroot/usr/home@before-upgrade': { comment: 'before 14.1 upgrade' } });
});

test('cronsnap: a 5min schedule fires on the agent clock as dispatcher jobs and keeps the newest 2 automatic snapshots, never a manual one', async (t) => {
  const agent = await agentFor(t, FAST);
  const admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher', 'life-preserver']);
  await snap(admin, 'createsnap', { dataset: 'tank', snap: 'manual-1', comment: 'keep me' });
  assert.deepEqual(await snap(admin, 'cronsnap', { pool: 'tank', keep: '2', frequency: '5min' }), { cronsnap: { frequency: '5min', keep: '2', pool: 'tank' } });
  assert.deepEqual(await snap(admin, 'listcron'), { listcron: { tank: { keep: '2', schedule: '5min' } } });

  const names: string[] = [];
  for (let i = 0; i < 3; i++) {
    const event = await fireSnapshot(agent, admin, 'tank', 300, '5min');
    assert.equal(event.success, 'true', JSON.stringify(event));
    assert.equal(event.event_system, 'admin/snapshot');
    names.push(String(event.snapshot));
  }
  const listed = Object.keys(await listsnap(admin, 'tank'));
  // Recursive (the default setting): every dataset of tank got the snapshot; the oldest went everywhere.
  const oldest = (names[0] as string).split('@')[1] as string;
  assert.ok(!listed.some((n) => n.endsWith(`@${oldest}`)), `pruned: ${listed}`);
  assert.ok(listed.includes(names[1] as string) && listed.includes(names[2] as string), `${listed}`);
  assert.ok(listed.includes('tank@manual-1'), 'a manual snapshot is never pruned');
  assert.ok(listed.includes(`tank/media@${(names[2] as string).split('@')[1]}`), 'children snapshotted too');
  const told = await admin.nextEvent((e) => (e.args as { name: string }).name === 'life-preserver');
  assert.equal(eventArgs(told).class, 'snapshot');

  assert.deepEqual(await snap(admin, 'cronsnap', { pool: 'tank', keep: '0', frequency: 'none' }), { cronsnap: { frequency: 'none', keep: '0', pool: 'tank' } });
  assert.deepEqual(await snap(admin, 'listcron'), { listcron: {} });
});

test('cronscrub: a weekly scrub fires as a job; schedules and settings survive a restart', async (t) => {
  let agent = await startTestAgent(FAST);
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  assert.deepEqual(await snap(admin, 'cronscrub', { pool: 'zroot', frequency: 'weekly@07@03' }), { cronscrub: { frequency: 'weekly@07@03', pool: 'zroot' } });
  await snap(admin, 'cronsnap', { pool: 'tank', keep: '7', frequency: 'daily@02' });
  assert.deepEqual(await snap(admin, 'savesettings', { duwarn: '85', email: 'ops@example.org', emailopts: 'ALL', recursive: false }), {
    savesettings: { duwarn: '85', email: 'ops@example.org', emailopts: 'ALL', recursive: 'false' },
  });
  agent.clock.advance(7 * 24 * 3600);
  const scrub = eventArgs(await admin.nextEvent(finishedJob('cronscrub', 'zroot')));
  assert.equal(scrub.success, 'true');
  assert.deepEqual(scrub.process_details && (scrub.process_details as { cmd_list: string[] }).cmd_list, ['zpool scrub zroot']);

  agent = await agent.restart();
  admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await snap(admin, 'listcron'), {
    listcron: { tank: { keep: '7', schedule: 'daily@02' }, zroot: { keep: '0', schedule: 'none', scrub: 'weekly@07@03' } },
  });
  assert.deepEqual(await snap(admin, 'settings'), { settings: { diskwarn: '85%', email: 'ALL', emailaddress: 'ops@example.org', recursive: 'OFF' } });
});

test('settings: the defaults; a pool over duwarn raises a life-preserver warning; ranges refused', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await snap(admin, 'settings'), { settings: { diskwarn: '70%', email: 'WARN', emailaddress: '', recursive: 'ON' } });
  await admin.request('events', 'subscribe', ['life-preserver']);
  await snap(admin, 'savesettings', { duwarn: 5 });
  await snap(admin, 'createsnap', { dataset: 'zroot/usr/home', snap: 'x' });
  const warning = eventArgs(await admin.nextEvent((e) => (e.args as { name: string }).name === 'life-preserver'));
  assert.equal(warning.class, 'snapshot');
  assert.equal(warning.priority, '4 - Warning');
  assert.match(String(warning.message), /^pool zroot is \d+% full, over the 5% warning level$/);
  await refused(admin, 'snapshot', 'savesettings', { duwarn: '100' }, 'duwarn');
  await refused(admin, 'snapshot', 'savesettings', { duwarn: '-1' }, 'duwarn');
  await refused(admin, 'snapshot', 'savesettings', { emailopts: 'SOME' }, 'emailopts');
  await refused(admin, 'snapshot', 'savesettings', { email: 'not an address' }, 'email');
  await refused(admin, 'snapshot', 'savesettings', {}, 'duwarn');
  assert.equal(((await snap(admin, 'settings')).settings as { diskwarn: string }).diskwarn, '5%', 'nothing changed');
});

test('replication: tasks validated (ports, hosts, frequencies, names); an unreachable remote on sim is a 500; missing tasks 404', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const task = {
    host: 'backup.example.org',
    port: '22',
    user: 'backup',
    password: 'pw',
    dataset: 'tank/media',
    remotedataset: 'vault/media',
    frequency: 'sync',
  };
  // The sim's remote under .invalid cannot be reached: the key is not installed and nothing is stored.
  const err = expectError(await admin.call('snapshot', 'addreplication', { ...task, host: 'backup.invalid' }), 500);
  assert.match(err.message, /Could not resolve hostname/);
  assert.deepEqual(await snap(admin, 'listreplication'), { listreplication: {} });
  for (const port of ['0', '65536', 'ssh', -1]) await refused(admin, 'snapshot', 'addreplication', { ...task, port }, 'port');
  for (const host of ['-oProxyCommand=x', 'a b', 'host;id', '']) await refused(admin, 'snapshot', 'addreplication', { ...task, host }, 'host');
  for (const frequency of ['24', 'hourly', '5min', 'never']) await refused(admin, 'snapshot', 'addreplication', { ...task, frequency }, 'frequency');
  await refused(admin, 'snapshot', 'addreplication', { ...task, remotedataset: 'vault/../x' }, 'remotedataset');
  for (const action of ['runreplication', 'initreplication', 'removereplication']) {
    expectError(await admin.call('snapshot', action, { dataset: 'tank/media', host: 'backup.example.org' }), 404);
  }
});

test('bad names are a 400 naming the field, bad frequencies too; a missing pool is a 404; nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  for (const pool of BAD_POOLS) {
    await refused(admin, 'snapshot', 'cronsnap', { pool, keep: '1', frequency: 'hourly' }, 'pool');
    await refused(admin, 'snapshot', 'listsnap', { pool }, 'pool');
  }
  for (const dataset of BAD_DATASETS) {
    for (const action of ['createsnap', 'revertsnap', 'removesnap']) await refused(admin, 'snapshot', action, { dataset, snap: 's' }, 'dataset');
  }
  for (const s of BAD_SNAPS) {
    for (const action of ['createsnap', 'revertsnap', 'removesnap']) await refused(admin, 'snapshot', action, { dataset: 'tank', snap: s }, 'snap');
  }
  await refused(admin, 'snapshot', 'createsnap', { dataset: `tank/${'d'.repeat(200)}`, snap: 's'.repeat(60) }, 'snap');
  await refused(admin, 'snapshot', 'createsnap', { dataset: 'tank', snap: 's', comment: '-o x' }, 'comment');
  for (const frequency of ['daily@24', 'daily', 'hourly ', '15min', '1min', 'weekly@01@01'])
    await refused(admin, 'snapshot', 'cronsnap', { pool: 'tank', keep: '1', frequency }, 'frequency');
  for (const frequency of ['weekly@00@01', 'weekly@08@01', 'weekly@1@01', 'monthly@32@01', 'monthly@00@01', 'daily@25', 'hourly']) {
    await refused(admin, 'snapshot', 'cronscrub', { pool: 'tank', frequency }, 'frequency');
  }
  await refused(admin, 'snapshot', 'cronsnap', { pool: 'tank', keep: '0', frequency: 'hourly' }, 'keep');
  await refused(admin, 'snapshot', 'cronsnap', { pool: 'tank', keep: 'many', frequency: 'hourly' }, 'keep');
  expectError(await admin.call('snapshot', 'cronsnap', { pool: 'nopool', keep: '1', frequency: 'hourly' }), 404);
  expectError(await admin.call('snapshot', 'cronscrub', { pool: 'nopool', frequency: 'daily@01' }), 404);
  assert.deepEqual(await snap(admin, 'listcron'), { listcron: {} });
  assert.deepEqual(await listsnap(admin, 'tank'), {});
});

test('an operator reads but every change is a 403', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  await snap(operator, 'listcron');
  await snap(operator, 'listsnap', { pool: 'zroot' });
  await snap(operator, 'settings');
  await snap(operator, 'listreplication');
  const writes: Array<[string, Record<string, unknown>]> = [
    ['cronsnap', { pool: 'tank', keep: '1', frequency: 'hourly' }],
    ['cronscrub', { pool: 'tank', frequency: 'daily@01' }],
    ['createsnap', { dataset: 'tank', snap: 's' }],
    ['revertsnap', { dataset: 'zroot/usr/home', snap: 'before-upgrade' }],
    ['removesnap', { dataset: 'zroot/usr/home', snap: 'before-upgrade' }],
    ['addreplication', { host: 'h', port: '22', user: 'u', password: 'p', dataset: 'tank', remotedataset: 'r', frequency: 'manual' }],
    ['removereplication', { host: 'h', dataset: 'tank' }],
    ['runreplication', { host: 'h', dataset: 'tank' }],
    ['initreplication', { host: 'h', dataset: 'tank' }],
    ['savesettings', { duwarn: '10' }],
  ];
  for (const [action, args] of writes) expectError(await operator.call('snapshot', action, args), 403);
  const admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await listsnap(admin, 'zroot'), { 'zroot/usr/home@before-upgrade': { comment: 'before 14.1 upgrade' } });
});
