/**
 * The `fs` port on Linux. Everything goes through the runner (GNU coreutils and findutils), so a
 * runner aimed into a namespace lists that namespace's files and names owners from its /etc.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import type { DirEntry, FsPort, Identity, PathStat } from '../ports/fs.ts';
import { ancestry, firstByName, pathsToStat } from '../common/fs-paths.ts';
import { checkListing, FS_TIMEOUT_MS as TIMEOUT_MS, MAX_LISTING_BYTES, identityOf } from '../common/posix-fs.ts';

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

/** One step alone (a link loop makes realpath fail for it, which would misalign the batch). */
async function realpathOne(runner: CommandRunner, step: string): Promise<string | null> {
  const result = await runner.run(['realpath', '-m', '-z', '--', step], { timeoutMs: TIMEOUT_MS });
  return result.code === 0 ? (result.stdout.split('\0')[0] ?? null) : null;
}

/**
 * Runs the rest of the argv as `who` (setpriv from util-linux): real, effective and saved ids and
 * exactly their groups, so the kernel, not our check, has the last word on what may be read.
 */
export function asIdentity(who: Identity): string[] {
  const gids = who.gids.length > 0 ? who.gids : [who.uid];
  return ['setpriv', `--reuid=${who.uid}`, `--regid=${gids[0]}`, `--groups=${gids.join(',')}`, '--'];
}

export function linuxFs(ctx: LinuxContext): FsPort {
  const { runner } = ctx;
  return {
    async inspect(path) {
      const steps = ancestry(path);
      // -m: one answer per step even where nothing exists yet; -z: NUL-terminated, so any name is safe.
      const real = await runner.run(['realpath', '-m', '-z', '--', ...steps], { timeoutMs: TIMEOUT_MS });
      if (real.code !== 0 && real.code !== 1) throw new HostadmError('HOST_ERROR', `realpath failed: ${real.stderr.trim()}`);
      const answers = real.stdout.split('\0').slice(0, -1);
      const resolved = answers.length === steps.length ? answers : await Promise.all(steps.map((s) => realpathOne(runner, s)));
      const paths = pathsToStat(resolved);
      // Nothing resolved (not even `/`): nothing to stat, and the walk reports the missing step.
      if (paths.length === 0) return { resolved, stats: new Map() };
      const stat = await runner.run(['stat', '-L', '--printf', STAT_FORMAT, '--', ...paths], { timeoutMs: TIMEOUT_MS });
      // A missing path makes stat exit 1 and is simply absent from the output.
      if (stat.code !== 0 && stat.code !== 1) throw new HostadmError('HOST_ERROR', `stat failed: ${stat.stderr.trim()}`);
      return { resolved, stats: parseStatRecords(stat.stdout) };
    },

    identity: (user) => identityOf(runner, user),

    async list(dir, limit, as) {
      const find = ['find', dir, '-mindepth', '1', '-maxdepth', '1', '-printf', FIND_FORMAT];
      const result = await runner.run(as ? [...asIdentity(as), ...find] : find, { timeoutMs: TIMEOUT_MS, maxOutputBytes: MAX_LISTING_BYTES });
      const records = result.truncated ? [] : parseFindRecords(result.stdout);
      checkListing(dir, result, records.length, as);
      return firstByName(records, limit);
    },
  };
}
