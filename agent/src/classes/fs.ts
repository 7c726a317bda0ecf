/**
 * `fs`: directory listing. The original listed any directory as root for any signed-in user; here a
 * limited user lists only what their own account could list (read and search on the directory,
 * search on every directory on the way, through links included). Full-access users list anything.
 */
import { fs } from '@hostadm/shared/api/fs.ts';
import { badRequest, forbidden } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { DirEntry, Identity, PathInspection } from '../platforms/ports/fs.ts';
import { ancestry, permits } from '../platforms/common/fs-paths.ts';

/**
 * The most entries one reply carries (the first ones by name). The contract has no field to say
 * that a listing was cut, so the cut is logged on the agent and documented instead.
 */
export const MAX_DIRLIST_ENTRIES = 10_000;

type WireEntry = { dir: true } | { symlink: true; target: string } | { group: string; owner: string; size: number };

export const fsImpl = implementClass(fs, (services) => {
  const port = services.platform.ports.fs;
  if (!port) return null;
  return {
    async dirlist({ dir }, ctx) {
      let caller: Identity | null = null;
      if (ctx.session.level !== 'full') {
        caller = await port.identity(ctx.session.user);
        if (!caller) throw forbidden(`admin/fs dirlist: the account ${ctx.session.user} no longer exists on this host`);
      }
      const target = listableDirectory(dir, await port.inspect(dir), caller);
      const listing = await port.list(target, MAX_DIRLIST_ENTRIES, caller);
      if (listing.total > listing.entries.size) {
        services.logger.warn({ dir, total: listing.total, sent: listing.entries.size }, 'dirlist cut to the first entries by name');
      }
      // fromEntries defines own properties, so an entry named `__proto__` stays an entry.
      return { dirlist: Object.fromEntries([...listing.entries].map(([name, entry]) => [name, toWire(entry)])) };
    },
  };
});

function toWire(entry: DirEntry): WireEntry {
  switch (entry.kind) {
    case 'dir':
      return { dir: true };
    case 'symlink':
      return { symlink: true, target: entry.target };
    case 'file':
      return { group: entry.group, owner: entry.owner, size: entry.size };
  }
}

const noSuchDirectory = (dir: string) => badRequest(`dir: no such directory: ${dir}`, [{ field: 'dir', message: 'no such directory' }]);
const notADirectory = (where: string, isTarget: boolean) =>
  badRequest(`dir: not a directory: ${where}`, [{ field: 'dir', message: isTarget ? 'not a directory' : `${where} is not a directory` }]);
const denied = (dir: string, where: string, isTarget: boolean) =>
  forbidden(`admin/fs dirlist: permission denied: ${isTarget ? dir : `${where} (on the way to ${dir})`}`);

/**
 * The canonical path to list, after walking `dir` the way the kernel would for `caller` (null: no
 * permission checks): every step, and every directory a link at that step leads through, needs
 * search permission; the directory itself needs read and search. Each step is looked at only after
 * the caller was allowed through the ones before it, so a refusal never tells what lies behind a
 * directory the caller cannot enter.
 */
export function listableDirectory(dir: string, found: PathInspection, caller: Identity | null): string {
  const literal = ancestry(dir);
  literal.forEach((step, i) => {
    const resolved = found.resolved[i];
    if (resolved === null || resolved === undefined) throw noSuchDirectory(dir);
    const chain = ancestry(resolved);
    chain.forEach((path, j) => {
      const isTarget = i === literal.length - 1 && j === chain.length - 1;
      const shown = path === step || literal.includes(path) ? path : `${path} (through a link)`;
      const stat = found.stats.get(path);
      if (!stat) throw noSuchDirectory(dir);
      if (!stat.isDir) throw notADirectory(shown, isTarget);
      if (caller && !permits(stat, caller, isTarget ? 5 : 1)) throw denied(dir, shown, isTarget);
    });
  });
  return found.resolved.at(-1) as string;
}
