/**
 * Parsers of `zpool list` / `zfs list` scripted output (`-H`: tab-separated, no header), read by the
 * column names that were asked for, so a tool that lacks a column (zfs-fuse 0.7 has no `frag` or
 * `expandsz`; `-p` is OpenZFS and FreeBSD only) costs only that column: it reads as `-`, the spelling
 * the tools themselves use for "unknown".
 *
 * Values are the tool's, except that percentages always end in `%` and ratios in `x` (with `-p`
 * OpenZFS prints `5` and `1.00`, without it `5%` and `1.00x`), so a client reads one form everywhere.
 */
import type { DatasetRecord, PoolRecord } from '../../ports/zfs.ts';

export const POOL_COLUMNS = ['name', 'size', 'alloc', 'free', 'expandsz', 'frag', 'cap', 'dedup', 'health', 'altroot'] as const;
export const DATASET_COLUMNS = ['name', 'used', 'avail', 'refer', 'mountpoint'] as const;

export const UNKNOWN = '-';

/** Rows of `-H` output as objects keyed by `columns` (those in `missing` read as `-`). */
export function parseScripted<C extends string>(text: string, asked: readonly C[], missing: ReadonlySet<string> = new Set()): Record<C, string>[] {
  const present = asked.filter((c) => !missing.has(c));
  const rows: Record<C, string>[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const cells = line.split('\t');
    const row = {} as Record<C, string>;
    for (const column of asked) {
      const at = present.indexOf(column);
      row[column] = at < 0 ? UNKNOWN : (cells[at] ?? UNKNOWN).trim() || UNKNOWN;
    }
    rows.push(row);
  }
  return rows;
}

const withSuffix = (value: string, suffix: string) => (/^\d+(\.\d+)?$/.test(value) ? `${value}${suffix}` : value);

export function poolRecords(text: string, missing: ReadonlySet<string>): Record<string, PoolRecord> {
  const out: Record<string, PoolRecord> = {};
  for (const row of parseScripted(text, POOL_COLUMNS, missing)) {
    out[row.name] = {
      alloc: row.alloc,
      altroot: row.altroot,
      cap: withSuffix(row.cap, '%'),
      dedup: withSuffix(row.dedup, 'x'),
      expandsz: row.expandsz,
      frag: withSuffix(row.frag, '%'),
      free: row.free,
      health: row.health,
      size: row.size,
    };
  }
  return out;
}

export function datasetRecords(text: string, missing: ReadonlySet<string>): Record<string, DatasetRecord> {
  const out: Record<string, DatasetRecord> = {};
  for (const row of parseScripted(text, DATASET_COLUMNS, missing)) {
    out[row.name] = { avail: row.avail, mountpoint: row.mountpoint, refer: row.refer, used: row.used };
  }
  return out;
}

/** A pool's `cap` as a number, or null when the tool could not say (`-`). */
export function capacityPercent(record: Pick<PoolRecord, 'cap'>): number | null {
  const m = /^(\d+(?:\.\d+)?)%?$/.exec(record.cap);
  return m ? Number(m[1]) : null;
}

/** The column a tool refused (`bad property list: invalid property 'frag'`), if that is why it failed. */
export function refusedColumn(stderr: string): string | null {
  return /invalid property '([^']+)'/.exec(stderr)?.[1] ?? null;
}

/** Whether the tool failed because it has no `-p` (zfs-fuse 0.7: `invalid option 'p'`). */
export function refusedParsable(stderr: string): boolean {
  return /invalid option '?p'?/.test(stderr);
}
