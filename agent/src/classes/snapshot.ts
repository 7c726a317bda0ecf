/**
 * `snapshot`: the service TrueOS's lpreserver was, built on the `zfs` port: snapshot and scrub
 * schedules run by the agent's own scheduler (agent/src/snapshots/), manual snapshots with a comment
 * kept as the ZFS user property `hostadm:comment`, replication tasks driven through the platform's
 * replication engine (ports/replication.ts), and the settings. Schedules, tasks and settings live in
 * the agent's store and survive restarts; every scheduled run is a dispatcher job with its events.
 *
 * Names were checked by the contract against ZFS's rules (400 naming the field). A pool, dataset,
 * snapshot or task that does not exist is a 404, never a quiet success.
 */
import { snapshot } from '@hostadm/shared/api/snapshot.ts';
import { HostadmError, notFound, unsupported } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { ZfsPort } from '../platforms/ports/zfs.ts';
import type { ReplicationEngine } from '../platforms/ports/replication.ts';
import { SnapshotRecords, engineTask, taskKey, type StoredTask } from '../snapshots/records.ts';
import { SnapshotJobs } from '../snapshots/jobs.ts';
import { SnapshotScheduler } from '../snapshots/scheduler.ts';

const NO_ENGINE = 'replication is not available on this host (no replication engine for this platform)';

export const snapshotImpl = implementClass(snapshot, (services) => {
  const zfs = services.platform.ports.zfs;
  if (!zfs) return null;
  const engine: ReplicationEngine | null = services.platform.ports.replication ?? null;
  const records = new SnapshotRecords(services.db, services.logger);
  const jobs = new SnapshotJobs({ zfs, engine, records, jobs: services.jobs, events: services.events, logger: services.logger });
  const scheduler = new SnapshotScheduler({ records, jobs, clock: services.clock, logger: services.logger });
  services.background.every('snapshot scheduler', services.config.schedulerTickMs, async () => {
    await scheduler.tick();
  });
  const now = () => services.clock.now();

  const requireTask = (dataset: string, host: string): StoredTask => {
    const task = records.tasks.get(taskKey(dataset, host));
    if (!task) throw notFound(`no replication task ${taskKey(dataset, host)}`);
    return task;
  };
  const requireEngine = (): ReplicationEngine => {
    if (!engine) throw unsupported(NO_ENGINE);
    return engine;
  };

  return {
    listcron: async () => {
      const out: Record<string, { keep: string; schedule: string; scrub?: string }> = {};
      for (const [pool, s] of records.snap.all()) out[pool] = { keep: String(s.keep), schedule: s.frequency };
      for (const [pool, s] of records.scrub.all()) out[pool] = { ...(out[pool] ?? { keep: '0', schedule: 'none' }), scrub: s.frequency };
      return { listcron: out };
    },
    cronsnap: async ({ pool, keep, frequency }, ctx) => {
      await requirePool(zfs, pool);
      if (frequency === 'none') records.snap.delete(pool);
      else records.snap.put(pool, { frequency, keep: Number(keep), lastRun: scheduler.startingPoint(frequency), owner: ctx.session.user }, now());
      return { cronsnap: { frequency, keep, pool } };
    },
    cronscrub: async ({ pool, frequency }, ctx) => {
      await requirePool(zfs, pool);
      if (frequency === 'none') records.scrub.delete(pool);
      else records.scrub.put(pool, { frequency, lastRun: scheduler.startingPoint(frequency), owner: ctx.session.user }, now());
      return { cronscrub: { frequency, pool } };
    },
    createsnap: async ({ dataset, snap, comment }, ctx) => {
      await zfs.createSnapshot(dataset, snap, { comment });
      await jobs.checkDiskUsage(ctx.session.user);
      return { createsnap: { comment: comment ?? '', dataset, snap } };
    },
    listsnap: async ({ pool }) => {
      const out: Record<string, { comment: string }> = {};
      for (const s of await zfs.snapshots(pool)) out[`${s.dataset}@${s.snap}`] = { comment: s.comment };
      return { listsnap: out };
    },
    revertsnap: async ({ dataset, snap }) => {
      await zfs.rollback(dataset, snap);
      return { revertsnap: { dataset, snap } };
    },
    removesnap: async ({ dataset, snap }) => {
      await zfs.destroySnapshot(dataset, snap);
      return { removesnap: { dataset, snap } };
    },
    addreplication: async (args, ctx) => {
      const replication = requireEngine();
      const key = taskKey(args.dataset, args.host);
      if (records.tasks.get(key)) throw new HostadmError('CONFLICT', `replication task ${key} already exists; remove it first`);
      if (!(await zfs.datasetExists(args.dataset))) throw notFound(`dataset ${args.dataset} does not exist`);
      const task: StoredTask = {
        dataset: args.dataset,
        host: args.host,
        port: Number(args.port),
        user: args.user,
        remoteDataset: args.remotedataset,
        frequency: args.frequency,
        lastRun: scheduler.startingPoint(args.frequency),
        owner: ctx.session.user,
      };
      // The password goes to the engine once, to install the key; it is stored nowhere.
      await replication.install(engineTask(task), args.password);
      records.tasks.put(key, task, now());
      const { frequency, host, user } = task;
      return { addreplication: { frequency, host, ldataset: task.dataset, port: String(task.port), rdataset: task.remoteDataset, user } };
    },
    removereplication: async ({ dataset, host }) => {
      const task = requireTask(dataset, host);
      if (engine) await engine.forget(engineTask(task));
      records.tasks.delete(taskKey(dataset, host));
      return { removereplication: { dataset, host } };
    },
    listreplication: async () => {
      const out: Record<string, { dataset: string; frequency: string; host: string; port: string; rdset: string; user: string }> = {};
      for (const [key, t] of records.tasks.all()) {
        out[key] = { dataset: t.dataset, frequency: t.frequency, host: t.host, port: String(t.port), rdset: t.remoteDataset, user: t.user };
      }
      return { listreplication: out };
    },
    runreplication: async ({ dataset, host }, ctx) => {
      requireTask(dataset, host);
      requireEngine();
      const id = jobs.submitReplication(dataset, host, 'manual', ctx.session.user);
      ctx.audit.detail = `queued ${id}`;
      return { runreplication: { dataset, host } };
    },
    initreplication: async ({ dataset, host }) => {
      const task = requireTask(dataset, host);
      await requireEngine().reset(engineTask(task));
      return { initreplication: { dataset, host } };
    },
    settings: async () => {
      const s = records.settings();
      return { settings: { diskwarn: `${s.duwarn}%`, email: s.emailopts, emailaddress: s.email, recursive: s.recursive ? 'ON' : 'OFF' } };
    },
    savesettings: async (args) => {
      const current = records.settings();
      records.saveSettings(
        {
          duwarn: args.duwarn !== undefined ? Number(args.duwarn) : current.duwarn,
          email: args.email ?? current.email,
          emailopts: args.emailopts ?? current.emailopts,
          recursive: args.recursive !== undefined ? args.recursive === 'true' : current.recursive,
        },
        now(),
      );
      const { duwarn, email, emailopts, recursive } = args;
      return { savesettings: { duwarn, email, emailopts, recursive } };
    },
  };
});

async function requirePool(zfs: ZfsPort, pool: string): Promise<void> {
  if (!Object.hasOwn(await zfs.listPools(), pool)) throw notFound(`pool ${pool} does not exist`);
}
