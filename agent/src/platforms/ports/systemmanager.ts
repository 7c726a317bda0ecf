/**
 * The `systemmanager` port: what each platform reports about the host, in plain numbers and
 * records. The handler turns them into the contract's strings (`"45.0C"`, `"up 2 days 5:09"`).
 */
import type { BATTERY_STATUSES, KILL_SIGNALS, MOUNT_TYPES } from '@hostadm/shared/api/systemmanager.ts';

export type KillSignal = (typeof KILL_SIGNALS)[number];
export type MountType = (typeof MOUNT_TYPES)[number];
export type BatteryStatus = (typeof BATTERY_STATUSES)[number];

/** Memory in whole MiB. */
export interface MemoryStats {
  active: number;
  inactive: number;
  cache: number;
  free: number;
  wired: number;
}

/** Busy percentages (0 to 100): one per CPU, indexed by CPU number from 0, and all CPUs together. */
export interface CpuUsage {
  perCpu: number[];
  total: number;
}

export interface CpuTemperature {
  /** CPU number from 0 (`cpu<N>`). */
  cpu: number;
  celsius: number;
}

/** One process, with its columns already in top(1)'s textual form. */
export interface ProcessEntry {
  pid: number;
  username: string;
  thr: string;
  pri: string;
  nice: string;
  size: string;
  res: string;
  state: string;
  /** CPU the process last ran on. */
  cpu: string;
  time: string;
  wcpu: string;
  command: string;
}

export type BatteryState =
  | { present: false }
  | {
      present: true;
      /** Charge percent, null when unknown. */
      level: number | null;
      status: BatteryStatus;
      /** Seconds of battery left, null when unknown (for example while on AC power). */
      secondsLeft: number | null;
    };

export interface ExternalMount {
  /** Device path, the reply's key (`/dev/da0s1`). */
  device: string;
  filesystem: string;
  path: string;
  type: MountType;
}

export interface SystemInfo {
  arch: string;
  cpuCores: number;
  cpuType: string;
  hostname: string;
  kernelIdent: string;
  kernelVersion: string;
  systemVersion: string;
  totalMemMiB: number;
  uptimeSeconds: number;
}

export interface SysctlChange {
  name: string;
  oldValue: string;
  newValue: string;
}

export interface SystemmanagerPort {
  memoryStats(): Promise<MemoryStats>;
  cpuUsage(): Promise<CpuUsage>;
  /** Empty when the host has no readable CPU sensor. */
  cpuTemperatures(): Promise<CpuTemperature[]>;
  processes(): Promise<ProcessEntry[]>;
  processExists(pid: number): Promise<boolean>;
  /** Processes besides PID 1 that must never be signalled (the agent itself). */
  readonly protectedPids: readonly number[];
  /** Sends the signal; a process that vanished meanwhile is a 400 naming `pid`. */
  signalProcess(pid: number, signal: KillSignal): Promise<void>;
  battery(): Promise<BatteryState>;
  externalMounts(): Promise<ExternalMount[]>;
  systemInfo(): Promise<SystemInfo>;
  /** Writable sysctls and their current values. */
  sysctls(): Promise<Record<string, string>>;
  /** Checks that the sysctl exists and is writable (400 otherwise) before changing anything. */
  setSysctl(name: string, value: string): Promise<SysctlChange>;
  halt(): Promise<void>;
  reboot(): Promise<void>;
}
