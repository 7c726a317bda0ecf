/**
 * The simulated host's accounts and groups: the same `accounts` slice sign-in reads, changed the
 * way FreeBSD's pw(8) would change master.passwd and group (a new account gets a same-named
 * group, deleting it removes that group when it is empty, `other_groups` sets the secondary
 * groups exactly). Each change is one atomic slice update.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { GroupEntry, MemberChange, NewUser, UserAccount, UserChanges, UsersPort } from '../ports/users.ts';
import { parseAccountDate } from '@hostadm/shared/api/fields-accounts.ts';
import { hashPassword, type SimAccount, type SimAccounts } from './accounts.ts';
import type { SimContext } from './index.ts';

/** pw(8) gives new accounts and groups the first free id above 1000 (its tests show 1001 first). */
const MIN_ID = 1001;

/** Two USB sticks, as `personacrypt list -r` describes them (`<camcontrol ident> <gpart size>`). */
const SIM_REMOVABLE = {
  da0: '<SanDisk Cruzer Blade 1.00> 7.5G',
  da1: '<Kingston DataTraveler 3.0 PMAP> 29G',
};

function hostError(message: string): HostadmError {
  return new HostadmError('HOST_ERROR', `pw: ${message}`);
}

function nextFree(used: Iterable<number>, from = MIN_ID): number {
  const taken = new Set(used);
  let id = from;
  while (taken.has(id)) id++;
  return id;
}

function epoch(value: string): string {
  const seconds = parseAccountDate(value, Date.now());
  if (seconds === null) throw hostError('Invalid date');
  return String(seconds);
}

function gidOf(state: SimAccounts, group: string): number {
  const found = state.groups[group] ?? Object.values(state.groups).find((g) => String(g.gid) === group);
  if (!found) throw hostError(`group \`${group}' is not defined`);
  return found.gid;
}

/** Makes `name` a member of exactly `groups` (pw's -G). */
function setSecondaryGroups(state: SimAccounts, name: string, groups: readonly string[]): void {
  for (const g of Object.values(state.groups)) {
    const wanted = groups.includes(g.name);
    const has = g.members.includes(name);
    if (wanted && !has) g.members.push(name);
    if (!wanted && has) g.members = g.members.filter((m) => m !== name);
  }
}

function toRecord(a: SimAccount): UserAccount {
  return {
    name: a.name,
    uid: String(a.uid),
    gid: String(a.gid),
    class: a.class,
    change: a.change,
    expire: a.expire,
    comment: a.comment,
    home_dir: a.home_dir,
    shell: a.shell,
  };
}

export function simUsers(ctx: SimContext): UsersPort {
  const { accounts } = ctx;
  return {
    async listUsers() {
      return Object.values(accounts.get().accounts).map(toRecord);
    },

    async listGroups(): Promise<GroupEntry[]> {
      return Object.values(accounts.get().groups).map((g) => ({ name: g.name, gid: String(g.gid), members: [...g.members] }));
    },

    async addUser(user: NewUser) {
      accounts.update((s) => {
        if (s.accounts[user.name]) throw hostError(`login name \`${user.name}' already exists`);
        const uid = user.uid !== undefined ? Number(user.uid) : nextFree(Object.values(s.accounts).map((a) => a.uid));
        const sameNamed = s.groups[user.name];
        let gid: number;
        if (user.group !== undefined) gid = gidOf(s, user.group);
        else if (sameNamed) gid = sameNamed.gid;
        else {
          const used = Object.values(s.groups).map((g) => g.gid);
          gid = used.includes(uid) ? nextFree(used) : uid;
          s.groups[user.name] = { name: user.name, gid, members: [] };
        }
        s.accounts[user.name] = {
          name: user.name,
          uid,
          gid,
          class: user.class ?? '',
          change: user.change !== undefined ? epoch(user.change) : '0',
          expire: user.expire !== undefined ? epoch(user.expire) : '0',
          comment: user.comment ?? 'User &',
          home_dir: user.home_dir ?? `/home/${user.name}`,
          shell: user.shell ?? '/bin/sh',
          password: hashPassword(user.password),
        };
        if (user.other_groups) setSecondaryGroups(s, user.name, user.other_groups);
      });
    },

    async deleteUser(name: string) {
      accounts.update((s) => {
        const acct = s.accounts[name];
        if (!acct) throw hostError(`no such user \`${name}'`);
        delete s.accounts[name];
        for (const g of Object.values(s.groups)) g.members = g.members.filter((m) => m !== name);
        // pw userdel also removes the account's own group when nobody else is in it.
        const own = s.groups[name];
        const stillPrimary = Object.values(s.accounts).some((a) => a.gid === own?.gid);
        if (own && own.gid === acct.gid && own.members.length === 0 && !stillPrimary) delete s.groups[name];
      });
    },

    async modifyUser(name: string, changes: UserChanges) {
      accounts.update((s) => {
        const acct = s.accounts[name];
        if (!acct) throw hostError(`no such user \`${name}'`);
        if (changes.uid !== undefined) acct.uid = Number(changes.uid);
        if (changes.group !== undefined) acct.gid = gidOf(s, changes.group);
        if (changes.class !== undefined) acct.class = changes.class;
        if (changes.change !== undefined) acct.change = epoch(changes.change);
        if (changes.expire !== undefined) acct.expire = epoch(changes.expire);
        if (changes.comment !== undefined) acct.comment = changes.comment;
        if (changes.home_dir !== undefined) acct.home_dir = changes.home_dir;
        if (changes.shell !== undefined) acct.shell = changes.shell;
        if (changes.password !== undefined) acct.password = hashPassword(changes.password);
        if (changes.other_groups !== undefined) setSecondaryGroups(s, name, changes.other_groups);
        if (changes.newname !== undefined && changes.newname !== name) {
          if (s.accounts[changes.newname]) throw hostError(`login name \`${changes.newname}' already exists`);
          delete s.accounts[name];
          acct.name = changes.newname;
          s.accounts[changes.newname] = acct;
          for (const g of Object.values(s.groups)) g.members = g.members.map((m) => (m === name ? acct.name : m));
        }
      });
    },

    async addGroup(name: string, gid: string | undefined, members: string[]) {
      accounts.update((s) => {
        if (s.groups[name]) throw hostError(`group name \`${name}' already exists`);
        const id = gid !== undefined ? Number(gid) : nextFree(Object.values(s.groups).map((g) => g.gid));
        s.groups[name] = { name, gid: id, members: [...members] };
      });
    },

    async deleteGroup(name: string) {
      accounts.update((s) => {
        if (!s.groups[name]) throw hostError(`unknown group \`${name}'`);
        delete s.groups[name];
      });
    },

    async changeMembers(name: string, change: MemberChange) {
      accounts.update((s) => {
        const group = s.groups[name];
        if (!group) throw hostError(`unknown group \`${name}'`);
        if ('set' in change) group.members = [...change.set];
        else if ('add' in change) group.members = [...new Set([...group.members, ...change.add])];
        else group.members = group.members.filter((m) => !change.remove.includes(m));
      });
    },

    async removableDevices() {
      return { ...SIM_REMOVABLE };
    },
  };
}
