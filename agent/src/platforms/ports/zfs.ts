/**
 * The `zfs` port: pools, datasets and snapshots, for both the `zfs` class and the `snapshot` service
 * built on it. FreeBSD and Linux share one implementation over the `zpool`/`zfs` command line
 * (platforms/common/zfs-cli.ts); sim keeps a model in its state. Names reaching it were checked by the
 * contracts against ZFS's naming rules. Something that does not exist is NOT_FOUND, never a success.
 */
import type { z } from 'zod';
import type { datasetRecord, poolRecord } from '@hostadm/shared/api/zfs.ts';
import type { JobContext } from '../../jobs/types.ts';

export type PoolRecord = z.infer<ReturnType<typeof poolRecord>>;
export type DatasetRecord = z.infer<ReturnType<typeof datasetRecord>>;

/** The ZFS user properties hostadm keeps on its snapshots. */
export const COMMENT_PROPERTY = 'hostadm:comment';
/** `on` on snapshots the scheduler took; only these are ever pruned. */
export const AUTO_PROPERTY = 'hostadm:auto';

export interface SnapshotInfo {
  dataset: string;
  snap: string;
  /** `''` when none was given. */
  comment: string;
  /** Taken by the agent's schedule (AUTO_PROPERTY), not by a user. */
  auto: boolean;
}

export interface CreateSnapshot {
  comment?: string;
  auto?: boolean;
  /** Child datasets too (`zfs snapshot -r`). */
  recursive?: boolean;
}

export interface ZfsPort {
  /** Every imported pool, keyed by name, each field a string (`-` where the tool has no such column). */
  listPools(): Promise<Record<string, PoolRecord>>;
  /** Filesystems and volumes of `pool`, keyed by path. NOT_FOUND when the pool does not exist. */
  datasets(pool: string): Promise<Record<string, DatasetRecord>>;
  /** Whether this filesystem or volume exists. */
  datasetExists(dataset: string): Promise<boolean>;
  /** Snapshots of every dataset of `pool`, oldest first. NOT_FOUND when the pool does not exist. */
  snapshots(pool: string): Promise<SnapshotInfo[]>;
  createSnapshot(dataset: string, snap: string, options?: CreateSnapshot): Promise<void>;
  /** Rolls back to the snapshot, destroying newer snapshots of that dataset (`zfs rollback -r`, never `-R`). */
  rollback(dataset: string, snap: string): Promise<void>;
  destroySnapshot(dataset: string, snap: string, options?: { recursive?: boolean }): Promise<void>;
  /** Starts a scrub (it runs on in the pool). */
  scrub(pool: string): Promise<void>;
  /** The same port, its commands run as part of a dispatcher job (output in its log, killed with it). */
  inJob(job: JobContext): ZfsPort;
}
