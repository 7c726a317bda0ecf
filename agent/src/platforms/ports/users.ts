/**
 * The `users` port: accounts and groups of the host, and the removable devices personacrypt could
 * use. Values arrive validated (contract + the handler's checks against the current accounts), so a
 * port only translates them into host commands; it never decides who may do what.
 */
import type { z } from 'zod';
import type { userRecord } from '@hostadm/shared/api/users.ts';

/**
 * One account as `usershow` reports it: the contract's record, every value the wire's string
 * (`class` is '' where the platform has none; `change` and `expire` are epoch seconds, '0' = never),
 * without `canremove`, which the handler adds for the caller.
 */
export type UserAccount = Omit<z.output<ReturnType<typeof userRecord>>, 'canremove'>;

export interface GroupEntry {
  name: string;
  gid: string;
  /** Secondary members (the group file's member list), possibly empty. */
  members: string[];
}

/**
 * Fields `useradd` and `usermod` share. Dates are kept as the client wrote them (epoch seconds,
 * `dd-mmm-yy[yy]`, `dd-mm-yy[yy]` or `+<n>[mhdwoy]`, checked by the contract's `parseAccountDate`): FreeBSD's
 * `pw` takes them verbatim, the other platforms convert them with that same function.
 */
export interface AccountFields {
  uid?: string;
  change?: string;
  class?: string;
  comment?: string;
  expire?: string;
  group?: string;
  home_dir?: string;
  other_groups?: string[];
  shell?: string;
}

export interface NewUser extends AccountFields {
  name: string;
  /** Clear text; goes to the host on standard input only. */
  password: string;
}

export interface UserChanges extends AccountFields {
  newname?: string;
  password?: string;
}

export type MemberChange = { set: string[] } | { add: string[] } | { remove: string[] };

export interface UsersPort {
  listUsers(): Promise<UserAccount[]>;
  listGroups(): Promise<GroupEntry[]>;
  /** Creates the account with its password in one step, or leaves nothing behind. */
  addUser(user: NewUser): Promise<void>;
  deleteUser(name: string, cleanHome: boolean): Promise<void>;
  /** Applies every change or none (a failed later step undoes the earlier ones). */
  modifyUser(name: string, changes: UserChanges): Promise<void>;
  addGroup(name: string, gid: string | undefined, members: string[]): Promise<void>;
  deleteGroup(name: string): Promise<void>;
  changeMembers(name: string, change: MemberChange): Promise<void>;
  /** Removable disks keyed by device name (`da0`), valued `<ident> <size>` as personacrypt prints them. */
  removableDevices(): Promise<Record<string, string>>;
}
