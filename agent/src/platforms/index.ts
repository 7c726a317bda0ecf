import { readFileSync } from 'node:fs';
import { platform as osPlatform } from 'node:os';
import type { Platform, PlatformKind, PlatformOptions } from './types.ts';

export function detectPlatform(): PlatformKind {
  const os = osPlatform();
  if (os === 'freebsd') return 'freebsd';
  if (os === 'linux') return 'linux';
  return 'sim';
}

/**
 * The platform of this kind. Only its modules load: an agent runs one platform, and each is 20-35
 * modules (a sim agent, as in `hostadm up`, skipped ~64 for Linux and FreeBSD: ~2 MB resident).
 */
export async function createPlatform(kind: PlatformKind | 'auto', options: PlatformOptions): Promise<Platform> {
  const resolved = kind === 'auto' ? detectPlatform() : kind;
  switch (resolved) {
    case 'sim':
      return (await import('./sim/index.ts')).createSimPlatform(options);
    case 'linux':
      return (await import('./linux/index.ts')).createLinuxPlatform({ ...options, adminGroup: options.adminGroup ?? defaultLinuxAdminGroup() });
    case 'freebsd':
      return (await import('./freebsd/index.ts')).createFreebsdPlatform(options);
  }
}

/** Loads the modules of the platform of this kind without making it (for a process that restarts once its modules are loaded). */
export async function loadPlatformModules(kind: PlatformKind | 'auto'): Promise<void> {
  const resolved = kind === 'auto' ? detectPlatform() : kind;
  if (resolved === 'sim') await import('./sim/index.ts');
  else if (resolved === 'linux') await import('./linux/index.ts');
  else await import('./freebsd/index.ts');
}

/** A Linux distribution whose admins are in `sudo` rather than `wheel` (Debian, Ubuntu). */
export function defaultLinuxAdminGroup(): string {
  try {
    const release = readFileSync('/etc/os-release', 'utf8');
    return /^ID(_LIKE)?=.*\b(debian|ubuntu)\b/m.test(release) ? 'sudo' : 'wheel';
  } catch {
    return 'wheel';
  }
}
