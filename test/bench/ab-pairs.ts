/**
 * Ratios that do not flip on noise: A and B are measured in alternating pairs in one run (AB, then BA,
 * so neither always goes first), each pair gives one ratio B/A, and the verdict uses the median ratio
 * with its spread (10th to 90th percentile). A target whose spread straddles it is reported as such
 * rather than as a clean pass or fail.
 *
 * Each bench reports its targets with `reportTarget`; `npm run bench` (run.ts) gathers them from the file
 * named by HOSTADM_BENCH_TARGETS and prints one table at the end.
 */
import { appendFileSync } from 'node:fs';

export interface RatioSummary {
  median: number;
  p10: number;
  p90: number;
  pairs: number;
}

export interface TargetRow {
  target: string;
  ratio: RatioSummary;
  /** The ratio must be at most this (a "≤" target) or at least this (a "≥" target). */
  limit: number;
  direction: 'at-most' | 'at-least';
  verdict: 'met' | 'not met' | 'within noise';
}

function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

export function summarize(ratios: readonly number[]): RatioSummary {
  const sorted = [...ratios].sort((x, y) => x - y);
  return { median: quantile(sorted, 0.5), p10: quantile(sorted, 0.1), p90: quantile(sorted, 0.9), pairs: sorted.length };
}

/**
 * Runs `pairs` alternating pairs of two measurements (each returns a cost: milliseconds, bytes, ...)
 * after `warmup` unrecorded pairs, and summarizes cost(B) / cost(A).
 */
export async function alternatePairs(
  measureA: () => Promise<number>,
  measureB: () => Promise<number>,
  pairs: number,
  warmup = 2,
): Promise<{ ratio: RatioSummary; a: number[]; b: number[] }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < warmup + pairs; i++) {
    let costA: number;
    let costB: number;
    if (i % 2 === 0) {
      costA = await measureA();
      costB = await measureB();
    } else {
      costB = await measureB();
      costA = await measureA();
    }
    if (i < warmup) continue;
    a.push(costA);
    b.push(costB);
  }
  return { ratio: summarize(b.map((cost, i) => cost / a[i]!)), a, b };
}

export function formatRatio(r: RatioSummary): string {
  return `${r.median.toFixed(2)}× (p10–p90 ${r.p10.toFixed(2)}–${r.p90.toFixed(2)}, ${r.pairs} pairs)`;
}

export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((x, y) => x - y),
    0.5,
  );
}

/** Prints the verdict and records it for run.ts's closing table. */
export function reportTarget(target: string, ratio: RatioSummary, limit: number, direction: TargetRow['direction'] = 'at-most'): TargetRow {
  const ok = (x: number) => (direction === 'at-most' ? x <= limit : x >= limit);
  const verdict =
    ok(ratio.median) && ok(direction === 'at-most' ? ratio.p90 : ratio.p10)
      ? 'met'
      : !ok(ratio.median) && !ok(direction === 'at-most' ? ratio.p10 : ratio.p90)
        ? 'not met'
        : 'within noise';
  const row: TargetRow = { target, ratio, limit, direction, verdict };
  console.log(`TARGET ${target}: ${formatRatio(ratio)}, target ${direction === 'at-most' ? '≤' : '≥'} ${limit}×: ${verdict}`);
  const file = process.env.HOSTADM_BENCH_TARGETS;
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
  return row;
}
