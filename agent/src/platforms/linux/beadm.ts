/**
 * Linux boot environments exist only on a ZFS root managed by zectl (the one BE manager for Linux;
 * Debian does not package it). Anywhere else the class is not served: `query` leaves `admin/beadm`
 * out and every action answers 501 with `beadmUnavailable`'s reason. zectl cannot mount at a chosen
 * directory (501 naming `mountpoint`) and has no forced unmount: `umountbe` is as forceful as
 * `zectl unmount` is.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SAFE_ENV } from '../../runner/runner.ts';
import type { LinuxContext } from './index.ts';
import type { BeadmPort } from '../ports/beadm.ts';
import { beToolPort, ZECTL } from '../common/be-tool.ts';

/** The filesystem type mounted at `/`, from a /proc/mounts text (the last mount of `/` wins). */
export function rootFsType(mounts: string): string | undefined {
  let type: string | undefined;
  for (const line of mounts.split('\n')) {
    const [, mountpoint, fstype] = line.split(' ');
    if (mountpoint === '/' && fstype) type = fstype;
  }
  return type;
}

function onPath(command: string): boolean {
  return (SAFE_ENV.PATH ?? '').split(':').some((dir) => existsSync(join(dir, command)));
}

/** Why this host has no boot environments, or null when it has (ZFS root and zectl). */
export function beadmUnavailable(ctx: Pick<LinuxContext, 'procRoot'>, hasCommand: (c: string) => boolean = onPath): string | null {
  let mounts = '';
  try {
    mounts = readFileSync(join(ctx.procRoot, 'mounts'), 'utf8');
  } catch {
    // unreadable: treated as not ZFS
  }
  const root = rootFsType(mounts);
  if (root !== 'zfs') return `boot environments need a ZFS root filesystem managed by zectl; / is ${root ?? 'of an unknown type'}`;
  if (!hasCommand('zectl')) return 'boot environments need zectl (the root is ZFS, but zectl is not installed)';
  return null;
}

export function linuxBeadm(ctx: LinuxContext): BeadmPort | null {
  if (beadmUnavailable(ctx) !== null) return null;
  return beToolPort(ctx.runner, async () => ZECTL);
}
