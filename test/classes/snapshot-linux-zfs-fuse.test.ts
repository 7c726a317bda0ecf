/**
 * `zfs` and `snapshot` on the real Linux platform, on zfs-fuse 0.7 in a namespace over file vdevs
 * (test/helpers/zfs-fuse-sandbox.ts): pools and datasets listed (the columns zfs-fuse lacks read as
 * `-`), a snapshot created with a comment, listed, reverted (the file's old content comes back) and
 * removed; a 5min schedule fired by moving the agent's clock, pruned to `keep`; a scrub scheduled and
 * run. Skips with the reason where zfs-fuse cannot run (no root, no /dev/fuse, no Debian mirror).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { lastOccurrence } from '@hostadm/agent/snapshots/frequencies.ts';
import { autoSnapshotName } from '@hostadm/agent/snapshots/jobs.ts';
import { agentFor, sessionClientFor, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { startZfsFuse, type ZfsFuseSandbox } from '../helpers/zfs-fuse-sandbox.ts';
import { expectError } from './services-support.ts';
import { eventArgs, finishedJob, okArgs, refused } from './zfs-support.ts';

async function setUp(t: import('node:test').TestContext): Promise<{ zfs: ZfsFuseSandbox; agent: TestAgent; root: TestClient; mnt: string } | null> {
  const zfs = await startZfsFuse(t);
  if (!zfs) return null;
  const mnt = await zfs.createPool('tank');
  await zfs.sh(['zfs', 'create', 'tank/data']);
  const agent = await agentFor(t, {
    platform: 'linux',
    runner: createRunner({ prefix: zfs.prefix }),
    zfsTools: true,
    // The clock jumps by days: the session must outlive that.
    config: { schedulerTickMs: 20, tokenTtlSeconds: 400 * 86400 },
  });
  const root = await sessionClientFor(t, agent, 'root', 'full');
  return { zfs, agent, root, mnt };
}

const write = (zfs: ZfsFuseSandbox, path: string, text: string) => zfs.sh(['sh', '-c', `printf %s "$1" > "$2"`, 'sh', text, path]);

test('zfs-fuse: pools and datasets listed; snapshot with a comment created, listed, reverted (the file comes back), removed', async (t) => {
  const env = await setUp(t);
  if (!env) return;
  const { zfs, root, mnt } = env;
  const { list_pools } = await okArgs<{ list_pools: Record<string, Record<string, string>> }>(root, 'zfs', 'list_pools');
  const tank = list_pools.tank as Record<string, string>;
  assert.equal(tank.health, 'ONLINE');
  assert.match(tank.cap as string, /^\d+%$/);
  assert.equal(tank.dedup, '1.00x');
  assert.equal(tank.frag, '-', 'zfs-fuse 0.7 has no fragmentation column');
  assert.equal(tank.expandsz, '-');
  assert.match(tank.size as string, /^\d+(\.\d+)?M$/, 'zfs-fuse has no -p: its own units');
  const { datasets } = await okArgs<{ datasets: Record<string, Record<string, string>> }>(root, 'zfs', 'datasets', { zpool: 'tank' });
  assert.deepEqual(Object.keys(datasets), ['tank', 'tank/data']);
  assert.equal(datasets['tank/data']?.mountpoint, `${mnt}/data`);
  expectError(await root.call('zfs', 'datasets', { zpool: 'nopool' }), 404);

  await write(zfs, `${mnt}/data/file`, 'first version');
  assert.deepEqual(await okArgs(root, 'snapshot', 'createsnap', { dataset: 'tank/data', snap: 's1', comment: 'before the edit' }), {
    createsnap: { comment: 'before the edit', dataset: 'tank/data', snap: 's1' },
  });
  assert.equal((await zfs.sh(['zfs', 'get', '-H', '-o', 'value', 'hostadm:comment', 'tank/data@s1'])).trim(), 'before the edit');
  await write(zfs, `${mnt}/data/file`, 'second version');
  await okArgs(root, 'snapshot', 'createsnap', { dataset: 'tank/data', snap: 's2' });
  assert.deepEqual(await okArgs(root, 'snapshot', 'listsnap', { pool: 'tank' }), {
    listsnap: { 'tank/data@s1': { comment: 'before the edit' }, 'tank/data@s2': { comment: '' } },
  });
  expectError(await root.call('snapshot', 'createsnap', { dataset: 'tank/data', snap: 's1' }), 409);

  assert.deepEqual(await okArgs(root, 'snapshot', 'revertsnap', { dataset: 'tank/data', snap: 's1' }), { revertsnap: { dataset: 'tank/data', snap: 's1' } });
  assert.equal(await zfs.sh(['cat', `${mnt}/data/file`]), 'first version');
  assert.deepEqual(Object.keys(((await okArgs(root, 'snapshot', 'listsnap', { pool: 'tank' })) as { listsnap: object }).listsnap), ['tank/data@s1']);

  assert.deepEqual(await okArgs(root, 'snapshot', 'removesnap', { dataset: 'tank/data', snap: 's1' }), { removesnap: { dataset: 'tank/data', snap: 's1' } });
  assert.equal((await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'tank'])).trim(), '');
  expectError(await root.call('snapshot', 'removesnap', { dataset: 'tank/data', snap: 's1' }), 404);
  expectError(await root.call('snapshot', 'revertsnap', { dataset: 'tank/data', snap: 's1' }), 404);
  await refused(root, 'snapshot', 'createsnap', { dataset: 'tank/data', snap: '-r' }, 'snap');
});

test('zfs-fuse: a 5min schedule fires under the test clock and prunes to keep; a scrub is scheduled and runs', async (t) => {
  const env = await setUp(t);
  if (!env) return;
  const { zfs, agent, root } = env;
  await root.request('events', 'subscribe', ['dispatcher']);
  await okArgs(root, 'snapshot', 'createsnap', { dataset: 'tank', snap: 'manual', comment: 'mine' });
  await okArgs(root, 'snapshot', 'cronsnap', { pool: 'tank', keep: '2', frequency: '5min' });
  const taken: string[] = [];
  for (let i = 0; i < 3; i++) {
    agent.clock.advance(300);
    const name = autoSnapshotName(lastOccurrence('5min', agent.clock.now()) as number);
    const event = eventArgs(await root.nextEvent((e) => finishedJob('cronsnap', 'tank')(e) && eventArgs(e).snapshot === `tank@${name}`));
    assert.equal(event.success, 'true', JSON.stringify(event));
    taken.push(name);
  }
  const snaps = (await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-s', 'creation', '-r', 'tank'])).trim().split('\n');
  // The oldest automatic snapshot went (recursively); the manual one stays.
  const expected = ['tank@manual', `tank@${taken[1]}`, `tank/data@${taken[1]}`, `tank@${taken[2]}`, `tank/data@${taken[2]}`];
  assert.deepEqual([...snaps].sort(), expected.sort());
  assert.equal((await zfs.sh(['zfs', 'get', '-H', '-o', 'value', 'hostadm:auto', `tank@${taken[2]}`])).trim(), 'on');

  await okArgs(root, 'snapshot', 'cronscrub', { pool: 'tank', frequency: 'daily@03' });
  assert.deepEqual(await okArgs(root, 'snapshot', 'listcron'), { listcron: { tank: { keep: '2', schedule: '5min', scrub: 'daily@03' } } });
  agent.clock.advance(24 * 3600);
  const scrub = eventArgs(await root.nextEvent(finishedJob('cronscrub', 'tank')));
  assert.equal(scrub.success, 'true', JSON.stringify(scrub));
  assert.equal((scrub.process_details as Record<string, string>)['return_codes/zpool scrub tank'], '0');
  assert.match(await zfs.sh(['zpool', 'status', 'tank']), /scrub (completed|in progress)/);

  const limited = await sessionClientFor(t, agent, 'operator', 'limited');
  expectError(await limited.call('snapshot', 'removesnap', { dataset: 'tank', snap: 'manual' }), 403);
  expectError(await limited.call('snapshot', 'revertsnap', { dataset: 'tank', snap: 'manual' }), 403);
  assert.match(await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', 'tank@manual']), /tank@manual/);
});
