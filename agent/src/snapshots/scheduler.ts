/**
 * The agent's own scheduler for snapshots, scrubs and replications (what cron and lpreserver did).
 * Every tick it asks the clock for the time and, for each schedule, when its frequency last fell
 * (frequencies.ts); if that is after the occurrence it last fired for, it fires once and records the
 * occurrence before submitting the job. So a tick that comes late, or an agent that was stopped over
 * several occurrences, fires once, not once per missed occurrence; a restart never fires twice.
 *
 * The clock is injected: tests move it and call `tick()`, and the agent ticks on a timer.
 */
import type { Logger } from 'pino';
import type { Clock } from '../server/context.ts';
import { lastOccurrence } from './frequencies.ts';
import type { SnapshotRecords } from './records.ts';
import type { SnapshotJobs } from './jobs.ts';

export class SnapshotScheduler {
  private readonly records: SnapshotRecords;
  private readonly jobs: SnapshotJobs;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private lastDiskCheck: number | null = null;

  constructor(deps: { records: SnapshotRecords; jobs: SnapshotJobs; clock: Clock; logger: Logger }) {
    this.records = deps.records;
    this.jobs = deps.jobs;
    this.clock = deps.clock;
    this.logger = deps.logger;
  }

  /** What a new or changed schedule records as already fired: its latest occurrence, so it first fires at the next one. */
  startingPoint(frequency: string): number {
    const now = this.clock.now();
    return lastOccurrence(frequency, now) ?? now;
  }

  /** Fires what has fallen due since the last tick; returns the ids of the jobs it submitted. */
  async tick(): Promise<string[]> {
    const now = this.clock.now();
    const fired: string[] = [];
    const fire = (what: string, submit: () => string) => {
      try {
        fired.push(submit());
      } catch (err) {
        this.logger.error({ schedule: what, err: err instanceof Error ? err.message : String(err) }, 'scheduled job not submitted');
      }
    };
    for (const [pool, schedule] of this.records.snap.all()) {
      const due = lastOccurrence(schedule.frequency, now);
      if (due === null || due <= schedule.lastRun) continue;
      this.records.snap.put(pool, { ...schedule, lastRun: due }, now);
      fire(`snapshot ${pool}`, () => this.jobs.submitSnapshot(pool, due, schedule.keep, schedule.owner));
    }
    for (const [pool, schedule] of this.records.scrub.all()) {
      const due = lastOccurrence(schedule.frequency, now);
      if (due === null || due <= schedule.lastRun) continue;
      this.records.scrub.put(pool, { ...schedule, lastRun: due }, now);
      fire(`scrub ${pool}`, () => this.jobs.submitScrub(pool, schedule.owner));
    }
    for (const [key, task] of this.records.tasks.all()) {
      const due = lastOccurrence(task.frequency, now);
      if (due === null || due <= task.lastRun) continue;
      this.records.tasks.put(key, { ...task, lastRun: due }, now);
      fire(`replication ${key}`, () => this.jobs.submitReplication(task.dataset, task.host, 'schedule', task.owner));
    }
    // Pools over the warning level are told once an hour even when no schedule runs.
    const hour = lastOccurrence('hourly', now);
    if (hour !== null && hour !== this.lastDiskCheck) {
      this.lastDiskCheck = hour;
      await this.jobs.checkDiskUsage('');
    }
    return fired;
  }
}
