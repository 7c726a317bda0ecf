/**
 * The replication engine the `snapshot` class drives (`addreplication`, `runreplication`,
 * `initreplication`, `removereplication`): one SSH key of the agent's installed on the remote with
 * the password (used once, never stored), `zfs send | ssh … zfs recv` as two processes joined by the
 * agent (no shell), incremental after the first run, resumable where ZFS has `receive_resume_token`.
 *
 * The class owns the task records (agent/src/snapshots/records.ts) and their validation; an engine
 * only acts on a task it is handed. A platform without one answers the replication actions with
 * UNSUPPORTED and still lists the tasks it has.
 */
import type { JobContext, JobOutcome } from '../../jobs/types.ts';

/** A replication task as the class stores it (validated: ZFS names, port 1–65535, host name or address). */
export interface ReplicationTask {
  /** Local dataset. */
  dataset: string;
  /** Remote host name or address. */
  host: string;
  port: number;
  /** Remote user (must exist there). */
  user: string;
  /** Dataset on the remote that receives. */
  remoteDataset: string;
  /** `XX` (hour, daily), `sync`, `hour`, `30min`, `10min` or `manual`. */
  frequency: string;
}

export interface ReplicationEngine {
  /**
   * `addreplication`: installs the agent's replication key for `task.user` on the remote using
   * `password` once, and checks the remote can receive. Throws (HOST_ERROR with the reason) when it
   * cannot; the class then stores nothing.
   */
  install(task: ReplicationTask, password: string, signal?: AbortSignal): Promise<void>;
  /**
   * One run, inside a dispatcher job (`runreplication`, a schedule, or `sync` after an automatic
   * snapshot): full the first time, incremental after, resumed when a partial receive left a token.
   * Progress through `job.progress(percent)`, output through `job.log` / `job.run`.
   */
  run(task: ReplicationTask, job: JobContext): Promise<JobOutcome>;
  /** `initreplication`: removes what was replicated on the remote, so the next run is a full one. */
  reset(task: ReplicationTask): Promise<void>;
  /** `removereplication`: forgets what the engine keeps for the task; replicated data stays. */
  forget(task: ReplicationTask): Promise<void>;
}
