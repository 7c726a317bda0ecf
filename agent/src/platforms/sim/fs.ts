/** The `fs` port of the simulated host: lookups over the persisted tree of `fs-tree.ts`. */
import type { SimContext } from './index.ts';
import type { DirEntry, FsPort, PathStat } from '../ports/fs.ts';
import { ancestry, childPath, firstByName, pathsToStat } from '../common/fs-paths.ts';
import { seedFs, type SimFsNode } from './fs-tree.ts';

/** As many links as FreeBSD follows in one lookup (MAXSYMLINKS) before ELOOP. */
const MAX_LINKS = 32;

interface Found {
  node: SimFsNode;
  /** The path with every link before the last component resolved (and the last one too when followed). */
  path: string;
}

/** Looks `path` up from the root; `follow` resolves a link in the last component too (stat vs lstat). */
function lookup(root: SimFsNode, path: string, follow: boolean, budget = { links: MAX_LINKS }): Found | null {
  let node = root;
  let at = '/';
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  for (const [i, part] of parts.entries()) {
    if (node.type !== 'dir') return null;
    if (part === '..') {
      at = at === '/' ? '/' : at.slice(0, at.lastIndexOf('/')) || '/';
      const parent = lookup(root, at, true, budget);
      if (!parent) return null;
      node = parent.node;
      continue;
    }
    const next = Object.hasOwn(node.children, part) ? node.children[part] : undefined;
    if (!next) return null;
    const last = i === parts.length - 1;
    if (next.type === 'link' && (!last || follow)) {
      if (--budget.links < 0) return null;
      const base = next.target.startsWith('/') ? next.target : `${at}/${next.target}`;
      const resolved = lookup(root, base, true, budget);
      if (!resolved) return null;
      node = resolved.node;
      at = resolved.path;
      continue;
    }
    node = next;
    at = childPath(at, part);
  }
  return { node, path: at };
}

function statOf(node: SimFsNode): PathStat {
  return node.type === 'link'
    ? { uid: node.uid, gid: node.gid, perm: 0o777, isDir: false }
    : { uid: node.uid, gid: node.gid, perm: node.mode & 0o777, isDir: node.type === 'dir' };
}

export function simFs(ctx: SimContext): FsPort {
  const tree = ctx.store.slice('fs', seedFs);
  const userName = (uid: number) => Object.values(ctx.accounts.get().accounts).find((a) => a.uid === uid)?.name ?? String(uid);
  const groupName = (gid: number) => Object.values(ctx.accounts.get().groups).find((g) => g.gid === gid)?.name ?? String(gid);

  return {
    async inspect(path) {
      const root = tree.get().root;
      const resolved = ancestry(path).map((step) => lookup(root, step, true)?.path ?? null);
      const stats = new Map<string, PathStat>();
      for (const p of pathsToStat(resolved)) {
        const found = lookup(root, p, true);
        if (found) stats.set(p, statOf(found.node));
      }
      return { resolved, stats };
    },

    async identity(user) {
      const state = ctx.accounts.get();
      const account = Object.hasOwn(state.accounts, user) ? state.accounts[user] : undefined;
      if (!account) return null;
      const secondary = Object.values(state.groups)
        .filter((g) => g.members.includes(user))
        .map((g) => g.gid);
      return { uid: account.uid, gids: [...new Set([account.gid, ...secondary])] };
    },

    // The sim tree changes only between restarts, so there is no check-then-list race to close.
    async list(dir, limit) {
      const root = tree.get().root;
      const found = lookup(root, dir, true);
      if (found?.node.type !== 'dir') throw new Error(`sim fs: ${dir} is not a directory`);
      const entries: Array<[string, DirEntry]> = Object.entries(found.node.children).map(([name, node]) => {
        if (node.type === 'dir') return [name, { kind: 'dir' }];
        if (node.type === 'link') {
          const target = lookup(root, childPath(found.path, name), true);
          return [name, target?.node.type === 'dir' ? { kind: 'dir' } : { kind: 'symlink', target: node.target }];
        }
        return [name, { kind: 'file', owner: userName(node.uid), group: groupName(node.gid), size: node.size }];
      });
      return firstByName(entries, limit);
    },
  };
}
