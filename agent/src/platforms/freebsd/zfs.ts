/** ZFS on FreeBSD: in the base system (`/sbin/zpool`, `/sbin/zfs`), the shared command line. */
import type { ZfsPort } from '../ports/zfs.ts';
import { zfsCli } from '../common/zfs-cli.ts';
import type { FreebsdContext } from './index.ts';

export function freebsdZfs(ctx: FreebsdContext): ZfsPort {
  return zfsCli(ctx.runner);
}
