/**
 * The `systemmanager` port: what each platform reports about the host, in plain numbers and
 * records. The handler turns them into the contract's strings (`"45.0C"`, `"up 2 days 5:09"`).
 * Also the CPU sampler the real platforms share (Linux /proc/stat and FreeBSD kern.cp_times are
 * both cumulative tick counters).
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

/** Cumulative ticks of one CPU: how many were idle, out of how many in all. */
export interface CpuTicks {
  idle: number;
  total: number;
}

export function busyBetween(prev: readonly CpuTicks[], next: readonly CpuTicks[]): CpuUsage {
  const busy = (a: CpuTicks, b: CpuTicks): number => {
    const total = b.total - a.total;
    if (total <= 0) return 0;
    const pct = 100 * (1 - (b.idle - a.idle) / total);
    return Math.min(100, Math.max(0, pct));
  };
  const perCpu = next.map((n, i) => busy(prev[i] as CpuTicks, n));
  const sum = (list: readonly CpuTicks[]): CpuTicks =>
    list.reduce((acc, t) => ({ idle: acc.idle + t.idle, total: acc.total + t.total }), { idle: 0, total: 0 });
  return { perCpu, total: busy(sum(prev), sum(next)) };
}

export interface CpuSamplerOptions {
  /** Gap between two samples when there is no usable previous one. Default 250 ms. */
  gapMs?: number;
  /** A previous sample older than this describes the past, not now: sample afresh. Default 60 s. */
  maxAgeMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Busy percentages from cumulative counters. Usage is a difference of two samples, so the sample
 * taken by one call is kept as the start of the next (the original's behaviour); a first call, or
 * one after a long pause, samples twice `gapMs` apart.
 */
export class CpuSampler {
  readonly #read: () => Promise<CpuTicks[]>;
  readonly #gapMs: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #previous: { at: number; ticks: CpuTicks[] } | null = null;

  constructor(read: () => Promise<CpuTicks[]>, options: CpuSamplerOptions = {}) {
    this.#read = read;
    this.#gapMs = options.gapMs ?? 250;
    this.#maxAgeMs = options.maxAgeMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  async usage(): Promise<CpuUsage> {
    let start = this.#previous;
    const age = start ? this.#now() - start.at : Infinity;
    if (!start || age > this.#maxAgeMs) {
      start = { at: this.#now(), ticks: await this.#read() };
      await this.#sleep(this.#gapMs);
    } else if (age < this.#gapMs) {
      // Back-to-back calls: a few ticks apart the percentages are mostly noise.
      await this.#sleep(this.#gapMs - age);
    }
    let next = { at: this.#now(), ticks: await this.#read() };
    if (next.ticks.length !== start.ticks.length) {
      // A CPU came or went (hotplug): the old sample no longer lines up.
      start = next;
      await this.#sleep(this.#gapMs);
      next = { at: this.#now(), ticks: await this.#read() };
    }
    this.#previous = next;
    return busyBetween(start.ticks, next.ticks);
  }
}

/** top(1)'s memory column: KiB below 10000, then MiB, then GiB (FreeBSD top's format_k). */
export function formatKiB(kib: number): string {
  if (!Number.isFinite(kib) || kib < 0) return '0K';
  if (kib < 10_000) return `${Math.round(kib)}K`;
  const mib = Math.round(kib / 1024);
  if (mib < 10_000) return `${mib}M`;
  return `${Math.round(mib / 1024)}G`;
}

/** top(1)'s TIME column: `M:SS` up to 999 minutes, then hours `N.NH`, then days `N.ND`. */
export function formatCpuTime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 1000 * 60) return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const hours = s / 3600;
  if (hours < 1000) return `${hours.toFixed(1)}H`;
  return `${(hours / 24).toFixed(1)}D`;
}
