/**
 * The replication engine behind `snapshot`'s replication actions, for any host with the zfs command
 * line (FreeBSD, Linux OpenZFS, zfs-fuse): `zfs send | ssh … zfs recv` as two processes the agent
 * joins (runner.pipe, no shell), over the agent's own key (replication-ssh.ts).
 *
 * Each run snapshots the dataset as `<ds>@hostadm-repl_<host>_<UTC stamp>` (one series per remote, so
 * two tasks of a dataset never prune each other's base), sends it whole the first time and as an
 * increment from the newest snapshot of the series both sides hold afterwards, then keeps only the
 * newest of the series on both sides (the user's own snapshots are never touched). Where ZFS has
 * `receive_resume_token` the receive is resumable (`zfs recv -s`), and a run that finds a token on
 * the remote first finishes that transfer (`zfs send -t`). Progress is the bytes passed against
 * `zfs send -nP`'s estimate (or the snapshot's `referenced` where send has no -n, as in zfs-fuse),
 * logged as `Replicating <ds>: <cur>/<tot> (p%)` lines as lpreserver printed them.
 */
import { join } from 'node:path';
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner } from '../../runner/runner.ts';
import type { PipeResult } from '../../runner/pipeline.ts';
import type { JobContext } from '../../jobs/types.ts';
import type { ReplicationEngine, ReplicationTask } from '../ports/replication.ts';
import { ReplicationSsh } from './replication-ssh.ts';

const QUICK = { timeoutMs: 120_000 };
const SERIES = 'hostadm-repl_';
const MISSING = /does not exist|no such (pool|dataset)/i;
const NO_RESUME = /invalid property|bad property/i;

/** The snapshot series of one remote host: `hostadm-repl_<host>_`. */
export function seriesOf(host: string): string {
  return `${SERIES}${host}_`;
}

/** `20261125T031500Z`, sortable as text. */
export function stampOf(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** Snapshot names (after `@`) of `dataset` itself, from `zfs list -H -o name -t snapshot -r` output. */
export function snapshotsOf(listing: string, dataset: string): string[] {
  return listing
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith(`${dataset}@`))
    .map((l) => l.slice(dataset.length + 1));
}

/** `size\t<bytes>` from `zfs send -nP` (the last one, for a multi-snapshot stream). */
export function estimatedSize(output: string): number | null {
  const sizes = [...output.matchAll(/^size\s+(\d+)\s*$/gm)].map((m) => Number(m[1]));
  return sizes.length > 0 ? (sizes.at(-1) ?? null) : null;
}

/** `1234`, `1.21M`, `96K` as zfs prints sizes, in bytes; null for anything else. */
export function sizeInBytes(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)([BKMGTPE]?)$/i.exec(text);
  if (!m) return null;
  const n = Number(m[1]) * 1024 ** 'BKMGTPE'.indexOf((m[2] || 'B').toUpperCase());
  return n > 0 ? Math.round(n) : null;
}

function human(bytes: number): string {
  const units = ['B', 'K', 'M', 'G', 'T'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)}${units[u]}`;
}

function pipeFailure(result: PipeResult): string {
  const side = result.consumer.code !== 0 ? result.consumer : result.producer;
  const said = side.stderr.trim().split('\n').filter(Boolean).at(-1) ?? '';
  const how = side.signal ? `was killed by ${side.signal}` : `exited with code ${side.code}`;
  return `${side.argv.includes('recv') ? 'zfs recv on the remote' : 'zfs send'} ${how}${said ? `: ${said}` : ''}`;
}

export interface ZfsReplicationOptions {
  runner: CommandRunner;
  /** The agent's data directory; the engine keeps its key and known_hosts in `replication/` there. */
  dataDir: string;
  now?: () => Date;
}

export function zfsReplication(options: ZfsReplicationOptions): ReplicationEngine {
  const { runner } = options;
  const now = options.now ?? (() => new Date());
  const ssh = new ReplicationSsh(runner, join(options.dataDir, 'replication'));
  const zfs = async (argv: readonly string[], what: string, signal?: AbortSignal): Promise<string> => {
    const result = await runner.run(['zfs', ...argv], { ...QUICK, signal });
    if (result.code !== 0) throw new HostadmError('HOST_ERROR', `${what}: ${failureText(`zfs ${argv[0] ?? ''}`, result)}`);
    return result.stdout;
  };
  const remoteZfs = async (task: ReplicationTask, argv: readonly string[], what: string, signal?: AbortSignal) => {
    const result = await ssh.remote(task, ['zfs', ...argv], signal);
    if (result.code === 255)
      throw new HostadmError('HOST_ERROR', `${what}: ssh to ${task.user}@${task.host}:${task.port} failed: ${result.stderr.trim().split('\n').at(-1) ?? ''}`);
    return result;
  };
  const localSeries = async (task: ReplicationTask, signal?: AbortSignal) =>
    snapshotsOf(await zfs(['list', '-H', '-o', 'name', '-t', 'snapshot', '-r', task.dataset], `listing snapshots of ${task.dataset}`, signal), task.dataset)
      .filter((s) => s.startsWith(seriesOf(task.host)))
      .sort();
  const remoteSnapshots = async (task: ReplicationTask, signal?: AbortSignal): Promise<string[] | null> => {
    const result = await remoteZfs(task, ['list', '-H', '-o', 'name', '-t', 'snapshot', '-r', task.remoteDataset], 'listing the remote snapshots', signal);
    if (result.code !== 0 && MISSING.test(result.stderr)) return null;
    if (result.code !== 0) throw new HostadmError('HOST_ERROR', `listing the remote snapshots: ${failureText('zfs list', result)}`);
    return snapshotsOf(result.stdout, task.remoteDataset);
  };
  /** The remote's resume token (null: none), and whether its ZFS has resumable receives at all. */
  const resumeState = async (task: ReplicationTask, signal?: AbortSignal): Promise<{ token: string | null; resumable: boolean }> => {
    const result = await remoteZfs(task, ['get', '-H', '-o', 'value', 'receive_resume_token', task.remoteDataset], 'reading the resume token', signal);
    if (result.code !== 0) return { token: null, resumable: !NO_RESUME.test(result.stderr) };
    const value = result.stdout.trim();
    return { token: value && value !== '-' ? value : null, resumable: true };
  };
  const estimate = async (sendArgs: readonly string[], snapshot: string, signal?: AbortSignal): Promise<number | null> => {
    const dry = await runner.run(['zfs', 'send', '-nP', ...sendArgs], { ...QUICK, signal });
    if (dry.code === 0) return estimatedSize(dry.stdout) ?? estimatedSize(dry.stderr);
    // zfs-fuse has neither `send -n` nor `get -p`: its own units (`1.21M`) then.
    for (const parsable of [['-p'], []]) {
      const referenced = await runner.run(['zfs', 'get', '-H', ...parsable, '-o', 'value', 'referenced', snapshot], { ...QUICK, signal });
      const n = referenced.code === 0 ? sizeInBytes(referenced.stdout.trim()) : null;
      if (n !== null) return n;
    }
    return null;
  };
  const transfer = async (task: ReplicationTask, job: JobContext, sendArgs: string[], recvArgs: string[], total: number | null): Promise<PipeResult> => {
    if (!runner.pipe) throw unsupported('this agent runner cannot join two commands; replication needs a real host runner');
    let lastPercent = -1;
    const report = (bytes: number) => {
      const percent = total ? Math.min(99, Math.floor((bytes * 100) / total)) : 0;
      if (total && percent === lastPercent) return;
      lastPercent = percent;
      if (total) job.progress(percent);
      job.log(`Replicating ${task.dataset}: ${human(bytes)}/${total ? human(total) : '?'}${total ? ` (${percent}%)` : ''}\n`);
    };
    job.log(`zfs send ${sendArgs.join(' ')} | ssh ${task.user}@${task.host} zfs recv ${recvArgs.join(' ')}\n`);
    return runner.pipe(['zfs', 'send', ...sendArgs], ssh.command(task, ['zfs', 'recv', ...recvArgs]), {
      signal: job.signal,
      onBytes: report,
      progressBytes: total ? Math.max(64 * 1024, Math.floor(total / 50)) : 1024 * 1024,
    });
  };

  return {
    async install(task, password, signal) {
      await ssh.installKey(task, password, signal);
      // The key now works without a password, and the remote can receive: zfs is there, and the
      // receiving dataset's parent exists (zfs recv creates only the last component).
      const parent = task.remoteDataset.includes('/') ? task.remoteDataset.slice(0, task.remoteDataset.lastIndexOf('/')) : task.remoteDataset;
      const check = await remoteZfs(task, ['list', '-H', '-o', 'name', parent], 'checking the remote', signal);
      if (check.code !== 0) {
        throw new HostadmError(
          'HOST_ERROR',
          `the remote cannot receive into ${task.remoteDataset}: ${check.stderr.trim().split('\n').at(-1) ?? failureText('zfs list', check)}`,
        );
      }
    },

    async run(task, job) {
      const { signal } = job;
      const { token, resumable } = await resumeState(task, signal);
      const recv = (extra: string[] = []) => [...(resumable ? ['-s'] : []), ...extra, task.remoteDataset];
      if (token) {
        job.log(`resuming the interrupted transfer to ${task.remoteDataset}\n`);
        const resumed = await transfer(task, job, ['-t', token], recv(), null);
        if (resumed.aborted) return { success: false, reason: 'cancelled; the next run resumes it' };
        if (resumed.producer.code !== 0 || resumed.consumer.code !== 0) return { success: false, reason: `resuming: ${pipeFailure(resumed)}` };
      }
      const remote = await remoteSnapshots(task, signal);
      const local = await localSeries(task, signal);
      const base = [...local].reverse().find((s) => remote?.includes(s));
      if (!base && remote !== null) {
        return {
          success: false,
          reason: `${task.host}:${task.remoteDataset} exists but holds no snapshot this task sent; run initreplication to start again with a full copy`,
        };
      }
      let name = `${seriesOf(task.host)}${stampOf(now())}`;
      if (local.includes(name)) name = `${name}-${local.length}`;
      const snapshot = `${task.dataset}@${name}`;
      await zfs(['snapshot', snapshot], `snapshotting ${task.dataset}`, signal);
      const sendArgs = base ? ['-i', `${task.dataset}@${base}`, snapshot] : [snapshot];
      job.log(base ? `incremental from ${base} to ${name}\n` : `first run: full copy of ${snapshot}\n`);
      const total = await estimate(sendArgs, snapshot, signal);
      // -F: the remote copy is rolled back to the base first, so a change made there cannot block the receive.
      const sent = await transfer(task, job, sendArgs, recv(['-F']), total);
      if (sent.aborted) return { success: false, reason: resumable ? 'cancelled; the next run resumes it' : 'cancelled' };
      if (sent.producer.code !== 0 || sent.consumer.code !== 0) return { success: false, reason: pipeFailure(sent) };
      job.progress(100);
      job.log(`Replicating ${task.dataset}: ${human(sent.bytes)}/${human(sent.bytes)} (100%)\n`);
      // Older snapshots of this series are no longer anyone's base, here or there.
      for (const old of local.filter((s) => s < name)) await zfs(['destroy', `${task.dataset}@${old}`], `removing ${old}`, signal);
      for (const old of (remote ?? []).filter((s) => s.startsWith(seriesOf(task.host)) && s < name)) {
        await remoteZfs(task, ['destroy', `${task.remoteDataset}@${old}`], `removing ${old} on the remote`, signal);
      }
      return { success: true, fields: { snapshot, bytes: String(sent.bytes), incremental: base ? 'true' : 'false' } };
    },

    async reset(task) {
      // A partly received stream first (only where ZFS keeps them), then the dataset and its snapshots.
      // `-f` unmounts it even when busy: starting over is what initreplication asks for, and a received
      // dataset is mounted (zfs-fuse in particular reports it busy for a while after a receive).
      await remoteZfs(task, ['recv', '-A', task.remoteDataset], 'abandoning a partial receive');
      let destroyed = await remoteZfs(task, ['destroy', '-r', '-f', task.remoteDataset], `destroying ${task.remoteDataset} on ${task.host}`);
      // A dataset that has just received a stream can stay busy for a moment: a few more tries, a second apart.
      for (let attempt = 0; attempt < 5 && destroyed.code !== 0 && /busy/i.test(destroyed.stderr); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        destroyed = await remoteZfs(task, ['destroy', '-r', '-f', task.remoteDataset], `destroying ${task.remoteDataset} on ${task.host}`);
      }
      if (destroyed.code !== 0 && !MISSING.test(destroyed.stderr)) {
        throw new HostadmError('HOST_ERROR', `destroying ${task.remoteDataset} on ${task.host}: ${failureText('zfs destroy', destroyed)}`);
      }
    },

    async forget(task) {
      // The task's own snapshots go; the replicated data and the key on the remote stay (other tasks use the key).
      for (const s of await localSeries(task)) await zfs(['destroy', `${task.dataset}@${s}`], `removing ${s}`);
    },
  };
}
