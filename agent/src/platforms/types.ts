/**
 * The platform seam. A handler never runs a host command itself: it calls the port of its class on
 * the platform the agent was started with (`sim`, `linux`, `freebsd`), each in its own folder with
 * one same-named file per class (Hono's adapter pattern).
 */
import type { CommandRunner } from '../runner/runner.ts';
import type { ServicesPort } from './ports/services.ts';
import type { FsPort } from './ports/fs.ts';
import type { NetworkPort } from './ports/network.ts';
import type { SystemmanagerPort } from './ports/systemmanager.ts';
import type { UsersPort } from './ports/users.ts';
import type { FirewallPort } from './ports/firewall.ts';
import type { PowerdPort } from './ports/powerd.ts';
import type { MousedPort } from './ports/moused.ts';
import type { VmPort } from './ports/vm.ts';
import type { JailPort } from './ports/jail.ts';
import type { UpdatePort } from './ports/update.ts';
import type { PkgPort } from './ports/pkg.ts';
import type { BeadmPort } from './ports/beadm.ts';
import type { ZfsPort } from './ports/zfs.ts';
import type { ReplicationEngine } from './ports/replication.ts';

export type PlatformKind = 'sim' | 'linux' | 'freebsd';

/** Sign-in questions every platform answers. */
export interface AccountsPort {
  /** Whether the password is right. A wrong password or unknown user is `false`, never an exception. */
  verifyPassword(user: string, password: string): Promise<boolean>;
  /** The user's group names, or null when the account does not exist. */
  groupsOf(user: string): Promise<string[] | null>;
}

/**
 * Ports of the admin classes: one line per class, its type declared in `ports/<class>.ts` and
 * implemented as `platforms/<kind>/<class>.ts`. A platform leaves a class out when it cannot serve
 * it, and `query` then does not list it.
 */
export interface ClassPorts {
  services: ServicesPort;
  fs: FsPort;
  network: NetworkPort;
  systemmanager: SystemmanagerPort;
  users: UsersPort;
  firewall: FirewallPort;
  powerd: PowerdPort;
  moused: MousedPort;
  vm: VmPort;
  jail: JailPort;
  update: UpdatePort;
  pkg: PkgPort;
  beadm: BeadmPort;
  /** `zfs`, and the ZFS side of `snapshot`. */
  zfs: ZfsPort;
  /** The replication engine of `snapshot` (ports/replication.ts). */
  replication: ReplicationEngine;
}

export interface Platform {
  readonly kind: PlatformKind;
  /** Group whose members get full access (`wheel`; configurable on Linux, where it is often `sudo`). */
  readonly adminGroup: string;
  /** Group whose members get limited access. */
  readonly limitedGroup: string;
  readonly accounts: AccountsPort;
  readonly ports: Partial<ClassPorts>;
  /**
   * Classes this host cannot serve, with the reason: they are left out of `query`, and each of their
   * actions answers 501 "unsupported on this host: <reason>" instead of the 404 of a class not built.
   */
  readonly unavailable?: Partial<Record<keyof ClassPorts, string>>;
  /** The runner every host command goes through (argv arrays only). */
  readonly runner: CommandRunner;
  hostname(): Promise<string>;
  close(): Promise<void>;
}

export interface PlatformOptions {
  dataDir: string;
  runner: CommandRunner;
  /**
   * Linux: where /proc and /sys are read from (tests point these at a fake tree for what this
   * machine lacks: batteries, thermal zones). Default `/proc`, `/sys`.
   */
  procRoot?: string;
  sysRoot?: string;
  /** Linux: where releases, jails and their record live (default `<dataDir>/jails`). */
  jailRoot?: string;
  /** Linux: the cgroup file system the jails' limits are set in (default `/sys/fs/cgroup`). */
  cgroupRoot?: string;
  /** Sim only: the password of the built-in accounts; when set it also resets them on an existing host. */
  simPassword?: string;
  /** Linux/FreeBSD: override the full-access group. */
  adminGroup?: string;
  /** Linux: whether zpool/zfs are installed (default: looked for on the standard paths; tests in a namespace say so). */
  zfsTools?: boolean;
  /**
   * FreeBSD: the bhyve manager the vm class drives; default vm-bhyve where /usr/local/sbin/vm is
   * installed, else iohyve where /usr/local/sbin/iohyve is, else the class is unavailable (tests say).
   */
  freebsdVmTool?: 'vm-bhyve' | 'iohyve' | null;
  /** Linux: the PAM service password sign-in checks against (default `login`). */
  pamService?: string;
  /** Linux/FreeBSD: the largest ISO image `vm fetchiso` downloads (default 16 GiB). */
  maxIsoBytes?: number;
}
