import { hostname } from 'node:os';
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { Platform, PlatformOptions } from '../types.ts';
import { groupsFromId } from '../accounts-id.ts';

/** The real Linux host. Class ports are added per class (users, services, ...). */
export function createLinuxPlatform(options: PlatformOptions): Platform {
  const runner = options.runner;
  return {
    kind: 'linux',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: {},
    accounts: {
      async verifyPassword() {
        // Password sign-in against the system's hashes comes with the users class (PAM); until then
        // this platform offers key sign-in (auth_ssl) only, and says so rather than guessing.
        throw unsupported('password sign-in is not available on the linux platform yet; use auth_ssl');
      },
      groupsOf: (user) => groupsFromId(runner, user),
    },
    async hostname() {
      return hostname().split('.')[0] ?? hostname();
    },
    async close() {},
  };
}
