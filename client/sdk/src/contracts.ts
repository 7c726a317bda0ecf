/**
 * The contracts, loaded on demand. The SDK's types come from `@hostadm/shared/api` at compile time;
 * at run time each class's contract module is imported the first time it is used, so a short-lived
 * program (one CLI call) pays only for the classes it touches. `test/sdk/contracts.test.ts` checks that
 * every loader returns exactly the registry's object.
 */
import type { ActionContract, ClassContract, OperationContract } from '@hostadm/shared/protocol/define.ts';
import type { adminClasses, rpcClasses, rpcOperations, eventOperations } from '@hostadm/shared/api/index.ts';

type Loaders<T> = { readonly [K in keyof T]: () => Promise<T[K]> };

export const adminLoaders: Loaders<typeof adminClasses> = {
  beadm: () => import('@hostadm/shared/api/beadm.ts').then((m) => m.beadm),
  firewall: () => import('@hostadm/shared/api/firewall.ts').then((m) => m.firewall),
  fs: () => import('@hostadm/shared/api/fs.ts').then((m) => m.fs),
  jail: () => import('@hostadm/shared/api/jail.ts').then((m) => m.jail),
  moused: () => import('@hostadm/shared/api/moused.ts').then((m) => m.moused),
  network: () => import('@hostadm/shared/api/network.ts').then((m) => m.network),
  pkg: () => import('@hostadm/shared/api/pkg.ts').then((m) => m.pkg),
  powerd: () => import('@hostadm/shared/api/powerd.ts').then((m) => m.powerd),
  services: () => import('@hostadm/shared/api/services.ts').then((m) => m.services),
  settings: () => import('@hostadm/shared/api/settings.ts').then((m) => m.adminSettings),
  snapshot: () => import('@hostadm/shared/api/snapshot.ts').then((m) => m.snapshot),
  systemmanager: () => import('@hostadm/shared/api/systemmanager.ts').then((m) => m.systemmanager),
  update: () => import('@hostadm/shared/api/update.ts').then((m) => m.update),
  users: () => import('@hostadm/shared/api/users.ts').then((m) => m.users),
  vm: () => import('@hostadm/shared/api/vm.ts').then((m) => m.vm),
  zfs: () => import('@hostadm/shared/api/zfs.ts').then((m) => m.zfs),
};

export const rpcClassLoaders: Loaders<typeof rpcClasses> = {
  dispatcher: () => import('@hostadm/shared/api/dispatcher.ts').then((m) => m.dispatcher),
  settings: () => import('@hostadm/shared/api/settings.ts').then((m) => m.rpcSettings),
};

export const rpcOperationLoaders: Loaders<typeof rpcOperations> = {
  auth: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.auth),
  auth_token: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.authToken),
  auth_ssl: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.authSsl),
  auth_clear: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.authClear),
  identify: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.identify),
  query: () => import('@hostadm/shared/api/rpc.ts').then((m) => m.query),
};

export const eventOperationLoaders: Loaders<typeof eventOperations> = {
  subscribe: () => import('@hostadm/shared/api/events.ts').then((m) => m.subscribe),
  unsubscribe: () => import('@hostadm/shared/api/events.ts').then((m) => m.unsubscribe),
};

export type ClassNamespace = 'admin' | 'rpc';

const has = (o: object, k: string) => Object.hasOwn(o, k);

/** Class names of a namespace (admin classes, or rpc classes that take an `action`). */
export function classNames(namespace: ClassNamespace): string[] {
  return Object.keys(namespace === 'admin' ? adminLoaders : rpcClassLoaders);
}

/** rpc operations without an `action` (auth family, identify, query). */
export function rpcOperationNames(): string[] {
  return Object.keys(rpcOperationLoaders);
}

export function isClass(namespace: string, name: string): boolean {
  if (namespace === 'admin') return has(adminLoaders, name);
  if (namespace === 'rpc') return has(rpcClassLoaders, name);
  return false;
}

export function isOperation(namespace: string, name: string): boolean {
  if (namespace === 'rpc') return has(rpcOperationLoaders, name);
  if (namespace === 'events') return has(eventOperationLoaders, name);
  return false;
}

/** The class contract, or undefined when the SDK does not know that class. */
export async function loadClass(namespace: string, name: string): Promise<ClassContract | undefined> {
  if (namespace === 'admin' && has(adminLoaders, name)) return adminLoaders[name as keyof typeof adminLoaders]();
  if (namespace === 'rpc' && has(rpcClassLoaders, name)) return rpcClassLoaders[name as keyof typeof rpcClassLoaders]();
  return undefined;
}

/** The operation contract (rpc without action, or events), or undefined. */
export async function loadOperation(namespace: string, name: string): Promise<OperationContract | undefined> {
  if (namespace === 'rpc' && has(rpcOperationLoaders, name)) return rpcOperationLoaders[name as keyof typeof rpcOperationLoaders]();
  if (namespace === 'events' && has(eventOperationLoaders, name)) return eventOperationLoaders[name as keyof typeof eventOperationLoaders]();
  return undefined;
}

/** Every class contract of a namespace, in name order. */
export async function loadClasses(namespace: ClassNamespace): Promise<ClassContract[]> {
  const names = classNames(namespace).sort();
  return Promise.all(names.map(async (n) => (await loadClass(namespace, n))!));
}

/** The action's canonical name (aliases resolved), or undefined when the class has no such action. */
export function resolveAction(contract: ClassContract, action: string): string | undefined {
  if (has(contract.actions, action)) return action;
  const alias = contract.actionAliases[action];
  return alias !== undefined && has(contract.actions, alias) ? alias : undefined;
}

/** Whether the action answers with a pending acknowledgement and finishes later as a job. */
export function isQueued(contract: ActionContract): boolean {
  return contract.queued !== false;
}

/**
 * The job ids in a queued action's acknowledgement: `run` → `started`; pkg-style `{<action>: {proc_id}}`;
 * `fetchiso`/`startupdate` style `{<action>: {queueid}}`.
 */
export function jobIdsOf(reply: unknown): string[] {
  if (!isObject(reply)) return [];
  if (Array.isArray(reply.started)) return reply.started.filter((v): v is string => typeof v === 'string');
  const ids: string[] = [];
  for (const value of [reply, ...Object.values(reply)]) {
    if (!isObject(value)) continue;
    if (typeof value.proc_id === 'string') ids.push(value.proc_id);
    else if (typeof value.queueid === 'string') ids.push(value.queueid);
  }
  return [...new Set(ids)];
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
