/**
 * Accounts and groups of the simulated FreeBSD host (the `accounts` slice). Sign-in uses them, and
 * the users class changes them. Passwords are scrypt hashes, never stored in clear.
 */
import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { SimSlice, SimStore } from './store.ts';
import type { UserAccount } from '../ports/users.ts';

/** An account as the simulated host keeps it: the port's record with numeric ids, and its password hash. */
export type SimAccount = Omit<UserAccount, 'uid' | 'gid'> & {
  uid: number;
  gid: number;
  /** `scrypt$<salt b64>$<hash b64>`, or `*` for a locked account. */
  password: string;
};

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

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

/** A hash no password matches: unknown and locked accounts are checked against it, at the same cost. */
const NOTHING = `scrypt$${randomBytes(16).toString('base64')}$${randomBytes(32).toString('base64')}`;

/**
 * Whether `password` matches `stored` (`*`, a locked account, or no account: `undefined`). Always one
 * scrypt run, on libuv's thread pool, so it neither blocks the event loop nor tells by its timing
 * whether the account exists.
 */
export async function checkPassword(stored: string | undefined, password: string, kdf = scryptAsync): Promise<boolean> {
  const usable = stored !== undefined && stored !== '*' && stored.split('$').length === 3 && stored.startsWith('scrypt$');
  const [, saltB64, hashB64] = (usable ? stored : NOTHING).split('$') as [string, string, string];
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await kdf(password, Buffer.from(saltB64, 'base64'), expected.length);
  return timingSafeEqual(expected, actual) && usable;
}

function account(name: string, uid: number, gid: number, comment: string, home: string, shell: string, password: string): SimAccount {
  return { name, uid, gid, class: '', change: '0', expire: '0', comment, home_dir: home, shell, password };
}

/**
 * FreeBSD 14's locked system accounts (etc/master.passwd of a fresh install) besides the ones the
 * sim signs in with: `[name, uid, gid, comment, home, shell]`.
 */
const SYSTEM_ACCOUNTS: ReadonlyArray<[string, number, number, string, string, string]> = [
  ['toor', 0, 0, 'Bourne-again Superuser', '/root', '/nonexistent'],
  ['daemon', 1, 1, 'Owner of many system processes', '/root', '/usr/sbin/nologin'],
  ['bin', 3, 7, 'Binaries Commands and Source', '/', '/usr/sbin/nologin'],
  ['tty', 4, 65533, 'Tty Sandbox', '/', '/usr/sbin/nologin'],
  ['kmem', 5, 65533, 'KMem Sandbox', '/', '/usr/sbin/nologin'],
  ['games', 7, 13, 'Games pseudo-user', '/', '/usr/sbin/nologin'],
  ['news', 8, 8, 'News Subsystem', '/', '/usr/sbin/nologin'],
  ['man', 9, 9, 'Mister Man Pages', '/usr/share/man', '/usr/sbin/nologin'],
  ['sshd', 22, 22, 'Secure Shell Daemon', '/var/empty', '/usr/sbin/nologin'],
  ['smmsp', 25, 25, 'Sendmail Submission User', '/var/spool/clientmqueue', '/usr/sbin/nologin'],
  ['mailnull', 26, 26, 'Sendmail Default User', '/var/spool/mqueue', '/usr/sbin/nologin'],
  ['bind', 53, 53, 'Bind Sandbox', '/', '/usr/sbin/nologin'],
  ['unbound', 59, 59, 'Unbound DNS Resolver', '/var/unbound', '/usr/sbin/nologin'],
  ['proxy', 62, 62, 'Packet Filter pseudo-user', '/nonexistent', '/usr/sbin/nologin'],
  ['_pflogd', 64, 64, 'pflogd privsep user', '/var/empty', '/usr/sbin/nologin'],
  ['_dhcp', 65, 65, 'dhcp programs', '/var/empty', '/usr/sbin/nologin'],
  ['uucp', 66, 66, 'UUCP pseudo-user', '/var/spool/uucppublic', '/usr/local/libexec/uucp/uucico'],
  ['pop', 68, 6, 'Post Office Owner', '/nonexistent', '/usr/sbin/nologin'],
  ['auditdistd', 78, 77, 'Auditdistd unprivileged user', '/var/empty', '/usr/sbin/nologin'],
  ['www', 80, 80, 'World Wide Web Owner', '/nonexistent', '/usr/sbin/nologin'],
  ['ntpd', 123, 123, 'NTP Daemon', '/var/db/ntp', '/usr/sbin/nologin'],
  ['_ypldap', 160, 160, 'YP LDAP unprivileged user', '/var/empty', '/usr/sbin/nologin'],
  ['hast', 845, 845, 'HAST unprivileged user', '/var/empty', '/usr/sbin/nologin'],
  ['tests', 977, 977, 'Unprivileged user for tests', '/nonexistent', '/usr/sbin/nologin'],
  ['nobody', 65534, 65534, 'Unprivileged user', '/nonexistent', '/usr/sbin/nologin'],
];

/** FreeBSD 14's groups (etc/group) without members, `[name, gid]`; wheel and operator are seeded with theirs. */
const SYSTEM_GROUPS: ReadonlyArray<[string, number]> = [
  ['daemon', 1],
  ['kmem', 2],
  ['sys', 3],
  ['tty', 4],
  ['mail', 6],
  ['bin', 7],
  ['news', 8],
  ['man', 9],
  ['games', 13],
  ['ftp', 14],
  ['staff', 20],
  ['sshd', 22],
  ['smmsp', 25],
  ['mailnull', 26],
  ['guest', 31],
  ['video', 44],
  ['bind', 53],
  ['unbound', 59],
  ['proxy', 62],
  ['authpf', 63],
  ['_pflogd', 64],
  ['_dhcp', 65],
  ['uucp', 66],
  ['dialer', 68],
  ['network', 69],
  ['audit', 77],
  ['www', 80],
  ['ntpd', 123],
  ['_ypldap', 160],
  ['hast', 845],
  ['tests', 977],
  ['nogroup', 65533],
  ['nobody', 65534],
];

/** A fresh FreeBSD-like account database: root and admin in wheel (full access), operator limited. */
export function seedAccounts(password: string): SimAccounts {
  const hash = hashPassword(password);
  const accounts: Record<string, SimAccount> = {
    root: account('root', 0, 0, 'Charlie &', '/root', '/bin/csh', hash),
    // The sim's operator signs in (limited access), so unlike FreeBSD's it has a home and a shell.
    operator: account('operator', 2, 5, 'System &', '/home/operator', '/bin/sh', hash),
    admin: account('admin', 1001, 1001, 'Administrator', '/home/admin', '/bin/sh', hash),
  };
  for (const [name, uid, gid, comment, home, shell] of SYSTEM_ACCOUNTS) accounts[name] = account(name, uid, gid, comment, home, shell, '*');
  const groups: Record<string, SimGroup> = {
    wheel: { name: 'wheel', gid: 0, members: ['root', 'admin'] },
    operator: { name: 'operator', gid: 5, members: ['root', 'operator'] },
    admin: { name: 'admin', gid: 1001, members: [] },
  };
  for (const [name, gid] of SYSTEM_GROUPS) groups[name] = { name, gid, members: [] };
  return { accounts, groups };
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
