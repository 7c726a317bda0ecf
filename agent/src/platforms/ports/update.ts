/**
 * The `update` port: how a platform checks for, lists and installs system and package updates
 * (freebsd-update + pkg or TrueOS's pc-updatemanager on FreeBSD, apt on Linux, a simulated FreeBSD
 * in sim). The handler owns the rules every platform shares: one update at a time, the check cache,
 * the update logs it writes while a job runs, stopping jobs. A port only answers for its host.
 */
import type { z } from 'zod';
import type { patchRecord, update, UPDATE_STATUSES, updateSettingsRecord } from '@hostadm/shared/api/update.ts';
import type { ParsedArgsOf } from '@hostadm/shared/protocol/define.ts';
import type { JobContext, JobOutcome } from '../../jobs/types.ts';

export type UpdatePatch = z.input<ReturnType<typeof patchRecord>>;
export type UpdateStatus = (typeof UPDATE_STATUSES)[number];

/**
 * What a check found, as the platforms and the cache hold it; the handler turns `patches` into the
 * wire's `patch<N>` keys of `checkupdates`.
 */
export interface UpdateCheck {
  status: UpdateStatus;
  details: string;
  security?: { name: string };
  majorupgrade?: { name: string; tag: string; version: string };
  packageupdate?: { name: string };
  patches?: UpdatePatch[];
}
export type UpdateSettings = z.input<ReturnType<typeof updateSettingsRecord>>;
export type UpdateTarget = ParsedArgsOf<(typeof update)['actions']['startupdate']>;
export type BranchState = 'active' | 'available';

/** A finished check as it is cached: when it ended and what it found (or why it failed: `checkfailed`). */
export interface StoredCheck {
  /** Epoch milliseconds. */
  at: number;
  result: UpdateCheck;
}

/** One update log: epoch seconds. */
export interface UpdateLogInfo {
  name: string;
  started: number;
  finished: number;
}

export interface UpdateLogWriter {
  append(text: string): void;
  close(): void;
}

/** Where a platform keeps what the agent itself remembers about updates: settings, the last check, logs. */
export interface UpdateStore {
  readSettings(): Promise<UpdateSettings>;
  /** Replaces the settings (the handler merges a change into the current ones first). */
  writeSettings(settings: UpdateSettings): Promise<void>;
  readCheck(): Promise<StoredCheck | null>;
  /** `null` forgets the cached check (after an update, so the next check runs again). */
  writeCheck(check: StoredCheck | null): Promise<void>;
  /** The agent's update logs and any the host keeps (apt's history, pc-updatemanager's logs), newest first. */
  listLogs(): Promise<UpdateLogInfo[]>;
  /** The text of a log `listLogs` names; null for any other name. */
  readLog(name: string): Promise<string | null>;
  /** Starts a new agent log (the name is made by the handler from safe characters only). */
  createLog(name: string): UpdateLogWriter;
}

/** An update ready to queue: what it runs as shown to clients, and the work itself. */
export interface UpdateRun {
  commands: string[];
  run(job: JobContext): Promise<JobOutcome>;
}

/** What the platform may consult when it plans an update. */
export interface UpdatePlanContext {
  settings: UpdateSettings;
  /** The last completed check (its `tag`s are what `standalone` accepts), or null. */
  lastCheck: UpdateCheck | null;
}

export interface UpdatePort {
  readonly store: UpdateStore;
  /**
   * Asks the host what can be installed: `status` `updatesavailable` or `noupdates`, with the records
   * of what is available. A check that cannot tell (no network, tool missing, a repository failing)
   * throws: it must never come back as `noupdates`.
   */
  check(signal: AbortSignal): Promise<UpdateCheck>;
  /** Why a reboot is needed to finish an installed update, or null when none is. */
  rebootRequired(): Promise<string | null>;
  /** OS versions: the installed one(s) `active`, the ones `chbranch` may switch to `available`. */
  branches(): Promise<Record<string, BranchState>>;
  /** Plans an update; a branch or tag the host does not offer is a 400 naming the field, with nothing queued. */
  planUpdate(target: UpdateTarget, context: UpdatePlanContext): Promise<UpdateRun>;
  /** Stops update processes the agent did not start (TrueOS's own updater); whether any was found. */
  stopOthers?(): Promise<boolean>;
}
