/**
 * The `fs` port: what a platform tells about paths and directories. The handler decides who may
 * list what (the caller's own permissions, checked with common/fs-paths.ts); a port only reports
 * what is on the host, as root sees it.
 */

/** A path as `stat` (following symbolic links) reports it. */
export interface PathStat {
  uid: number;
  gid: number;
  /** Permission bits only (`0o755`); set-id and sticky bits are dropped. */
  perm: number;
  isDir: boolean;
}

export interface PathInspection {
  /**
   * For each path of `ancestry(path)`, in order: where it leads with every symbolic link followed,
   * or null when it does not resolve (a missing component, a dangling link).
   */
  resolved: ReadonlyArray<string | null>;
  /**
   * `stat` (following links) of every resolved path and of each of its ancestors, keyed by path.
   * A path missing here does not exist.
   */
  stats: ReadonlyMap<string, PathStat>;
}

/** Who the caller is on the host, for permission checks. */
export interface Identity {
  uid: number;
  gids: readonly number[];
}

export type DirEntry = { kind: 'dir' } | { kind: 'symlink'; target: string } | { kind: 'file'; owner: string; group: string; size: number };

export interface DirListing {
  /** At most `limit` entries: the first ones by name (code-unit order). `.` and `..` never appear. */
  entries: ReadonlyMap<string, DirEntry>;
  /** How many entries the directory holds, so a caller can tell that the listing was cut. */
  total: number;
}

export interface FsPort {
  /** Resolves each step of `path` and stats every directory a lookup of it passes through. */
  inspect(path: string): Promise<PathInspection>;
  /** The account's uid and group ids, or null when there is no such account. */
  identity(user: string): Promise<Identity | null>;
  /**
   * The entries of `dir` (a canonical path of an existing directory), hidden ones included. A symbolic
   * link to a directory is a directory (as the original reported it); any other link is a `symlink`.
   * With `as`, the host reads the directory with that identity's permissions, so a path changed
   * between the handler's check and the listing still cannot show what the caller may not read; the
   * kernel's refusal is a FORBIDDEN error.
   */
  list(dir: string, limit: number, as: Identity | null): Promise<DirListing>;
}
