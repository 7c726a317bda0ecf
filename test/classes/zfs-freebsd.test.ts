/**
 * FreeBSD zfs and snapshot: the scripted-output parsers on the zpool-list(8)/zfs-list(8) examples
 * FreeBSD ships (test/fixtures/freebsd/zfs, sources in zfs.source.md), then every action through a real
 * agent on the FreeBSD platform whose runner answers like that host: the argv each action runs is
 * compared with the checked-in snapshot. addreplication fails here at the engine's first step (no ssh-keygen on the scripted host): 500, nothing stored.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { datasetRecords, poolRecords } from '@hostadm/agent/platforms/common/parse/zfs.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';
import { expectError, snapshotArgv } from './services-support.ts';
import { okArgs } from './zfs-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/zfs/${name}`, import.meta.url), 'utf8');

test('the zpool-list(8) and zfs-list(8) examples parse into the spec records; a FAULTED pool reads as -', () => {
  const pools = poolRecords(fixture('zpool-list-H.txt'), new Set());
  assert.deepEqual(pools.pool, {
    alloc: '473G',
    altroot: '-',
    cap: '17%',
    dedup: '1.00x',
    expandsz: '-',
    frag: '33%',
    free: '2.24T',
    health: 'ONLINE',
    size: '2.70T',
  });
  assert.deepEqual(pools.zion, { alloc: '-', altroot: '-', cap: '-', dedup: '-', expandsz: '-', frag: '-', free: '-', health: 'FAULTED', size: '-' });
  const datasets = datasetRecords(fixture('zfs-list-H.txt'), new Set());
  assert.deepEqual(Object.keys(datasets), ['pool', 'pool/home', 'pool/home/anne', 'pool/home/bob']);
  assert.deepEqual(datasets['pool/home/bob'], { avail: '457G', mountpoint: '/export/home/bob', refer: '276K', used: '276K' });
});

/** Answers as the FreeBSD host of the fixtures would. */
function freebsdZfsHost(): RecordingRunner {
  const is =
    (...words: string[]) =>
    (argv: readonly string[]) =>
      words.every((w, i) => argv[i] === w);
  return new RecordingRunner([
    { match: is('zpool', 'list', '-H', '-p'), stdout: fixture('zpool-list-H.txt') },
    { match: (a) => is('zfs', 'list', '-H', '-p')(a) && a.at(-1) === 'pool', stdout: fixture('zfs-list-H.txt') },
    { match: (a) => is('zfs', 'list', '-H', '-p')(a) && a.at(-1) === 'nopool', stderr: "cannot open 'nopool': dataset does not exist\n", code: 1 },
    {
      match: (a) => is('zfs', 'list', '-H', '-o', 'name,hostadm:comment,hostadm:auto')(a),
      stdout: 'pool/home@s1\tbefore the move\t-\npool@auto-2026-01-01-00-00-00\t-\ton\n',
    },
    { match: is('zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', 'pool/home@s1'), stdout: 'pool/home@s1\n' },
    {
      match: is('zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', 'pool/home@gone'),
      stderr: "cannot open 'pool/home@gone': dataset does not exist\n",
      code: 1,
    },
    { match: is('zfs', 'rollback', '-r', 'pool/home@gone'), stderr: "cannot open 'pool/home@gone': dataset does not exist\n", code: 1 },
    { match: is('zfs', 'snapshot'), stdout: '' },
    { match: is('zfs', 'rollback'), stdout: '' },
    { match: is('zfs', 'destroy'), stdout: '' },
  ]);
}

test('every zfs and snapshot action on FreeBSD: replies, 404s for what is not there, and the argv each runs', async (t) => {
  const runner = freebsdZfsHost();
  // No scheduler tick during the test: only the actions' own commands are recorded.
  const agent = await startTestAgent({ platform: 'freebsd', runner, config: { schedulerTickMs: 3_600_000 } });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  const calls: Record<string, string[][]> = {};
  const step = async (name: string, run: () => Promise<unknown>) => {
    const before = runner.calls.length;
    await run();
    calls[name] = runner.calls.slice(before);
  };
  await step('list_pools', async () =>
    assert.equal(((await okArgs(root, 'zfs', 'list_pools')).list_pools as Record<string, { health: string }>).zion?.health, 'FAULTED'),
  );
  await step('datasets', async () => assert.equal(Object.keys((await okArgs(root, 'zfs', 'datasets', { zpool: 'pool' })).datasets as object).length, 4));
  await step('datasets (missing pool)', async () => expectError(await root.call('zfs', 'datasets', { zpool: 'nopool' }), 404));
  await step('createsnap', async () => okArgs(root, 'snapshot', 'createsnap', { dataset: 'pool/home', snap: 's2', comment: 'a comment with spaces' }));
  await step('listsnap', async () =>
    assert.deepEqual((await okArgs(root, 'snapshot', 'listsnap', { pool: 'pool' })).listsnap, {
      'pool/home@s1': { comment: 'before the move' },
      'pool@auto-2026-01-01-00-00-00': { comment: '' },
    }),
  );
  await step('revertsnap', async () => okArgs(root, 'snapshot', 'revertsnap', { dataset: 'pool/home', snap: 's1' }));
  await step('revertsnap (missing)', async () => expectError(await root.call('snapshot', 'revertsnap', { dataset: 'pool/home', snap: 'gone' }), 404));
  await step('removesnap', async () => okArgs(root, 'snapshot', 'removesnap', { dataset: 'pool/home', snap: 's1' }));
  await step('removesnap (missing)', async () => expectError(await root.call('snapshot', 'removesnap', { dataset: 'pool/home', snap: 'gone' }), 404));
  await step('cronsnap', async () => okArgs(root, 'snapshot', 'cronsnap', { pool: 'pool', keep: '3', frequency: 'daily@01' }));
  await step('cronscrub', async () => okArgs(root, 'snapshot', 'cronscrub', { pool: 'tank', frequency: 'monthly@31@04' }));
  await step('listcron', async () =>
    assert.deepEqual((await okArgs(root, 'snapshot', 'listcron')).listcron, {
      pool: { keep: '3', schedule: 'daily@01' },
      tank: { keep: '0', schedule: 'none', scrub: 'monthly@31@04' },
    }),
  );
  await step('settings', async () => okArgs(root, 'snapshot', 'settings'));
  await step('savesettings', async () => okArgs(root, 'snapshot', 'savesettings', { recursive: 'false' }));
  // The engine's first step makes the agent's key (ssh-keygen, into the test's random data dir): this
  // scripted host has no ssh-keygen, so the task is refused and not stored. (Its argv is in zfs-replication.test.ts.)
  expectError(
    await root.call('snapshot', 'addreplication', {
      host: '192.0.2.7',
      port: 22,
      user: 'bk',
      password: 'x',
      dataset: 'pool/home',
      remotedataset: 'vault/home',
      frequency: '2',
    }),
    500,
  );
  await step('listreplication', async () => assert.deepEqual((await okArgs(root, 'snapshot', 'listreplication')).listreplication, {}));
  snapshotArgv(t, calls);
});
