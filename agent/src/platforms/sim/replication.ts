/**
 * Replication on the simulated host (the `replication` slice): a simulated remote per
 * `user@host:port` that holds what was sent to it. Adding a task "installs the key" (any non-empty
 * password works; a host under `.invalid` cannot be reached, to show the failure); a run sends the
 * dataset's size the first time and what changed since after, with progress at each quarter, exactly
 * as the real engine reports it; initreplication empties the remote dataset. No host command runs.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import type { ReplicationEngine, ReplicationTask } from '../ports/replication.ts';
import { seedZfs } from './zfs.ts';
import { seriesOf, stampOf } from '../common/zfs-replication.ts';

interface SimRemoteDataset {
  snapshots: string[];
  /** The local dataset's size at the last run, for the next increment. */
  sentRefer: number;
}

export interface SimReplication {
  /** `user@host:port` → whether the agent's key is installed there, and the datasets received. */
  remotes: Record<string, { keyInstalled: boolean; datasets: Record<string, SimRemoteDataset> }>;
}

const remoteKey = (t: ReplicationTask) => `${t.user}@${t.host}:${t.port}`;

function reachable(task: ReplicationTask): void {
  if (task.host.endsWith('.invalid')) {
    throw new HostadmError('HOST_ERROR', `ssh to ${remoteKey(task)} failed: ssh: Could not resolve hostname ${task.host}: Name or service not known`);
  }
}

export function simReplication(ctx: SimContext): ReplicationEngine {
  const slice = ctx.store.slice<SimReplication>('replication', () => ({ remotes: {} }));
  const zfs = ctx.store.slice('zfs', seedZfs);
  return {
    async install(task, password) {
      reachable(task);
      if (password.length === 0) throw new HostadmError('HOST_ERROR', `installing the replication key for ${remoteKey(task)}: Permission denied (password)`);
      slice.update((s) => {
        const remote = (s.remotes[remoteKey(task)] ??= { keyInstalled: false, datasets: {} });
        remote.keyInstalled = true;
      });
    },
    async run(task, job) {
      reachable(task);
      const remote = slice.get().remotes[remoteKey(task)];
      if (!remote?.keyInstalled) return { success: false, reason: `the replication key is not installed on ${remoteKey(task)}; add the task again` };
      const dataset = zfs.get().datasets[task.dataset];
      if (!dataset) return { success: false, reason: `${task.dataset}: dataset does not exist` };
      const previous = remote.datasets[task.remoteDataset];
      const total = previous ? Math.max(4096, Math.abs(dataset.refer - previous.sentRefer)) : dataset.refer;
      const name = `${seriesOf(task.host)}${stampOf(new Date())}`;
      job.log(previous ? `incremental from ${previous.snapshots.at(-1)} to ${name}\n` : `first run: full copy of ${task.dataset}@${name}\n`);
      for (const percent of [25, 50, 75, 100]) {
        if (job.signal.aborted) return { success: false, reason: 'cancelled' };
        job.progress(percent);
        job.log(`Replicating ${task.dataset}: ${Math.round((total * percent) / 100)}/${total} (${percent}%)\n`);
      }
      slice.update((s) => {
        const target = s.remotes[remoteKey(task)];
        if (target) target.datasets[task.remoteDataset] = { snapshots: [name], sentRefer: dataset.refer };
      });
      return { success: true, fields: { snapshot: `${task.dataset}@${name}`, bytes: String(total), incremental: previous ? 'true' : 'false' } };
    },
    async reset(task) {
      reachable(task);
      slice.update((s) => {
        delete s.remotes[remoteKey(task)]?.datasets[task.remoteDataset];
      });
    },
    async forget() {
      // Nothing local to drop: the simulated remote keeps what it received, as a real one does.
    },
  };
}
