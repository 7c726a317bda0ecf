import { hostname } from 'node:os';
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { ClassPorts, Platform, PlatformOptions } from '../types.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { groupsFromId } from '../accounts-id.ts';

/** What every FreeBSD class port is built from. All host access goes through `runner`. */
export interface FreebsdContext {
  readonly runner: CommandRunner;
  readonly dataDir: string;
}

/** One line per class that FreeBSD serves. */
function freebsdPorts(_ctx: FreebsdContext): Partial<ClassPorts> {
  return {
  };
}

/** The real FreeBSD host (the interface's home). */
export function createFreebsdPlatform(options: PlatformOptions): Platform {
  const runner = options.runner;
  const ctx: FreebsdContext = { runner, dataDir: options.dataDir };
  return {
    kind: 'freebsd',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: freebsdPorts(ctx),
    accounts: {
      async verifyPassword() {
        throw unsupported('password sign-in is not available on the freebsd platform yet; use auth_ssl');
      },
      groupsOf: (user) => groupsFromId(runner, user),
    },
    async hostname() {
      const result = await runner.run(['hostname', '-s'], { timeoutMs: 5000 });
      return result.code === 0 ? result.stdout.trim() : (hostname().split('.')[0] ?? hostname());
    },
    async close() {},
  };
}
