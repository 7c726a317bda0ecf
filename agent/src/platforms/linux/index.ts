import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { ClassPorts, Platform, PlatformOptions } from '../types.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { groupsFromId } from '../common/accounts-id.ts';
import { linuxUsers } from './users.ts';
import { linuxPasswordVerifier } from './password.ts';
import { linuxServices } from './services/index.ts';
import { linuxFs } from './fs.ts';
import { linuxNetwork } from './network.ts';
import { linuxSystemmanagerPort } from './systemmanager/index.ts';
import { linuxFirewall } from './firewall.ts';
import { linuxPowerd } from './powerd.ts';
import { linuxVm } from './vm/index.ts';
import { linuxJail } from './jail.ts';
import { linuxUpdate } from './update.ts';
import { linuxPkg } from './pkg.ts';

/** What every Linux class port is built from. All host access goes through `runner` or the roots. */
export interface LinuxContext {
  readonly runner: CommandRunner;
  readonly procRoot: string;
  readonly sysRoot: string;
  readonly dataDir: string;
  readonly maxIsoBytes?: number;
  readonly jailRoot: string;
  readonly cgroupRoot: string;
}

/** One line per class that Linux serves. */
function linuxPorts(ctx: LinuxContext): Partial<ClassPorts> {
  // Left out where the host has no cpufreq (see powerd.ts), so `query` does not list it.
  const powerd = linuxPowerd(ctx);
  // Left out where the host has no apt and dpkg (see pkg.ts).
  const pkg = linuxPkg(ctx);
  return {
    ...(powerd ? { powerd } : {}),
    ...(pkg ? { pkg } : {}),
    users: linuxUsers(ctx),
    services: linuxServices(ctx),
    fs: linuxFs(ctx),
    network: linuxNetwork(ctx),
    systemmanager: linuxSystemmanagerPort(ctx),
    firewall: linuxFirewall(ctx),
    vm: linuxVm({ runner: ctx.runner, dataDir: ctx.dataDir, ...(ctx.maxIsoBytes ? { maxIsoBytes: ctx.maxIsoBytes } : {}) }),
    jail: linuxJail(ctx, { jailRoot: ctx.jailRoot, cgroupRoot: ctx.cgroupRoot }),
    // apt-based only: a host without apt-get leaves update out of query (update.ts says what it does).
    ...(existsSync('/usr/bin/apt-get') ? { update: linuxUpdate(ctx) } : {}),
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
    ...(options.maxIsoBytes ? { maxIsoBytes: options.maxIsoBytes } : {}),
    jailRoot: resolve(options.jailRoot ?? join(options.dataDir, 'jails')),
    cgroupRoot: options.cgroupRoot ?? '/sys/fs/cgroup',
  };
  return {
    kind: 'linux',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: linuxPorts(ctx),
    accounts: {
      verifyPassword: linuxPasswordVerifier(options.pamService),
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
