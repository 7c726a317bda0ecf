/**
 * The `powerd` port: the CPU power daemon (FreeBSD's powerd(8), cpufreq governors on Linux). Option
 * values reaching it were validated by the contract and merged by the handler: a port writes a
 * complete option set and never sees a partial or out-of-range one.
 */
import type { PowerdOptions } from '@hostadm/shared/api/powerd.ts';

export type { PowerdOptions };

export interface PowerdStatus {
  /** Starts at boot. */
  enabled: boolean;
  /** Runs (or, on Linux, its governors are in force) now. */
  running: boolean;
}

export interface PowerdPort {
  /** The configured options; unset ones are the daemon's defaults. */
  readOptions(): Promise<PowerdOptions>;
  /** Stores a complete option set where the daemon reads it at its next start. */
  writeOptions(options: PowerdOptions): Promise<void>;
  status(): Promise<PowerdStatus>;
  setEnabled(enabled: boolean): Promise<void>;
  /** Whether the daemon runs afterwards (already running counts as started). */
  start(): Promise<boolean>;
  /** Whether the daemon is stopped afterwards (not running counts as stopped). */
  stop(): Promise<boolean>;
  /** Restarts a running daemon so it takes new options; a failure is a HOST_ERROR. */
  restart(): Promise<void>;
}
