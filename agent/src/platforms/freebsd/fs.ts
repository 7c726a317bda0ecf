/**
 * The `fs` port on FreeBSD. The original read the directory in-process as root; this port asks the
 * base system's own tools (find, stat, realpath, id) through the runner. FreeBSD's find has no
 * `-printf`, so names come from `find -print0` (any byte but NUL and `/` is safe) and the details
 * from `stat -f`, one line per path, with a per-path fallback for the rare link whose target holds a
 * newline.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import type { DirEntry, FsPort, Identity, PathStat } from '../ports/fs.ts';
import {
  CHAIN_FORMAT,
  ENTRY_FORMAT,
  parseChainStat,
  parseEntryStat,
  parseEntryStats,
  parsePrint0Names,
  parseRealpathSteps,
  toPathStat,
  type EntryStat,
} from './parse/fs.ts';
import { ancestry, childPath, firstByName, pathsToStat } from '../common/fs-paths.ts';
import { checkListing, FS_TIMEOUT_MS as TIMEOUT_MS, identityOf, MAX_LISTING_BYTES } from '../common/posix-fs.ts';

/** Paths per `stat` call: well under kern.argmax even for long names. */
const STAT_BATCH = 256;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Details of each path; a path that vanished since `find` listed it is left out. */
async function statEntries(runner: CommandRunner, paths: string[]): Promise<Map<string, EntryStat>> {
  const out = new Map<string, EntryStat>();
  for (const batch of chunks(paths, STAT_BATCH)) {
    const result = await runner.run(['stat', '-f', ENTRY_FORMAT, '--', ...batch], { timeoutMs: TIMEOUT_MS });
    const parsed = result.code === 0 ? parseEntryStats(result.stdout, batch.length) : null;
    if (parsed) {
      batch.forEach((p, i) => out.set(p, parsed[i] as EntryStat));
      continue;
    }
    // A newline in a link target (or a vanished entry) breaks the one-line-per-path rule: ask one by one.
    for (const p of batch) {
      const one = await runner.run(['stat', '-n', '-f', ENTRY_FORMAT, '--', p], { timeoutMs: TIMEOUT_MS });
      const entry = one.code === 0 ? parseEntryStat(one.stdout) : null;
      if (entry) out.set(p, entry);
    }
  }
  return out;
}

/** Which of the links lead to a directory (`stat -L` falls back to the link itself when broken). */
async function linksToDirs(runner: CommandRunner, links: string[]): Promise<Set<string>> {
  const dirs = new Set<string>();
  for (const batch of chunks(links, STAT_BATCH)) {
    const result = await runner.run(['stat', '-L', '-f', '%HT', '--', ...batch], { timeoutMs: TIMEOUT_MS });
    const lines = result.stdout.split('\n');
    if (result.code === 0 && lines.length === batch.length + 1) {
      batch.forEach((p, i) => lines[i] === 'Directory' && dirs.add(p));
      continue;
    }
    for (const p of batch) {
      const one = await runner.run(['stat', '-L', '-f', '%HT', '--', p], { timeoutMs: TIMEOUT_MS });
      if (one.code === 0 && one.stdout.trim() === 'Directory') dirs.add(p);
    }
  }
  return dirs;
}

async function resolveSteps(runner: CommandRunner, steps: string[]): Promise<Array<string | null>> {
  const batch = await runner.run(['realpath', '-q', '--', ...steps], { timeoutMs: TIMEOUT_MS });
  if (batch.code !== 0 && batch.code !== 1) throw new HostadmError('HOST_ERROR', `realpath failed: ${batch.stderr.trim()}`);
  const parsed = parseRealpathSteps(batch.stdout, steps.length);
  if (parsed) return parsed;
  return Promise.all(
    steps.map(async (s) => {
      const one = await runner.run(['realpath', '--', s], { timeoutMs: TIMEOUT_MS });
      return one.code === 0 ? one.stdout.replace(/\n$/, '') : null;
    }),
  );
}

/**
 * `stat -L` of each path. stat(1) cannot end a record in NUL, so only paths without a newline go in
 * the batch (their one-line records cannot be forged by another path's name); a path holding a
 * newline (a resolved link can) is asked alone, where the whole output is its record.
 */
async function statChain(runner: CommandRunner, paths: string[]): Promise<Map<string, PathStat>> {
  const plain = paths.filter((p) => !p.includes('\n'));
  const stats = new Map<string, PathStat>();
  if (plain.length > 0) {
    const batch = await runner.run(['stat', '-L', '-f', CHAIN_FORMAT, '--', ...plain], { timeoutMs: TIMEOUT_MS });
    // A missing path makes stat exit 1 and is simply absent from the output.
    if (batch.code !== 0 && batch.code !== 1) throw new HostadmError('HOST_ERROR', `stat failed: ${batch.stderr.trim()}`);
    for (const [p, st] of parseChainStat(batch.stdout)) if (plain.includes(p)) stats.set(p, st);
  }
  for (const p of paths.filter((q) => q.includes('\n'))) {
    const one = await runner.run(['stat', '-n', '-L', '-f', '%u %g %Op', '--', p], { timeoutMs: TIMEOUT_MS });
    const m = one.code === 0 ? /^(\d+) (\d+) ([0-7]+)$/.exec(one.stdout) : null;
    if (m) stats.set(p, toPathStat(m[1] as string, m[2] as string, parseInt(m[3] as string, 8)));
  }
  return stats;
}

/**
 * Runs the rest of the argv as `who`: chroot(8) to `/` (a no-op) with -u/-g/-G sets the real,
 * effective and saved ids and exactly their groups (always given, or root's would stay), so the
 * kernel, not our check, has the last word on what may be read.
 */
export function asIdentity(who: Identity): string[] {
  const gids = who.gids.length > 0 ? who.gids : [who.uid];
  return ['chroot', '-u', String(who.uid), '-g', String(gids[0]), '-G', gids.join(','), '/'];
}

export function freebsdFs(ctx: FreebsdContext): FsPort {
  const { runner } = ctx;
  return {
    async inspect(path) {
      const resolved = await resolveSteps(runner, ancestry(path));
      return { resolved, stats: await statChain(runner, pathsToStat(resolved)) };
    },

    identity: (user) => identityOf(runner, user),

    async list(dir, limit, as) {
      // Every read of the directory runs as the caller when there is one (see asIdentity).
      const run: CommandRunner = as ? { run: (argv, options) => runner.run([...asIdentity(as), ...argv], options) } : runner;
      const found = await run.run(['find', dir, '-mindepth', '1', '-maxdepth', '1', '-print0'], {
        timeoutMs: TIMEOUT_MS,
        maxOutputBytes: MAX_LISTING_BYTES,
      });
      const names = found.truncated ? [] : parsePrint0Names(found.stdout);
      checkListing(dir, found, names.length, as);
      // Cut before asking for details, so a huge directory costs one find, not a stat per entry.
      const { entries: kept, total } = firstByName(
        names.map((n): [string, null] => [n, null]),
        limit,
      );
      const paths = [...kept.keys()].map((n) => childPath(dir, n));
      const details = await statEntries(run, paths);
      const links = paths.filter((p) => details.get(p)?.type === 'Symbolic Link');
      const dirLinks = links.length > 0 ? await linksToDirs(run, links) : new Set<string>();
      const entries = new Map<string, DirEntry>();
      for (const name of kept.keys()) {
        const path = childPath(dir, name);
        const d = details.get(path);
        // Gone since find listed it.
        if (!d) continue;
        if (d.type === 'Directory' || dirLinks.has(path)) entries.set(name, { kind: 'dir' });
        else if (d.type === 'Symbolic Link') entries.set(name, { kind: 'symlink', target: d.target });
        else entries.set(name, { kind: 'file', owner: d.owner, group: d.group, size: d.size });
      }
      return { entries, total };
    },
  };
}
