/**
 * The simulated host's ZFS (the `zfs` slice): a FreeBSD install's `zroot` and a data pool `tank`,
 * datasets with sizes in bytes (as `-p` prints them), snapshots oldest first with their comment and
 * whether a schedule took them. Snapshots take space, a rollback brings the dataset's size back and
 * drops newer snapshots, a scrub is remembered. Nothing here runs a host command.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import type { DatasetRecord, PoolRecord, SnapshotInfo, ZfsPort } from '../ports/zfs.ts';

interface SimPool {
  size: number;
  health: string;
  frag: number;
  altroot: string;
  lastScrub: string | null;
}

interface SimDataset {
  refer: number;
  /** A path, `none`, or `-` for a volume. */
  mountpoint: string;
}

interface SimSnapshot {
  dataset: string;
  snap: string;
  comment: string;
  auto: boolean;
  /** The dataset's size when it was taken (a rollback restores it). */
  refer: number;
  /** Space only this snapshot holds. */
  used: number;
}

export interface SimZfs {
  pools: Record<string, SimPool>;
  datasets: Record<string, SimDataset>;
  snapshots: SimSnapshot[];
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

export function seedZfs(): SimZfs {
  const ds = (refer: number, mountpoint: string): SimDataset => ({ refer, mountpoint });
  return {
    pools: {
      zroot: { size: 222 * GiB, health: 'ONLINE', frag: 4, altroot: '-', lastScrub: null },
      tank: { size: 1862 * GiB, health: 'ONLINE', frag: 1, altroot: '-', lastScrub: null },
    },
    datasets: {
      zroot: ds(96 * 1024, '/zroot'),
      'zroot/ROOT': ds(96 * 1024, 'none'),
      'zroot/ROOT/default': ds(9 * GiB, '/'),
      'zroot/tmp': ds(120 * MiB, '/tmp'),
      'zroot/usr': ds(96 * 1024, '/usr'),
      'zroot/usr/home': ds(14 * GiB, '/usr/home'),
      'zroot/var': ds(96 * 1024, '/var'),
      'zroot/var/log': ds(310 * MiB, '/var/log'),
      tank: ds(128 * 1024, '/tank'),
      'tank/media': ds(412 * GiB, '/tank/media'),
      'tank/backup': ds(96 * GiB, '/tank/backup'),
      'tank/vol0': ds(8 * GiB, '-'),
    },
    snapshots: [{ dataset: 'zroot/usr/home', snap: 'before-upgrade', comment: 'before 14.1 upgrade', auto: false, refer: 13 * GiB, used: 220 * MiB }],
  };
}

const notFound = (message: string) => new HostadmError('NOT_FOUND', message);
const poolOf = (name: string) => name.split('/')[0] ?? name;
const within = (dataset: string, root: string) => dataset === root || dataset.startsWith(`${root}/`);

export function simZfs(ctx: SimContext): ZfsPort {
  const slice = ctx.store.slice('zfs', seedZfs);

  function alloc(state: SimZfs, pool: string): number {
    const data = Object.entries(state.datasets).filter(([name]) => poolOf(name) === pool);
    const snaps = state.snapshots.filter((s) => poolOf(s.dataset) === pool);
    return data.reduce((sum, [, d]) => sum + d.refer, 0) + snaps.reduce((sum, s) => sum + s.used, 0);
  }

  function requirePool(state: SimZfs, pool: string): SimPool {
    const found = state.pools[pool];
    if (!found) throw notFound(`pool ${pool} does not exist`);
    return found;
  }

  function requireDataset(state: SimZfs, dataset: string): SimDataset {
    const found = state.datasets[dataset];
    if (!found) throw notFound(`dataset ${dataset} does not exist`);
    return found;
  }

  function snapshotIndex(state: SimZfs, dataset: string, snap: string): number {
    const at = state.snapshots.findIndex((s) => s.dataset === dataset && s.snap === snap);
    if (at < 0) throw notFound(`snapshot ${dataset}@${snap} does not exist`);
    return at;
  }

  const port: ZfsPort = {
    async listPools() {
      const state = slice.get();
      const out: Record<string, PoolRecord> = {};
      for (const [name, pool] of Object.entries(state.pools)) {
        const used = alloc(state, name);
        out[name] = {
          alloc: String(used),
          altroot: pool.altroot,
          cap: `${Math.round((used / pool.size) * 100)}%`,
          dedup: '1.00x',
          expandsz: '-',
          frag: `${pool.frag}%`,
          free: String(pool.size - used),
          health: pool.health,
          size: String(pool.size),
        };
      }
      return out;
    },
    async datasets(pool) {
      const state = slice.get();
      const found = requirePool(state, pool);
      const avail = String(Math.floor((found.size - alloc(state, pool)) * 0.97));
      const out: Record<string, DatasetRecord> = {};
      for (const [name, d] of Object.entries(state.datasets).sort(([a], [b]) => a.localeCompare(b))) {
        if (poolOf(name) !== pool) continue;
        const children = Object.entries(state.datasets).filter(([n]) => within(n, name));
        const snaps = state.snapshots.filter((s) => within(s.dataset, name));
        const used = children.reduce((sum, [, c]) => sum + c.refer, 0) + snaps.reduce((sum, s) => sum + s.used, 0);
        out[name] = { avail, mountpoint: d.mountpoint, refer: String(d.refer), used: String(used) };
      }
      return out;
    },
    async datasetExists(dataset) {
      return Object.hasOwn(slice.get().datasets, dataset);
    },
    async snapshots(pool) {
      const state = slice.get();
      requirePool(state, pool);
      return state.snapshots
        .filter((s) => poolOf(s.dataset) === pool)
        .map((s): SnapshotInfo => ({ dataset: s.dataset, snap: s.snap, comment: s.comment, auto: s.auto }));
    },
    async createSnapshot(dataset, snap, options = {}) {
      slice.update((state) => {
        requireDataset(state, dataset);
        const targets = options.recursive ? Object.keys(state.datasets).filter((n) => within(n, dataset)) : [dataset];
        for (const target of targets) {
          if (state.snapshots.some((s) => s.dataset === target && s.snap === snap))
            throw new HostadmError('CONFLICT', `snapshot ${target}@${snap} already exists`);
        }
        for (const target of targets.sort()) {
          const d = state.datasets[target] as SimDataset;
          state.snapshots.push({
            dataset: target,
            snap,
            comment: options.comment ?? '',
            auto: options.auto ?? false,
            refer: d.refer,
            used: Math.round(d.refer * 0.01),
          });
          // Data keeps changing after a snapshot: the live dataset grows a little.
          d.refer += Math.round(d.refer * 0.002);
        }
      });
    },
    async rollback(dataset, snap) {
      slice.update((state) => {
        const d = requireDataset(state, dataset);
        const at = snapshotIndex(state, dataset, snap);
        d.refer = (state.snapshots[at] as SimSnapshot).refer;
        state.snapshots = state.snapshots.filter((s, i) => s.dataset !== dataset || i <= at);
      });
    },
    async destroySnapshot(dataset, snap, options = {}) {
      slice.update((state) => {
        snapshotIndex(state, dataset, snap);
        state.snapshots = state.snapshots.filter((s) => !(s.snap === snap && (options.recursive ? within(s.dataset, dataset) : s.dataset === dataset)));
      });
    },
    async scrub(pool) {
      slice.update((state) => {
        requirePool(state, pool).lastScrub = new Date().toISOString();
      });
    },
    inJob(job) {
      // Nothing runs; the job's log says what the real host would have done.
      const said = (text: string) => job.log(`[sim] ${text}\n`);
      return {
        ...port,
        createSnapshot: async (dataset, snap, options) => {
          said(`zfs snapshot ${options?.recursive ? '-r ' : ''}${dataset}@${snap}`);
          await port.createSnapshot(dataset, snap, options);
        },
        destroySnapshot: async (dataset, snap, options) => {
          said(`zfs destroy ${options?.recursive ? '-r ' : ''}${dataset}@${snap}`);
          await port.destroySnapshot(dataset, snap, options);
        },
        scrub: async (pool) => {
          said(`zpool scrub ${pool}`);
          await port.scrub(pool);
        },
      };
    },
  };
  return port;
}
