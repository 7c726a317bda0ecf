/**
 * `admin/zfs` on the simulated FreeBSD host, over a real WebSocket: pools and datasets in the spec's
 * shapes (every field a string), a missing pool a 404, bad pool names a 400 naming `zpool`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { BAD_POOLS, okArgs, refused } from './zfs-support.ts';

const POOL_FIELDS = ['alloc', 'altroot', 'cap', 'dedup', 'expandsz', 'frag', 'free', 'health', 'size'];

test('list_pools: zroot and tank, every spec field a string; datasets keyed by path', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  const { list_pools } = await okArgs<{ list_pools: Record<string, Record<string, unknown>> }>(admin, 'zfs', 'list_pools');
  assert.deepEqual(Object.keys(list_pools).sort(), ['tank', 'zroot']);
  for (const pool of Object.values(list_pools)) {
    assert.deepEqual(Object.keys(pool).sort(), POOL_FIELDS);
    for (const v of Object.values(pool)) assert.equal(typeof v, 'string');
    assert.equal(pool.health, 'ONLINE');
    assert.match(String(pool.cap), /^\d+%$/);
    assert.equal(Number(pool.alloc) + Number(pool.free), Number(pool.size));
  }
  const { datasets } = await okArgs<{ datasets: Record<string, Record<string, string>> }>(admin, 'zfs', 'datasets', { zpool: 'zroot' });
  assert.deepEqual(datasets['zroot/usr/home'] && Object.keys(datasets['zroot/usr/home']).sort(), ['avail', 'mountpoint', 'refer', 'used']);
  assert.equal(datasets['zroot/ROOT/default']?.mountpoint, '/');
  assert.equal(datasets['zroot/ROOT']?.mountpoint, 'none');
  assert.ok(Object.keys(datasets).every((name) => name === 'zroot' || name.startsWith('zroot/')));
  // A parent's `used` includes its children.
  assert.ok(Number(datasets['zroot/usr']?.used) >= Number(datasets['zroot/usr/home']?.used));
  const tank = (await okArgs<{ datasets: Record<string, Record<string, string>> }>(admin, 'zfs', 'datasets', { zpool: 'tank' })).datasets;
  assert.equal(tank['tank/vol0']?.mountpoint, '-', 'a volume has no mount point');

  const operator = await clientFor(t, agent, 'operator');
  await okArgs(operator, 'zfs', 'list_pools');
});

test('datasets: a pool that does not exist is a 404; names ZFS refuses are a 400 naming zpool', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const err = expectError(await admin.call('zfs', 'datasets', { zpool: 'nopool' }), 404);
  assert.match(err.message, /nopool/);
  for (const zpool of BAD_POOLS) await refused(admin, 'zfs', 'datasets', { zpool }, 'zpool');
  await refused(admin, 'zfs', 'datasets', {}, 'zpool');
});
