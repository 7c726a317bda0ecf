import { hostname } from 'node:os';
import type { ClassPorts, Platform, PlatformOptions } from '../types.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { groupsFromId } from '../common/accounts-id.ts';
import { freebsdUsers } from './users.ts';
import { freebsdPasswordVerifier } from './password.ts';
import { freebsdSystemmanagerPort } from './systemmanager/index.ts';
import { freebsdServices } from './services.ts';
import { freebsdFs } from './fs.ts';
import { freebsdNetwork } from './network.ts';
import { freebsdFirewall } from './firewall.ts';
import { freebsdPowerd } from './powerd.ts';
import { freebsdMoused } from './moused.ts';
import { freebsdVm } from './vm.ts';
import { freebsdJail } from './jail.ts';
import { freebsdUpdate } from './update.ts';
import { freebsdPkg } from './pkg.ts';
import { freebsdBeadm } from './beadm.ts';
import { freebsdZfs } from './zfs.ts';
import { zfsReplication } from '../common/zfs-replication.ts';

/** What every FreeBSD class port is built from. All host access goes through `runner`. */
export interface FreebsdContext {
  readonly runner: CommandRunner;
  readonly dataDir: string;
  readonly maxIsoBytes?: number;
}

/** One line per class that FreeBSD serves. */
function freebsdPorts(ctx: FreebsdContext): Partial<ClassPorts> {
  return {
    users: freebsdUsers(ctx),
    systemmanager: freebsdSystemmanagerPort(ctx),
    services: freebsdServices(ctx),
    fs: freebsdFs(ctx),
    network: freebsdNetwork(ctx),
    firewall: freebsdFirewall(ctx),
    powerd: freebsdPowerd(ctx),
    moused: freebsdMoused(ctx),
    vm: freebsdVm(ctx),
    jail: freebsdJail(ctx),
    update: freebsdUpdate(ctx),
    pkg: freebsdPkg(ctx),
    beadm: freebsdBeadm(ctx),
    zfs: freebsdZfs(ctx),
    replication: zfsReplication({ runner: ctx.runner, dataDir: ctx.dataDir }),
  };
}

/** The real FreeBSD host (the interface's home). */
export function createFreebsdPlatform(options: PlatformOptions): Platform {
  const runner = options.runner;
  const ctx: FreebsdContext = { runner, dataDir: options.dataDir, ...(options.maxIsoBytes ? { maxIsoBytes: options.maxIsoBytes } : {}) };
  return {
    kind: 'freebsd',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: freebsdPorts(ctx),
    accounts: {
      verifyPassword: freebsdPasswordVerifier(),
      groupsOf: (user) => groupsFromId(runner, user),
    },
    async hostname() {
      const result = await runner.run(['hostname', '-s'], { timeoutMs: 5000 });
      return result.code === 0 ? result.stdout.trim() : (hostname().split('.')[0] ?? hostname());
    },
    async close() {},
  };
}
