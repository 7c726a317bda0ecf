/**
 * The ZFS port over the `zpool` and `zfs` command line, which FreeBSD and Linux share (FreeBSD 13/14
 * and Linux OpenZFS 2.x, and zfs-fuse 0.7 on Linux). Lists use scripted output (`-H -p -o <columns>`)
 * read by column name; where the tool refuses `-p` or a column, that is remembered and the command
 * asked again without it (parse/zfs.ts says how such columns read). Failures that mean "no such
 * pool, dataset or snapshot" are NOT_FOUND, "already exists" CONFLICT, anything else HOST_ERROR.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner, type RunResult } from '../../runner/runner.ts';
import type { JobContext } from '../../jobs/types.ts';
import { AUTO_PROPERTY, COMMENT_PROPERTY, type CreateSnapshot, type SnapshotInfo, type ZfsPort } from '../ports/zfs.ts';
import { DATASET_COLUMNS, POOL_COLUMNS, datasetRecords, parseScripted, poolRecords, refusedColumn, refusedParsable } from './parse/zfs.ts';

type Run = (argv: readonly string[]) => Promise<RunResult>;

const TIMEOUT_MS = 60_000;

/** What this host's tools turned out not to support, learnt once per agent. */
interface ToolQuirks {
  parsable: Record<'zpool' | 'zfs', boolean>;
  missing: Record<'zpool' | 'zfs', Set<string>>;
}

const NOT_FOUND = /does not exist|no such pool|could not find any snapshots|no such dataset/i;

function failure(what: string, result: RunResult): HostadmError {
  const said = (result.stderr.trim() || result.stdout.trim()).split('\n')[0] ?? '';
  if (NOT_FOUND.test(said)) return new HostadmError('NOT_FOUND', `${what}: ${said}`);
  if (/already exists/.test(said)) return new HostadmError('CONFLICT', `${what}: ${said}`);
  return new HostadmError('HOST_ERROR', `${what}: ${failureText(result.argv.join(' '), result)}`);
}

export function zfsCli(runner: CommandRunner): ZfsPort {
  const quirks: ToolQuirks = { parsable: { zpool: true, zfs: true }, missing: { zpool: new Set(), zfs: new Set() } };
  return zfsOver((argv) => runner.run(argv, { timeoutMs: TIMEOUT_MS }), quirks);
}

function zfsOver(run: Run, quirks: ToolQuirks): ZfsPort {
  /** `<tool> list -H [-p] -o <columns> <rest>`, retried without what the tool refuses. */
  async function list(tool: 'zpool' | 'zfs', columns: readonly string[], rest: readonly string[], what: string): Promise<string> {
    for (let attempt = 0; attempt <= columns.length + 1; attempt++) {
      // What this attempt asks for (another listing may learn a quirk meanwhile).
      const asked = columns.filter((c) => !quirks.missing[tool].has(c));
      const parsable = quirks.parsable[tool];
      const result = await run([tool, 'list', '-H', ...(parsable ? ['-p'] : []), '-o', asked.join(','), ...rest]);
      if (result.code === 0) return result.stdout;
      // Where the complaint lands differs between versions (and usage goes with it): read both streams.
      const said = `${result.stderr}\n${result.stdout}`;
      if (parsable && refusedParsable(said)) {
        quirks.parsable[tool] = false;
        continue;
      }
      const column = refusedColumn(said);
      if (column !== null && column !== 'name' && asked.includes(column)) {
        quirks.missing[tool].add(column);
        continue;
      }
      throw failure(what, result);
    }
    throw new HostadmError('HOST_ERROR', `${what}: ${tool} refused every form of the listing`);
  }

  async function must(argv: readonly string[], what: string): Promise<void> {
    const result = await run(argv);
    if (result.code !== 0) throw failure(what, result);
  }

  async function snapshotExists(name: string): Promise<boolean> {
    const result = await run(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', name]);
    if (result.code === 0) return true;
    if (NOT_FOUND.test(result.stderr)) return false;
    throw failure(`checking snapshot ${name}`, result);
  }

  return {
    async listPools() {
      const result = await list('zpool', POOL_COLUMNS, [], 'listing pools');
      return poolRecords(result, quirks.missing.zpool);
    },
    async datasets(pool) {
      const out = await list('zfs', DATASET_COLUMNS, ['-t', 'filesystem,volume', '-r', pool], `listing the datasets of ${pool}`);
      return datasetRecords(out, quirks.missing.zfs);
    },
    async datasetExists(dataset) {
      const result = await run(['zfs', 'list', '-H', '-o', 'name', '-t', 'filesystem,volume', dataset]);
      if (result.code === 0) return true;
      if (NOT_FOUND.test(result.stderr)) return false;
      throw failure(`checking dataset ${dataset}`, result);
    },
    async snapshots(pool) {
      const columns = ['name', COMMENT_PROPERTY, AUTO_PROPERTY] as const;
      // No -p: nothing numeric is read, and the names sort by creation (-s creation) in every version.
      const result = await run(['zfs', 'list', '-H', '-o', columns.join(','), '-t', 'snapshot', '-s', 'creation', '-r', pool]);
      if (result.code !== 0) throw failure(`listing the snapshots of ${pool}`, result);
      return parseScripted(result.stdout, columns).map((row): SnapshotInfo => {
        const [dataset = '', snap = ''] = row.name.split('@');
        const comment = row[COMMENT_PROPERTY];
        return { dataset, snap, comment: comment === '-' ? '' : comment, auto: row[AUTO_PROPERTY] === 'on' };
      });
    },
    async createSnapshot(dataset, snap, options: CreateSnapshot = {}) {
      const props = [...(options.auto ? ['-o', `${AUTO_PROPERTY}=on`] : []), ...(options.comment ? ['-o', `${COMMENT_PROPERTY}=${options.comment}`] : [])];
      await must(['zfs', 'snapshot', ...(options.recursive ? ['-r'] : []), ...props, `${dataset}@${snap}`], `creating snapshot ${dataset}@${snap}`);
    },
    async rollback(dataset, snap) {
      await must(['zfs', 'rollback', '-r', `${dataset}@${snap}`], `reverting ${dataset} to ${snap}`);
    },
    async destroySnapshot(dataset, snap, options = {}) {
      const name = `${dataset}@${snap}`;
      // Some versions say nothing when asked to destroy a snapshot that is not there; ask first.
      if (!(await snapshotExists(name))) throw new HostadmError('NOT_FOUND', `removing snapshot ${name}: it does not exist`);
      await must(['zfs', 'destroy', ...(options.recursive ? ['-r'] : []), name], `removing snapshot ${name}`);
    },
    async scrub(pool) {
      await must(['zpool', 'scrub', pool], `scrubbing ${pool}`);
    },
    inJob(job: JobContext) {
      return zfsOver((argv) => job.run(argv, { timeoutMs: TIMEOUT_MS }), quirks);
    },
  };
}
