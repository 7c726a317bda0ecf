/**
 * The replication engine's decisions, against a scripted host (a RecordingRunner that also "pipes"):
 * full then incremental, resuming from a remote's receive_resume_token first (OpenZFS), refusing a
 * remote that shares no snapshot, and the helpers that read zfs output. The real thing runs in
 * test/classes/replication-linux-zfs-fuse.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingRunner, type CannedReply } from '../../runner/recording-runner.ts';
import type { PipeOptions, PipeResult } from '../../runner/pipeline.ts';
import type { JobContext } from '../../jobs/types.ts';
import type { ReplicationTask } from '../ports/replication.ts';
import { estimatedSize, sizeInBytes, snapshotsOf, stampOf, zfsReplication } from './zfs-replication.ts';

const TASK: ReplicationTask = { dataset: 'tank/data', host: 'backup.example', port: 2222, user: 'repl', remoteDataset: 'vault/data', frequency: 'manual' };
const SERIES = 'hostadm-repl_backup.example_';

class PipingHost extends RecordingRunner {
  readonly pipes: Array<{ producer: string[]; consumer: string[] }> = [];
  async pipe(producer: readonly string[], consumer: readonly string[], options: PipeOptions = {}): Promise<PipeResult> {
    this.pipes.push({ producer: [...producer], consumer: [...consumer] });
    for (const bytes of [1000, 5000, 10000]) options.onBytes?.(bytes);
    return {
      producer: { argv: [...producer], code: 0, signal: null, stderr: '' },
      consumer: { argv: [...consumer], code: 0, signal: null, stderr: '', stdout: '' },
      bytes: 10000,
      aborted: false,
    };
  }
}

/** The remote command of an ssh argv (after `--`), joined. */
const remoteOf = (argv: readonly string[]) => argv.slice(argv.indexOf('--') + 1).join(' ');
const ssh = (remote: string, reply: Omit<CannedReply, 'match'>): CannedReply => ({ match: (a) => a[0] === 'ssh' && remoteOf(a) === remote, ...reply });

function job(): JobContext & { percents: number[]; text: string } {
  const j = {
    id: 'j1',
    signal: new AbortController().signal,
    percents: [] as number[],
    text: '',
    log: (t: string) => void (j.text += t),
    progress: (p: number) => void j.percents.push(p),
    report: () => undefined,
    run: async () => {
      throw new Error('not used');
    },
  };
  return j;
}

function engine(t: import('node:test').TestContext, host: PipingHost) {
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-repl-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return zfsReplication({ runner: host, dataDir, now: () => new Date('2026-11-25T03:15:00Z') });
}

test('zfs output helpers', () => {
  assert.equal(stampOf(new Date('2026-11-25T03:15:07.123Z')), '20261125T031507Z');
  assert.deepEqual(snapshotsOf('tank/data@a\ntank/data/child@b\ntank/data@c\n', 'tank/data'), ['a', 'c']);
  assert.equal(estimatedSize('full\ttank/data@s\t8512\nsize\t8512\n'), 8512);
  assert.equal(estimatedSize('nothing'), null);
  assert.equal(sizeInBytes('1.5M'), 1572864);
  assert.equal(sizeInBytes('96K'), 98304);
  assert.equal(sizeInBytes('1234'), 1234);
  assert.equal(sizeInBytes('-'), null);
});

test('first run: full send of a new snapshot; progress against the estimate; no resume where ZFS lacks tokens', async (t) => {
  const host = new PipingHost([
    ssh('zfs get -H -o value receive_resume_token vault/data', { code: 2, stderr: "bad property list: invalid property 'receive_resume_token'\n" }),
    ssh('zfs list -H -o name -t snapshot -r vault/data', { code: 1, stderr: "cannot open 'vault/data': dataset does not exist\n" }),
    { match: ['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'tank/data'], stdout: 'tank/data@mine\n' },
    { match: (a) => a[0] === 'zfs' && a[1] === 'snapshot', stdout: '' },
    { match: (a) => a[0] === 'zfs' && a[1] === 'send' && a[2] === '-nP', stdout: 'full\ttank/data@x\t20000\nsize\t20000\n' },
  ]);
  const j = job();
  const outcome = await engine(t, host).run(TASK, j);
  assert.deepEqual(outcome, { success: true, fields: { snapshot: `tank/data@${SERIES}20261125T031500Z`, bytes: '10000', incremental: 'false' } });
  assert.deepEqual(host.pipes[0]?.producer, ['zfs', 'send', `tank/data@${SERIES}20261125T031500Z`]);
  assert.equal(remoteOf(host.pipes[0]?.consumer ?? []), 'zfs recv -F vault/data', 'no -s: this ZFS has no resume tokens');
  assert.deepEqual(j.percents, [5, 25, 50, 100]);
  assert.match(j.text, /Replicating tank\/data: 4\.9K\/19\.5K \(25%\)/);
  assert.ok(!host.calls.some((c) => c[0] === 'zfs' && c[1] === 'destroy' && c.join(' ').includes('mine')), "the user's snapshot stays");
});

test('a token on the remote is resumed first, then the increment from the common snapshot; older series pruned both sides', async (t) => {
  const old = `${SERIES}20261124T031500Z`;
  const older = `${SERIES}20261123T031500Z`;
  const host = new PipingHost([
    ssh('zfs get -H -o value receive_resume_token vault/data', { stdout: '1-abc-def\n' }),
    ssh('zfs list -H -o name -t snapshot -r vault/data', { stdout: `vault/data@${older}\nvault/data@${old}\n` }),
    { match: ['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'tank/data'], stdout: `tank/data@${older}\ntank/data@${old}\n` },
    { match: (a) => a[0] === 'zfs' && (a[1] === 'snapshot' || a[1] === 'destroy'), stdout: '' },
    { match: (a) => a[0] === 'ssh' && remoteOf(a).startsWith('zfs destroy'), stdout: '' },
    { match: (a) => a[0] === 'zfs' && a[1] === 'send' && a[2] === '-nP', stdout: 'size\t3000\n' },
  ]);
  const outcome = await engine(t, host).run(TASK, job());
  assert.equal(outcome.success, true);
  assert.deepEqual(
    host.pipes.map((p) => [p.producer.join(' '), remoteOf(p.consumer)]),
    [
      ['zfs send -t 1-abc-def', 'zfs recv -s vault/data'],
      [`zfs send -i tank/data@${old} tank/data@${SERIES}20261125T031500Z`, 'zfs recv -s -F vault/data'],
    ],
  );
  const destroyed = host.calls.filter((c) => c.includes('destroy')).map((c) => (c[0] === 'ssh' ? `remote ${remoteOf(c)}` : c.join(' ')));
  assert.deepEqual(destroyed, [
    `zfs destroy tank/data@${older}`,
    `zfs destroy tank/data@${old}`,
    `remote zfs destroy vault/data@${older}`,
    `remote zfs destroy vault/data@${old}`,
  ]);
  // Every ssh uses the agent's key only and never asks.
  for (const c of host.calls.filter((c) => c[0] === 'ssh')) {
    assert.ok(c.includes('BatchMode=yes') && c.includes('-p') && c.includes('2222') && c.includes('repl@backup.example'), c.join(' '));
  }
});

test('a remote dataset that shares no snapshot of the series is not overwritten: the run fails asking for initreplication', async (t) => {
  const host = new PipingHost([
    ssh('zfs get -H -o value receive_resume_token vault/data', { stdout: '-\n' }),
    ssh('zfs list -H -o name -t snapshot -r vault/data', { stdout: 'vault/data@someone-elses\n' }),
    { match: ['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'tank/data'], stdout: '' },
  ]);
  const outcome = await engine(t, host).run(TASK, job());
  assert.equal(outcome.success, false);
  assert.match(outcome.reason ?? '', /holds no snapshot this task sent; run initreplication/);
  assert.equal(host.pipes.length, 0);
  assert.ok(!host.calls.some((c) => c[1] === 'snapshot'), 'no snapshot taken');
});
