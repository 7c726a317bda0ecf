/**
 * The contract registry: one line per class. The agent, SDK, CLI help and docs all read this.
 */
import type { ClassContract, OperationContract } from '../protocol/define.ts';
import { beadm } from './beadm.ts';
import { firewall } from './firewall.ts';
import { fs } from './fs.ts';
import { jail } from './jail.ts';
import { moused } from './moused.ts';
import { network } from './network.ts';
import { pkg } from './pkg.ts';
import { powerd } from './powerd.ts';
import { services } from './services.ts';
import { snapshot } from './snapshot.ts';
import { systemmanager } from './systemmanager.ts';
import { update } from './update.ts';
import { users } from './users.ts';
import { vm } from './vm.ts';
import { zfs } from './zfs.ts';
import { adminSettings, rpcSettings } from './settings.ts';
import { dispatcher } from './dispatcher.ts';
import { auth, authClear, authSsl, authToken, identify, query } from './rpc.ts';
import { subscribe, unsubscribe } from './events.ts';

/** Classes of namespace `admin`, keyed by wire name. */
export const adminClasses = {
  beadm,
  firewall,
  fs,
  jail,
  moused,
  network,
  pkg,
  powerd,
  services,
  settings: adminSettings,
  snapshot,
  systemmanager,
  update,
  users,
  vm,
  zfs,
} as const satisfies Record<string, ClassContract>;

/** rpc classes that take an `action` (dispatcher, settings). */
export const rpcClasses = {
  dispatcher,
  settings: rpcSettings,
} as const satisfies Record<string, ClassContract>;

/** rpc operations whose whole `args` is the input. */
export const rpcOperations = {
  auth,
  auth_token: authToken,
  auth_ssl: authSsl,
  auth_clear: authClear,
  identify,
  query,
} as const satisfies Record<string, OperationContract>;

/** Namespace `events` requests. */
export const eventOperations = { subscribe, unsubscribe } as const satisfies Record<string, OperationContract>;

/** Class aliases the original's code used (`systeminfo` is handled as an action alias). */
export const api = { admin: adminClasses, rpc: rpcClasses, rpcOperations, events: eventOperations } as const;

export type AdminClassName = keyof typeof adminClasses;
export type RpcClassName = keyof typeof rpcClasses;
export type RpcOperationName = keyof typeof rpcOperations;
