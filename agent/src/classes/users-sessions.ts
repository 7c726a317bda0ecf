/**
 * Sessions after account changes: a session's access level was fixed when it signed in, so when an
 * account is deleted or renamed, or gains or loses the admin or limited group, its sessions end and
 * the user signs in again with the rights they have now.
 */
import type { AgentServices } from '../server/context.ts';
import type { UserChanges } from '../platforms/ports/users.ts';
import { findUser, type AccountsSnapshot } from './users-checks.ts';

/** The groups that decide a session's access level (full or limited). */
export function isLevelGroup(services: AgentServices, group: string): boolean {
  return group === services.platform.adminGroup || group === services.platform.limitedGroup;
}

/** Whether a usermod changes which of the level-deciding groups the account is in. */
export function levelGroupsChange(services: AgentServices, state: AccountsSnapshot, name: string, changes: UserChanges): boolean {
  if (changes.group === undefined && changes.other_groups === undefined) return false;
  const account = findUser(state, name);
  const primaryName = (group: string | undefined) => state.groups.find((g) => g.name === group || g.gid === group)?.name;
  const memberOf = (groups: readonly string[], primary: string | undefined) =>
    [services.platform.adminGroup, services.platform.limitedGroup].filter((g) => groups.includes(g) || g === primary).join(',');
  const currentMembers = state.groups.filter((g) => g.members.includes(name)).map((g) => g.name);
  const before = memberOf(currentMembers, primaryName(account?.gid));
  const after = memberOf(changes.other_groups ?? currentMembers, primaryName(changes.group ?? account?.gid));
  return before !== after;
}

/**
 * Ends the sessions of an account whose rights just changed (they were fixed at sign-in), and for
 * a deleted or renamed account forgets its registered keys, so a later account of that name does
 * not inherit them.
 */
export function signOut(services: AgentServices, user: string, options: { keys?: boolean } = {}): void {
  services.sessions.revokeUser(user);
  if (!options.keys) return;
  for (const key of services.keys.list(user)) {
    const md5 = services.keys.revoke(user, key.pubKey);
    if (md5) services.sessions.revokeKey(md5);
  }
}
