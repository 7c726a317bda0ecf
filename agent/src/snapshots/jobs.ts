/**
 * The snapshot service's dispatcher jobs: an automatic snapshot (then pruning to `keep`, the disk
 * check and `sync` replications), a scrub, a replication run. Each is a job of the `admin/snapshot`
 * event system, so its events have the spec's queued-operation shape with `action` (`cronsnap`,
 * `cronscrub`, `runreplication`) and the pool or task; what happens is also told as `life-preserver`
 * events (docs/protocol.md, "life-preserver").
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { Dispatcher } from '../jobs/dispatcher.ts';
import type { JobContext, JobOutcome, JobType } from '../jobs/types.ts';
import type { EventBus } from '../events/bus.ts';
import { ownedBy } from '../events/audience.ts';
import type { ZfsPort } from '../platforms/ports/zfs.ts';
import type { ReplicationEngine } from '../platforms/ports/replication.ts';
import { capacityPercent } from '../platforms/common/parse/zfs.ts';
import { engineTask, taskKey, type SnapshotRecords } from './records.ts';

export const SYSTEM = 'admin/snapshot';
const JOB_TYPE = 'snapshot service';

const jobParams = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('snapshot'), pool: z.string(), snap: z.string(), keep: z.number().int(), recursive: z.boolean() }),
  z.object({ kind: z.literal('scrub'), pool: z.string() }),
  z.object({ kind: z.literal('replication'), dataset: z.string(), host: z.string(), target: z.string(), trigger: z.enum(['manual', 'schedule', 'sync']) }),
]);
type JobParams = z.infer<typeof jobParams>;

/** `priority` as the original displayed it: 0–2 Information, 3–5 Warning, 6–8 Critical, 9–10 Urgent. */
export const PRIORITY = { info: '1 - Information', warning: '4 - Warning', critical: '7 - Critical' } as const;

/** `auto-<UTC date and time of the occurrence>`, e.g. `auto-2026-11-25-14-30-00`. */
export function autoSnapshotName(at: number): string {
  return `auto-${new Date(at).toISOString().slice(0, 19).replace(/[T:]/g, '-')}`;
}

export interface SnapshotJobsDeps {
  zfs: ZfsPort;
  engine: ReplicationEngine | null;
  records: SnapshotRecords;
  jobs: Dispatcher;
  events: EventBus;
  logger: Logger;
}

export class SnapshotJobs {
  private readonly deps: SnapshotJobsDeps;

  constructor(deps: SnapshotJobsDeps) {
    this.deps = deps;
    deps.jobs.register(this.jobType());
  }

  /** An automatic snapshot of `pool` for the occurrence `at`; returns the job id. */
  submitSnapshot(pool: string, at: number, keep: number, owner: string): string {
    const recursive = this.deps.records.settings().recursive;
    return this.submit('cronsnap', { kind: 'snapshot', pool, snap: autoSnapshotName(at), keep, recursive }, owner);
  }

  submitScrub(pool: string, owner: string): string {
    return this.submit('cronscrub', { kind: 'scrub', pool }, owner);
  }

  submitReplication(dataset: string, host: string, trigger: 'manual' | 'schedule' | 'sync', owner: string): string {
    const task = this.deps.records.tasks.get(taskKey(dataset, host));
    const target = task ? `${task.user}@${task.host}:${task.port} ${task.remoteDataset}` : host;
    return this.submit('runreplication', { kind: 'replication', dataset, host, target, trigger }, owner);
  }

  /** A `life-preserver` event for each pool used beyond the `duwarn` setting. */
  async checkDiskUsage(owner: string, zfs: ZfsPort = this.deps.zfs): Promise<void> {
    const { duwarn } = this.deps.records.settings();
    for (const [pool, record] of Object.entries(await zfs.listPools())) {
      const used = capacityPercent(record);
      if (used === null || used <= duwarn) continue;
      this.tell(owner, 'snapshot', PRIORITY.warning, `pool ${pool} is ${used}% full, over the ${duwarn}% warning level`);
    }
  }

  private submit(action: string, params: JobParams, owner: string): string {
    const id = `admin_${action}-{${randomUUID()}}`;
    this.deps.jobs.submit([{ id, type: JOB_TYPE, params, queue: 'no_queue', owner }]);
    return id;
  }

  private tell(owner: string, kind: 'snapshot' | 'replication', priority: string, message: string): void {
    this.deps.events.publish('life-preserver', { message, priority, class: kind }, ownedBy(owner));
  }

  private jobType(): JobType<JobParams> {
    return {
      name: JOB_TYPE,
      parse: (params) => jobParams.parse(params),
      commands: (p) => {
        if (p.kind === 'snapshot') {
          return [
            `zfs snapshot ${p.recursive ? '-r ' : ''}-o hostadm:auto=on ${p.pool}@${p.snap}`,
            `keep the newest ${p.keep} automatic snapshots of ${p.pool}`,
          ];
        }
        if (p.kind === 'scrub') return [`zpool scrub ${p.pool}`];
        return [`replicate ${p.dataset} to ${p.target}`];
      },
      run: (p, ctx) => this.run(p, ctx),
      classEvent: {
        system: SYSTEM,
        fields: ({ params: p }) => {
          if (p.kind === 'snapshot') return { action: 'cronsnap', pool: p.pool, snapshot: `${p.pool}@${p.snap}` };
          if (p.kind === 'scrub') return { action: 'cronscrub', pool: p.pool };
          return { action: 'runreplication', dataset: p.dataset, host: p.host, trigger: p.trigger };
        },
      },
    };
  }

  private async run(p: JobParams, ctx: JobContext): Promise<JobOutcome> {
    const owner = this.ownerOf(ctx.id);
    if (p.kind === 'snapshot') return this.runSnapshot(p, ctx, owner);
    if (p.kind === 'scrub') {
      await this.deps.zfs.inJob(ctx).scrub(p.pool);
      this.tell(owner, 'snapshot', PRIORITY.info, `scrub of ${p.pool} started`);
      return { success: true };
    }
    return this.runReplication(p, ctx, owner);
  }

  private ownerOf(jobId: string): string {
    return this.deps.jobs.read(jobId)?.owner ?? '';
  }

  private async runSnapshot(p: Extract<JobParams, { kind: 'snapshot' }>, ctx: JobContext, owner: string): Promise<JobOutcome> {
    const zfs = this.deps.zfs.inJob(ctx);
    try {
      await zfs.createSnapshot(p.pool, p.snap, { auto: true, recursive: p.recursive });
    } catch (err) {
      this.tell(owner, 'snapshot', PRIORITY.critical, `creating snapshot ${p.pool}@${p.snap} FAILED: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
    this.tell(owner, 'snapshot', PRIORITY.info, `creating snapshot ${p.pool}@${p.snap}`);
    // Only snapshots the schedule took (hostadm:auto=on) of the pool's root count and go: never a user's.
    // Oldest first by name: `auto-<UTC time>` sorts by time, where creation times tie within a second.
    const autos = (await zfs.snapshots(p.pool)).filter((s) => s.auto && s.dataset === p.pool).sort((a, b) => a.snap.localeCompare(b.snap));
    const excess = autos.slice(0, Math.max(0, autos.length - p.keep));
    for (const old of excess) {
      await zfs.destroySnapshot(old.dataset, old.snap, { recursive: p.recursive });
      ctx.log(`removed ${old.dataset}@${old.snap} (keeping ${p.keep})\n`);
    }
    await this.checkDiskUsage(owner, zfs);
    for (const task of this.deps.records.tasks.all().values()) {
      if (task.frequency !== 'sync' || !(task.dataset === p.pool || task.dataset.startsWith(`${p.pool}/`))) continue;
      const id = this.submitReplication(task.dataset, task.host, 'sync', task.owner);
      ctx.log(`queued replication ${task.dataset} -> ${task.host} as ${id}\n`);
    }
    return { success: true, fields: { removed: excess.map((s) => `${s.dataset}@${s.snap}`) } };
  }

  private async runReplication(p: Extract<JobParams, { kind: 'replication' }>, ctx: JobContext, owner: string): Promise<JobOutcome> {
    const task = this.deps.records.tasks.get(taskKey(p.dataset, p.host));
    if (!task) return { success: false, reason: `replication task ${taskKey(p.dataset, p.host)} no longer exists` };
    const { engine } = this.deps;
    if (!engine) return { success: false, reason: 'replication is not available on this host' };
    this.tell(owner, 'replication', PRIORITY.info, `Starting replication ${p.dataset} -> ${p.target}`);
    let outcome: JobOutcome;
    try {
      outcome = await engine.run(engineTask(task), ctx);
    } catch (err) {
      outcome = { success: false, reason: err instanceof Error ? err.message : String(err) };
    }
    if (outcome.success) this.tell(owner, 'replication', PRIORITY.info, `finished replication task ${p.dataset} -> ${p.target}`);
    else this.tell(owner, 'replication', PRIORITY.critical, `FAILED replication task ${p.dataset} -> ${p.target}: ${outcome.reason ?? 'see the job log'}`);
    return outcome;
  }
}
