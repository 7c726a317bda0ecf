import { hostname } from 'node:os';
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { ClassPorts, Platform, PlatformOptions } from '../types.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { groupsFromId } from '../accounts-id.ts';

/** What every Linux class port is built from. All host access goes through `runner` or the roots. */
export interface LinuxContext {
  readonly runner: CommandRunner;
  readonly procRoot: string;
  readonly sysRoot: string;
  readonly dataDir: string;
}

/** One line per class that Linux serves. */
function linuxPorts(_ctx: LinuxContext): Partial<ClassPorts> {
  return {
  };
}

/** The real Linux host. */
export function createLinuxPlatform(options: PlatformOptions): Platform {
  const runner = options.runner;
  const ctx: LinuxContext = {
    runner,
    procRoot: options.procRoot ?? '/proc',
    sysRoot: options.sysRoot ?? '/sys',
    dataDir: options.dataDir,
  };
  return {
    kind: 'linux',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: linuxPorts(ctx),
    accounts: {
      async verifyPassword() {
        // Password sign-in against the system's hashes comes with the users class (PAM); until then
        // this platform offers key sign-in (auth_ssl) only, and says so rather than guessing.
        throw unsupported('password sign-in is not available on the linux platform yet; use auth_ssl');
      },
      groupsOf: (user) => groupsFromId(runner, user),
    },
    async hostname() {
      const result = await runner.run(['hostname'], { timeoutMs: 5000 });
      const name = result.code === 0 ? result.stdout.trim() : hostname();
      return name.split('.')[0] || name;
    },
    async close() {},
  };
}
