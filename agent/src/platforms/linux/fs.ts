/**
 * The `fs` port on Linux. Everything goes through the runner (GNU coreutils and findutils), so a
 * runner aimed into a namespace lists that namespace's files and names owners from its /etc.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import type { FsPort, Identity } from '../ports/fs.ts';
import { FIND_FORMAT, parseFindRecords, parseStatRecords, STAT_FORMAT } from './parse/fs.ts';
import { ancestry, firstByName, pathsToStat } from '../common/fs-paths.ts';
import { checkListing, FS_TIMEOUT_MS as TIMEOUT_MS, MAX_LISTING_BYTES, identityOf } from '../common/posix-fs.ts';

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
