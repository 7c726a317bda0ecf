/** Path arithmetic and permission rules every platform's `fs` port and the `fs` handler share. */
import type { Identity, PathStat } from '../ports/fs.ts';

/**
 * The paths a lookup of `path` passes through, `/` first, `path` (normalized: no empty or `.`
 * segments) last. `..` never occurs: the contract refuses it.
 */
export function ancestry(path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  const out = ['/'];
  for (let i = 1; i <= parts.length; i++) out.push(`/${parts.slice(0, i).join('/')}`);
  return out;
}

/** The paths to stat for a set of resolved steps: each one's ancestry, once, in walking order. */
export function pathsToStat(resolved: ReadonlyArray<string | null>): string[] {
  return [...new Set(resolved.flatMap((r) => (r === null ? [] : ancestry(r))))];
}

/** Whether `who` has every bit of `want` (4 read, 2 write, 1 search) on a path, as the kernel decides. */
export function permits(stat: PathStat, who: Identity, want: number): boolean {
  if (who.uid === 0) return true;
  // Only one class applies: the owner's bits even when "other" would allow more (POSIX).
  const shift = stat.uid === who.uid ? 6 : who.gids.includes(stat.gid) ? 3 : 0;
  return ((stat.perm >> shift) & want) === want;
}

/** Joins a directory and an entry name (names never contain `/`). */
export function childPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** Keeps the first `limit` names in code-unit order, as every platform's listing must. */
export function firstByName<T>(all: Iterable<[string, T]>, limit: number): { entries: Map<string, T>; total: number } {
  const sorted = [...all].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { entries: new Map(sorted.slice(0, limit)), total: sorted.length };
}
