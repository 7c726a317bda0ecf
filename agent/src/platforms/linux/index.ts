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
import { beadmUnavailable, linuxBeadm } from './beadm.ts';
import { linuxZfs } from './zfs.ts';
import { zfsReplication } from '../common/zfs-replication.ts';

/** What every Linux class port is built from. All host access goes through `runner` or the roots. */
export interface LinuxContext {
  readonly runner: CommandRunner;
  readonly procRoot: string;
  readonly sysRoot: string;
  readonly dataDir: string;
  readonly maxIsoBytes?: number;
  readonly jailRoot: string;
  readonly cgroupRoot: string;
  /** Whether zpool/zfs are installed; undefined: look for them on the standard paths. */
  readonly zfsTools?: boolean;
}

/** One line per class that Linux serves. */
function linuxPorts(ctx: LinuxContext): Partial<ClassPorts> {
  // Left out where the host has no cpufreq (see powerd.ts), so `query` does not list it.
  const powerd = linuxPowerd(ctx);
  // Left out where the host has no apt and dpkg (see pkg.ts).
  const pkg = linuxPkg(ctx);
  // Only on a ZFS root with zectl; elsewhere `unavailable` says why (beadm.ts).
  const beadm = linuxBeadm(ctx);
  const zfs = linuxZfs(ctx);
  return {
    ...(powerd ? { powerd } : {}),
    ...(pkg ? { pkg } : {}),
    ...(beadm ? { beadm } : {}),
    // Replication goes wherever ZFS is: it needs only the zfs command line and ssh.
    ...(zfs ? { zfs, replication: zfsReplication({ runner: ctx.runner, dataDir: ctx.dataDir }) } : {}),
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

/** Classes this host cannot serve and why (left out of `query`, 501 with the reason). */
function unavailableClasses(ctx: LinuxContext): Partial<Record<keyof ClassPorts, string>> {
  const beadm = beadmUnavailable(ctx);
  return beadm === null ? {} : { beadm };
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
    zfsTools: options.zfsTools,
  };
  return {
    kind: 'linux',
    adminGroup: options.adminGroup ?? 'wheel',
    limitedGroup: 'operator',
    runner,
    ports: linuxPorts(ctx),
    unavailable: unavailableClasses(ctx),
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
