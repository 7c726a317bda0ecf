/**
 * Checks of `users` arguments against the host's current accounts, made before anything changes:
 * every problem is collected and reported together in one 400, each naming its field, so a request
 * is either applied whole or refused whole. The forms of the values are the contract's
 * (shared/src/api/fields-accounts.ts), checked before a handler runs.
 */
import { badRequest, type FieldError } from '@hostadm/shared/protocol/errors.ts';
import type { AccountFields, GroupEntry, UserAccount } from '../platforms/ports/users.ts';

export interface AccountsSnapshot {
  users: UserAccount[];
  groups: GroupEntry[];
}

export class FieldProblems {
  readonly list: FieldError[] = [];

  add(field: string, message: string): void {
    this.list.push({ field, message });
  }

  /** Throws one 400 naming every problem, if there is any. */
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const summary = this.list.map((e) => `${e.field}: ${e.message}`).join('; ');
    throw badRequest(summary, this.list);
  }
}

export function findUser(state: AccountsSnapshot, name: string): UserAccount | undefined {
  return state.users.find((u) => u.name === name);
}

export function findGroup(state: AccountsSnapshot, nameOrGid: string): GroupEntry | undefined {
  return state.groups.find((g) => g.name === nameOrGid) ?? (/^\d+$/.test(nameOrGid) ? state.groups.find((g) => g.gid === nameOrGid) : undefined);
}

/** What those fields refer to on the host; `self` is the account being changed (usermod). */
export function checkFieldRefs(problems: FieldProblems, args: AccountFields, state: AccountsSnapshot, self?: string): void {
  if (args.uid !== undefined) {
    const holder = state.users.find((u) => u.uid === args.uid && u.name !== self);
    if (holder) problems.add('uid', `already used by ${holder.name}`);
  }
  if (args.group !== undefined && !findGroup(state, args.group)) problems.add('group', `no such group: ${args.group}`);
  const unknown = (args.other_groups ?? []).filter((g) => !state.groups.some((e) => e.name === g));
  if (unknown.length > 0) problems.add('other_groups', `no such group: ${unknown.join(', ')}`);
}

/** Names in `names` that are not accounts. */
export function unknownAccounts(state: AccountsSnapshot, names: readonly string[]): string[] {
  return names.filter((n) => !findUser(state, n));
}
