/**
 * What the snapshot service keeps in the agent's store: snapshot and scrub schedules per pool,
 * replication tasks keyed `<dataset>-><host>`, and the settings. `lastRun` is the occurrence a
 * schedule last fired for, so a restart neither repeats nor forgets one (a missed one fires once).
 */
import { z } from 'zod';
import type { Logger } from 'pino';
import type { AgentDb } from '../store/db.ts';
import { ClassRecords } from '../store/class-records.ts';
import type { ReplicationTask } from '../platforms/ports/replication.ts';

const snapSchedule = z.object({ frequency: z.string(), keep: z.number().int().nonnegative(), lastRun: z.number(), owner: z.string() });
const scrubSchedule = z.object({ frequency: z.string(), lastRun: z.number(), owner: z.string() });
const replicationTask = z.object({
  dataset: z.string(),
  host: z.string(),
  port: z.number().int().min(1).max(65535),
  user: z.string(),
  remoteDataset: z.string(),
  frequency: z.string(),
  lastRun: z.number(),
  owner: z.string(),
});
const settings = z.object({
  duwarn: z.number().int().min(0).max(99),
  email: z.string(),
  emailopts: z.enum(['ALL', 'WARN', 'ERROR']),
  recursive: z.boolean(),
});

export type SnapSchedule = z.infer<typeof snapSchedule>;
export type ScrubSchedule = z.infer<typeof scrubSchedule>;
export type StoredTask = z.infer<typeof replicationTask>;
export type SnapshotSettings = z.infer<typeof settings>;

/** lpreserver's defaults: warn at 70 % used, WARN-level notices, recursive snapshots. */
export const DEFAULT_SETTINGS: SnapshotSettings = { duwarn: 70, email: '', emailopts: 'WARN', recursive: true };

export const taskKey = (dataset: string, host: string) => `${dataset}->${host}`;

export function engineTask(task: StoredTask): ReplicationTask {
  return { dataset: task.dataset, host: task.host, port: task.port, user: task.user, remoteDataset: task.remoteDataset, frequency: task.frequency };
}

export class SnapshotRecords {
  readonly snap: ClassRecords<typeof snapSchedule>;
  readonly scrub: ClassRecords<typeof scrubSchedule>;
  readonly tasks: ClassRecords<typeof replicationTask>;
  private readonly settingsRecord: ClassRecords<typeof settings>;

  constructor(db: AgentDb, logger?: Logger) {
    this.snap = new ClassRecords(db, 'snapshot', 'snap-schedule', snapSchedule, logger);
    this.scrub = new ClassRecords(db, 'snapshot', 'scrub-schedule', scrubSchedule, logger);
    this.tasks = new ClassRecords(db, 'snapshot', 'replication', replicationTask, logger);
    this.settingsRecord = new ClassRecords(db, 'snapshot', 'settings', settings, logger);
  }

  settings(): SnapshotSettings {
    return this.settingsRecord.get('settings') ?? DEFAULT_SETTINGS;
  }

  saveSettings(next: SnapshotSettings, now: number): void {
    this.settingsRecord.put('settings', next, now);
  }
}
