/**
 * The CPU sampler the real platforms share: Linux /proc/stat and FreeBSD kern.cp_times are both
 * cumulative tick counters.
 */
import type { CpuUsage } from '../ports/systemmanager.ts';

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
