import { readFileSync } from 'node:fs';
import { platform as osPlatform } from 'node:os';
import type { Platform, PlatformKind, PlatformOptions } from './types.ts';
import { createSimPlatform } from './sim/index.ts';
import { createLinuxPlatform } from './linux/index.ts';
import { createFreebsdPlatform } from './freebsd/index.ts';

export function detectPlatform(): PlatformKind {
  const os = osPlatform();
  if (os === 'freebsd') return 'freebsd';
  if (os === 'linux') return 'linux';
  return 'sim';
}

export function createPlatform(kind: PlatformKind | 'auto', options: PlatformOptions): Platform {
  const resolved = kind === 'auto' ? detectPlatform() : kind;
  switch (resolved) {
    case 'sim':
      return createSimPlatform(options);
    case 'linux':
      return createLinuxPlatform({ ...options, adminGroup: options.adminGroup ?? defaultLinuxAdminGroup() });
    case 'freebsd':
      return createFreebsdPlatform(options);
  }
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
