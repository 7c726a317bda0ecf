/**
 * ZFS on Linux: the shared `zpool`/`zfs` command line (OpenZFS, or zfs-fuse). Served only where the
 * tools are installed, so `query` does not offer `zfs` and `snapshot` on a host without them.
 */
import { existsSync } from 'node:fs';
import type { ZfsPort } from '../ports/zfs.ts';
import { zfsCli } from '../common/zfs-cli.ts';
import type { LinuxContext } from './index.ts';

const TOOL_DIRS = ['/sbin', '/usr/sbin', '/usr/local/sbin', '/bin', '/usr/bin'];

export function hasZfsTools(): boolean {
  return ['zpool', 'zfs'].every((tool) => TOOL_DIRS.some((dir) => existsSync(`${dir}/${tool}`)));
}

export function linuxZfs(ctx: LinuxContext): ZfsPort | null {
  return (ctx.zfsTools ?? hasZfsTools()) ? zfsCli(ctx.runner) : null;
}
