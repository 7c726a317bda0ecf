import { hostname } from 'node:os';
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { Platform, PlatformOptions } from '../types.ts';
import { groupsFromId } from '../accounts-id.ts';

/** The real FreeBSD host (the interface's home). Class ports are added per class. */
export function createFreebsdPlatform(options: PlatformOptions): Platform {
  const runner = options.runner;
  return {
    kind: 'freebsd',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: {},
    accounts: {
      async verifyPassword() {
        throw unsupported('password sign-in is not available on the freebsd platform yet; use auth_ssl');
      },
      groupsOf: (user) => groupsFromId(runner, user),
    },
    async hostname() {
      return hostname().split('.')[0] ?? hostname();
    },
    async close() {},
  };
}
