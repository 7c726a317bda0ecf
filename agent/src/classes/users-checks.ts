/**
 * Checks of `users` arguments beyond the contract, made against the host's current accounts
 * before anything changes: every problem is collected and reported together in one 400, each
 * naming its field, so a request is either applied whole or refused whole.
 */
import { badRequest, type FieldError } from '@hostadm/shared/protocol/errors.ts';
import type { AccountFields, GroupEntry, UserAccount } from '../platforms/ports/users.ts';
import { ACCOUNT_NAME, ACCOUNT_PATH, COMMENT, PASSWORD, parseAccountDate } from '../platforms/users-fields.ts';

/** The largest id both systems accept (uid_t is 32 bits; 2^32-1 means "no id"). */
const MAX_ID = 4_294_967_294;

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

export function checkName(problems: FieldProblems, field: string, value: string): void {
  if (!ACCOUNT_NAME.test(value)) {
    problems.add(field, 'must be at most 32 letters, digits, `.`, `_` or `-` (a trailing `$` allowed), not starting with `.` or `-`');
  }
}

export function checkPassword(problems: FieldProblems, value: string | undefined): void {
  if (value !== undefined && !PASSWORD.test(value)) problems.add('password', 'must not contain line breaks or other control characters');
}

export function checkId(problems: FieldProblems, field: string, value: string | undefined): void {
  if (value !== undefined && Number(value) > MAX_ID) problems.add(field, `must be at most ${MAX_ID}`);
}

/** The forms of the fields `useradd` and `usermod` share (no host state needed, so checked before any command runs). */
export function checkFieldForms(problems: FieldProblems, args: AccountFields, nowMs: number): void {
  checkId(problems, 'uid', args.uid);
  for (const field of ['change', 'expire'] as const) {
    const value = args[field];
    if (value !== undefined && parseAccountDate(value, nowMs) === null) {
      problems.add(field, 'must be epoch seconds, dd-mmm-yyyy, dd-mm-yyyy or +<n> followed by one of m h d w o y');
    }
  }
  if (args.class !== undefined && !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/.test(args.class)) {
    problems.add('class', 'must be a login class name: letters, digits, `.`, `_` or `-`');
  }
  if (args.comment !== undefined && !COMMENT.test(args.comment)) {
    problems.add('comment', 'may hold letters, digits, spaces and & \' , . ( ) _ + @ / # ! - only, and must not start with -');
  }
  for (const field of ['home_dir', 'shell'] as const) {
    const value = args[field];
    if (value !== undefined && !ACCOUNT_PATH.test(value)) {
      problems.add(field, 'must be an absolute path of letters, digits and / . _ + @ - only');
    }
  }
  if (args.group !== undefined) checkName(problems, 'group', args.group);
  for (const g of args.other_groups ?? []) checkName(problems, 'other_groups', g);
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
