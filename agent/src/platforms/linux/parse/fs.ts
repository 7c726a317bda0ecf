/** Output of the GNU coreutils and findutils the Linux `fs` port runs. */
import type { DirEntry, PathStat } from '../../ports/fs.ts';

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;

/**
 * `stat -L --printf` records (STAT_FORMAT): uid, gid, raw mode in hex, then the path as given, each
 * record ending in NUL, so no path (a resolved link may hold a newline) can pass for another's
 * record. Paths that do not exist print nothing.
 */
export const STAT_FORMAT = '%u %g %f %n\\0';

export function parseStatRecords(stdout: string): Map<string, PathStat> {
  const stats = new Map<string, PathStat>();
  for (const record of stdout.split('\0').slice(0, -1)) {
    const m = /^(\d+) (\d+) ([0-9a-f]+) (\/[\s\S]*)$/.exec(record);
    if (!m) continue;
    const mode = parseInt(m[3] as string, 16);
    stats.set(m[4] as string, { uid: Number(m[1]), gid: Number(m[2]), perm: mode & 0o777, isDir: (mode & S_IFMT) === S_IFDIR });
  }
  return stats;
}

/** Fields of one `find -printf` record, in order; each ends in NUL (names may hold any other byte). */
export const FIND_FORMAT = '%y\\0%Y\\0%u\\0%g\\0%s\\0%l\\0%f\\0';
const FIELDS = 7;

/** Parses the NUL-separated records of FIND_FORMAT; an incomplete last record is dropped. */
export function parseFindRecords(stdout: string): Array<[string, DirEntry]> {
  // Every complete field is followed by a NUL, so all but the last piece of the split are complete.
  const fields = stdout.split('\0').slice(0, -1);
  const out: Array<[string, DirEntry]> = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [type, resolved, owner, group, size, target, name] = fields.slice(i, i + FIELDS) as [string, string, string, string, string, string, string];
    if (name === '' || name === '.' || name === '..') continue;
    if (type === 'd' || (type === 'l' && resolved === 'd')) out.push([name, { kind: 'dir' }]);
    else if (type === 'l') out.push([name, { kind: 'symlink', target }]);
    else out.push([name, { kind: 'file', owner, group, size: Number(size) }]);
  }
  return out;
}
