/**
 * `users`: accounts and groups. Full-access users manage everything; a limited user sees only
 * their own account and groups and may change only their own password, comment and shell (any
 * other field of their own account, such as `other_groups`, would let them grant themselves
 * access). Every change is checked against the current accounts first, so a refused request
 * changes nothing.
 */
import { users } from '@hostadm/shared/api/users.ts';
import type { ParsedArgsOf } from '@hostadm/shared/protocol/define.ts';
import { forbidden } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { AuthedContext } from '../server/context.ts';
import type { UsersPort, UserChanges } from '../platforms/ports/users.ts';
import { checkFieldRefs, FieldProblems, findUser, unknownAccounts, type AccountsSnapshot } from './users-checks.ts';
import { isLevelGroup, levelGroupsChange, signOut } from './users-sessions.ts';

type Acts = (typeof users)['actions'];
type Args<K extends keyof Acts> = ParsedArgsOf<Acts[K]>;

const SUCCESS = { result: 'success' } as const;

/** What a limited user may change on their own account: nothing that touches access or identity. */
const SELF_SERVICE_FIELDS = new Set(['name', 'password', 'comment', 'shell']);

export const usersImpl = implementClass(users, (services) => {
  const port = services.platform.ports.users;
  if (!port) return null;

  return {
    // The spec: "all accounts", for limited access too (it restricts groupshow, usermod and keys, not
    // this); the fields are what any local user reads from the password database anyway.
    async usershow(_args: Args<'usershow'>, ctx: AuthedContext) {
      const me = ctx.session.user;
      const all = await port.listUsers();
      return Object.fromEntries(all.map((u) => [u.name, u.name === me ? { ...u, canremove: 'false' } : { ...u }]));
    },

    async groupshow(_args: Args<'groupshow'>, ctx: AuthedContext) {
      const me = ctx.session.user;
      const { users: accounts, groups } = await snapshot(port);
      if (ctx.session.level === 'full') {
        return Object.fromEntries(groups.map((g) => [g.name, { name: g.name, gid: g.gid, users: g.members.length > 0 ? g.members : [''] }]));
      }
      // Limited: only the caller's groups (primary or member), and no other member's name.
      const primaryGid = accounts.find((u) => u.name === me)?.gid;
      const mine = groups.filter((g) => g.members.includes(me) || g.gid === primaryGid);
      return Object.fromEntries(mine.map((g) => [g.name, { name: g.name, gid: g.gid, users: [me] }]));
    },

    async useradd(args: Args<'useradd'>) {
      const state = await snapshot(port);
      const refs = new FieldProblems();
      if (findUser(state, args.name)) refs.add('name', `account ${args.name} already exists`);
      checkFieldRefs(refs, args, state);
      refs.throwIfAny();
      await port.addUser(args);
      return SUCCESS;
    },

    async userdelete(args: Args<'userdelete'>, ctx: AuthedContext) {
      const problems = new FieldProblems();
      if (args.name === ctx.session.user) problems.add('name', 'cannot delete the account you are signed in with');
      else if (args.name === 'root') problems.add('name', 'the root account cannot be deleted');
      problems.throwIfAny();
      const state = await snapshot(port);
      if (!findUser(state, args.name)) problems.add('name', `no such account: ${args.name}`);
      problems.throwIfAny();
      await port.deleteUser(args.name, args.clean_home !== 'false');
      signOut(services, args.name, { keys: true });
      return SUCCESS;
    },

    async usermod(args: Args<'usermod'>, ctx: AuthedContext) {
      if (ctx.session.level !== 'full') authorizeSelfService(args, ctx.session.user);
      const { name, ...changes } = args;
      const state = await snapshot(port);
      const refs = new FieldProblems();
      if (!findUser(state, name)) refs.add('name', `no such account: ${name}`);
      if (changes.newname !== undefined && changes.newname !== name && findUser(state, changes.newname)) {
        refs.add('newname', `account ${changes.newname} already exists`);
      }
      checkFieldRefs(refs, changes, state, name);
      refs.throwIfAny();
      const effective: UserChanges = { ...changes };
      if (effective.newname === name) delete effective.newname;
      await port.modifyUser(name, effective);
      if (effective.newname !== undefined) signOut(services, name, { keys: true });
      else if (levelGroupsChange(services, state, name, effective)) signOut(services, name);
      return SUCCESS;
    },

    async groupadd(args: Args<'groupadd'>) {
      const state = await snapshot(port);
      const refs = new FieldProblems();
      if (state.groups.some((g) => g.name === args.name)) refs.add('name', `group ${args.name} already exists`);
      const holder = args.gid === undefined ? undefined : state.groups.find((g) => g.gid === args.gid);
      if (holder) refs.add('gid', `already used by group ${holder.name}`);
      const unknown = unknownAccounts(state, args.users ?? []);
      if (unknown.length > 0) refs.add('users', `no such account: ${unknown.join(', ')}`);
      refs.throwIfAny();
      await port.addGroup(args.name, args.gid, [...new Set(args.users ?? [])]);
      return SUCCESS;
    },

    async groupdelete(args: Args<'groupdelete'>) {
      const problems = new FieldProblems();
      const state = await snapshot(port);
      const group = state.groups.find((g) => g.name === args.name);
      if (!group) problems.add('name', `no such group: ${args.name}`);
      const primaryOf = group ? state.users.filter((u) => u.gid === group.gid).map((u) => u.name) : [];
      if (primaryOf.length > 0) problems.add('name', `is the primary group of ${primaryOf.join(', ')}; change or delete those accounts first`);
      problems.throwIfAny();
      await port.deleteGroup(args.name);
      if (group && isLevelGroup(services, group.name)) for (const member of group.members) signOut(services, member);
      return SUCCESS;
    },

    async groupmod(args: Args<'groupmod'>) {
      const problems = new FieldProblems();
      const state = await snapshot(port);
      if (!state.groups.some((g) => g.name === args.name)) problems.add('name', `no such group: ${args.name}`);
      for (const field of ['users', 'add_users'] as const) {
        const unknown = unknownAccounts(state, args[field] ?? []);
        if (unknown.length > 0) problems.add(field, `no such account: ${unknown.join(', ')}`);
      }
      problems.throwIfAny();
      const unique = (list: string[]) => [...new Set(list)];
      const before = state.groups.find((g) => g.name === args.name)?.members ?? [];
      let leaving: string[] = [];
      if (args.users !== undefined) {
        await port.changeMembers(args.name, { set: unique(args.users) });
        leaving = before.filter((m) => !args.users?.includes(m));
      } else if (args.add_users !== undefined) {
        await port.changeMembers(args.name, { add: unique(args.add_users) });
      } else if (args.remove_users !== undefined) {
        await port.changeMembers(args.name, { remove: unique(args.remove_users) });
        leaving = before.filter((m) => args.remove_users?.includes(m));
      }
      if (isLevelGroup(services, args.name)) {
        const gid = state.groups.find((g) => g.name === args.name)?.gid;
        for (const member of leaving) if (findUser(state, member)?.gid !== gid) signOut(services, member);
      }
      return SUCCESS;
    },

    async personacrypt_listdevs() {
      return port.removableDevices();
    },
  };
});

async function snapshot(port: UsersPort): Promise<AccountsSnapshot> {
  const [users, groups] = await Promise.all([port.listUsers(), port.listGroups()]);
  return { users, groups };
}

/** A limited user: their own account, harmless fields only. */
function authorizeSelfService(args: Args<'usermod'>, me: string): void {
  if (args.name !== me) throw forbidden('admin/users usermod: a limited user may change only their own account');
  const refused = Object.entries(args)
    .filter(([key, value]) => value !== undefined && !SELF_SERVICE_FIELDS.has(key))
    .map(([key]) => key);
  if (refused.length > 0) {
    throw forbidden(`admin/users usermod: a limited user may change only password, comment and shell (not ${refused.join(', ')})`);
  }
}
