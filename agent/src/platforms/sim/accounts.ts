/**
 * Accounts and groups of the simulated FreeBSD host (the `accounts` slice). Sign-in uses them, and
 * the users class changes them. Passwords are scrypt hashes, never stored in clear.
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { SimSlice, SimStore } from './store.ts';

export interface SimAccount {
  name: string;
  uid: number;
  gid: number;
  class: string;
  change: string;
  expire: string;
  comment: string;
  home_dir: string;
  shell: string;
  /** `scrypt$<salt b64>$<hash b64>`, or `*` for a locked account. */
  password: string;
}

export interface SimGroup {
  name: string;
  gid: number;
  members: string[];
}

export interface SimAccounts {
  accounts: Record<string, SimAccount>;
  groups: Record<string, SimGroup>;
}

export const DEFAULT_SIM_PASSWORD = 'hostadm';

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export function checkPassword(stored: string, password: string): boolean {
  const [scheme, saltB64, hashB64] = stored.split('$');
  if (scheme !== 'scrypt' || !saltB64 || !hashB64) return false;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = scryptSync(password, Buffer.from(saltB64, 'base64'), expected.length);
  return timingSafeEqual(expected, actual);
}

function account(name: string, uid: number, gid: number, comment: string, home: string, shell: string, password: string): SimAccount {
  return { name, uid, gid, class: '', change: '0', expire: '0', comment, home_dir: home, shell, password };
}

/** A fresh FreeBSD-like account database: root and admin in wheel (full access), operator limited. */
export function seedAccounts(password: string): SimAccounts {
  const hash = hashPassword(password);
  return {
    accounts: {
      root: account('root', 0, 0, 'Charlie &', '/root', '/bin/csh', hash),
      toor: account('toor', 0, 0, 'Bourne-again Superuser', '/root', '/nonexistent', '*'),
      daemon: account('daemon', 1, 1, 'Owner of many system processes', '/root', '/usr/sbin/nologin', '*'),
      operator: account('operator', 2, 5, 'System &', '/home/operator', '/bin/sh', hash),
      www: account('www', 80, 80, 'World Wide Web Owner', '/nonexistent', '/usr/sbin/nologin', '*'),
      admin: account('admin', 1001, 1001, 'Administrator', '/home/admin', '/bin/sh', hash),
      nobody: account('nobody', 65534, 65534, 'Unprivileged user', '/nonexistent', '/usr/sbin/nologin', '*'),
    },
    groups: {
      wheel: { name: 'wheel', gid: 0, members: ['root', 'admin'] },
      daemon: { name: 'daemon', gid: 1, members: [] },
      operator: { name: 'operator', gid: 5, members: ['root', 'operator'] },
      www: { name: 'www', gid: 80, members: [] },
      admin: { name: 'admin', gid: 1001, members: [] },
      nogroup: { name: 'nogroup', gid: 65533, members: [] },
      nobody: { name: 'nobody', gid: 65534, members: [] },
    },
  };
}

export const BUILTIN_SIGN_IN_ACCOUNTS = ['root', 'admin', 'operator'] as const;

export function accountsSlice(store: SimStore, password: string | undefined): SimSlice<SimAccounts> {
  const slice = store.slice('accounts', () => seedAccounts(password ?? DEFAULT_SIM_PASSWORD));
  // An explicit --sim-password also resets the built-in accounts of an existing sim host.
  if (password !== undefined) {
    const hash = hashPassword(password);
    slice.update((s) => {
      for (const name of BUILTIN_SIGN_IN_ACCOUNTS) if (s.accounts[name]) s.accounts[name].password = hash;
    });
  }
  return slice;
}

/** Group names of an account (primary first), or null when it does not exist. */
export function groupsOfAccount(state: SimAccounts, user: string): string[] | null {
  const acct = state.accounts[user];
  if (!acct) return null;
  const groups = Object.values(state.groups);
  const primary = groups.find((g) => g.gid === acct.gid)?.name;
  const secondary = groups.filter((g) => g.members.includes(user)).map((g) => g.name);
  return [...new Set([...(primary ? [primary] : []), ...secondary])];
}
