/** Output of the base-system tools the FreeBSD `fs` port runs (find -print0, stat -f, realpath). */
import type { PathStat } from '../../ports/fs.ts';

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;

/** `stat -L -f '%u %g %Op %N'`: uid, gid, octal type+mode, then the path as given. */
export const CHAIN_FORMAT = '%u %g %Op %N';
/** `stat -f`: type (long form), owner, group, size, link target (empty unless a link). */
export const ENTRY_FORMAT = '%HT%t%Su%t%Sg%t%z%t%Y';

export const toPathStat = (uid: string, gid: string, mode: number): PathStat => ({
  uid: Number(uid),
  gid: Number(gid),
  perm: mode & 0o777,
  isDir: (mode & S_IFMT) === S_IFDIR,
});

/** CHAIN_FORMAT lines of paths without newlines (see `statChain`). */
export function parseChainStat(stdout: string): Map<string, PathStat> {
  const stats = new Map<string, PathStat>();
  for (const line of stdout.split('\n')) {
    const m = /^(\d+) (\d+) ([0-7]+) (\/.*)$/.exec(line);
    if (m) stats.set(m[4] as string, toPathStat(m[1] as string, m[2] as string, parseInt(m[3] as string, 8)));
  }
  return stats;
}

/** Entry names from `find DIR -mindepth 1 -maxdepth 1 -print0`: the part after the last `/`. */
export function parsePrint0Names(stdout: string): string[] {
  return stdout
    .split('\0')
    .slice(0, -1)
    .map((p) => p.slice(p.lastIndexOf('/') + 1))
    .filter((n) => n !== '' && n !== '.' && n !== '..');
}

export interface EntryStat {
  type: string;
  owner: string;
  group: string;
  size: number;
  target: string;
}

/** stat prints an id without a name as `(1234)`; the other platforms say `1234`. */
const bareId = (name: string) => (/^\(\d+\)$/.test(name) ? name.slice(1, -1) : name);

/** One ENTRY_FORMAT record (without its newline); the target is last, so tabs in it are kept. */
export function parseEntryStat(record: string): EntryStat | null {
  const parts = record.split('\t');
  if (parts.length < 5) return null;
  const [type, owner, group, size] = parts as [string, string, string, string];
  if (!/^\d+$/.test(size)) return null;
  return { type, owner: bareId(owner), group: bareId(group), size: Number(size), target: parts.slice(4).join('\t') };
}

/** ENTRY_FORMAT output for `count` paths, or null when it does not split into exactly that many records. */
export function parseEntryStats(stdout: string, count: number): EntryStat[] | null {
  const lines = stdout.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length !== count) return null;
  const parsed = lines.map(parseEntryStat);
  return parsed.every((p) => p !== null) ? (parsed as EntryStat[]) : null;
}

/**
 * Where each step of a path leads. realpath(1) here needs every component to exist and has no
 * NUL output, but the steps nest: once one fails, every deeper one fails too, so `-q` output is
 * exactly the first steps' answers. More lines than steps means a newline inside a resolved name:
 * then each step is asked alone.
 */
export function parseRealpathSteps(stdout: string, steps: number): Array<string | null> | null {
  const lines = stdout.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length > steps) return null;
  return Array.from({ length: steps }, (_, i) => lines[i] ?? null);
}
