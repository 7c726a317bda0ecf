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
import { existsSync } from 'node:fs';
import { freebsdVm } from './vm.ts';
import { iohyveVm } from './vm-iohyve.ts';
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
  /** Which bhyve manager drives the vm class (see `vmToolOf`). */
  readonly vmTool?: FreebsdVmTool | null;
}

export type FreebsdVmTool = 'vm-bhyve' | 'iohyve';

const VM_BHYVE = '/usr/local/sbin/vm';
const IOHYVE = '/usr/local/sbin/iohyve';

/** vm-bhyve where installed (the maintained one), else iohyve where installed, else none. */
function vmToolOf(option: FreebsdVmTool | null | undefined): FreebsdVmTool | null {
  if (option !== undefined) return option;
  if (existsSync(VM_BHYVE)) return 'vm-bhyve';
  return existsSync(IOHYVE) ? 'iohyve' : null;
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
    ...(ctx.vmTool === 'vm-bhyve' ? { vm: freebsdVm(ctx) } : ctx.vmTool === 'iohyve' ? { vm: iohyveVm(ctx) } : {}),
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
  const ctx: FreebsdContext = {
    runner,
    dataDir: options.dataDir,
    ...(options.maxIsoBytes ? { maxIsoBytes: options.maxIsoBytes } : {}),
    vmTool: vmToolOf(options.freebsdVmTool),
  };
  return {
    kind: 'freebsd',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: freebsdPorts(ctx),
    unavailable: !ctx.vmTool ? { vm: `neither vm-bhyve (${VM_BHYVE}) nor iohyve (${IOHYVE}) is installed (pkg install vm-bhyve)` } : {},
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
