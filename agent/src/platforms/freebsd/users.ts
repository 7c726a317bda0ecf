/**
 * Accounts and groups on FreeBSD with pw(8), as the original service used it, minus its shell:
 * every command is an argv array and a password travels only on pw's standard input (`-h 0`), so
 * the account and its password are written in the one pw run (nothing to undo).
 */
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { RunOptions } from '../../runner/runner.ts';
import { hostError, runOrHostError } from '../common/host-command.ts';
import type { AccountFields, MemberChange, NewUser, UserChanges, UsersPort } from '../ports/users.ts';
import type { FreebsdContext } from './index.ts';
import { parseGroupshow, parsePersonacryptList, parseUsershow } from './parse/users.ts';

/** pw prints GECOS in the locale's charset; UTF-8 keeps names like "Zoë" intact (as the original set it). */
const PW_ENV = { MM_CHARSET: 'UTF-8' };
const TIMEOUT_MS = 30_000;

/** Home directories pw must not try to create (`-m`). */
const NO_HOME = new Set(['/nonexistent', '/var/empty']);

/** pw's flags for the fields useradd and usermod share, in the original's order. */
function fieldFlags(f: AccountFields): string[] {
  const argv: string[] = [];
  if (f.uid !== undefined) argv.push('-u', f.uid);
  if (f.comment !== undefined) argv.push('-c', f.comment);
  if (f.home_dir !== undefined) argv.push('-d', f.home_dir);
  if (f.expire !== undefined) argv.push('-e', f.expire);
  if (f.change !== undefined) argv.push('-p', f.change);
  if (f.shell !== undefined) argv.push('-s', f.shell);
  if (f.group !== undefined) argv.push('-g', f.group);
  if (f.other_groups !== undefined) argv.push('-G', f.other_groups.join(','));
  if (f.class !== undefined) argv.push('-L', f.class);
  return argv;
}

export function freebsdUsers(ctx: FreebsdContext): UsersPort {
  const run = (argv: string[], what: string, options: RunOptions = {}) => runOrHostError(ctx.runner, argv, what, { timeoutMs: TIMEOUT_MS, ...options });

  return {
    async listUsers() {
      return parseUsershow(await run(['pw', 'usershow', '-a'], 'listing accounts failed', { env: PW_ENV }));
    },

    async listGroups() {
      return parseGroupshow(await run(['pw', 'groupshow', '-a'], 'listing groups failed', { env: PW_ENV }));
    },

    async addUser(user: NewUser) {
      const argv = ['pw', 'useradd', '-n', user.name, ...fieldFlags(user), '-h', '0'];
      if (user.home_dir !== undefined && !NO_HOME.has(user.home_dir)) argv.push('-m');
      await run(argv, `creating account ${user.name} failed`, { input: `${user.password}\n`, env: PW_ENV });
    },

    async deleteUser(name: string, cleanHome: boolean) {
      await run(['pw', 'userdel', '-n', name, ...(cleanHome ? ['-r'] : [])], `deleting account ${name} failed`);
    },

    async modifyUser(name: string, changes: UserChanges) {
      const argv = ['pw', 'usermod', '-n', name, ...fieldFlags(changes)];
      if (changes.newname !== undefined) argv.push('-l', changes.newname);
      const options: RunOptions = { env: PW_ENV };
      if (changes.password !== undefined) {
        argv.push('-h', '0');
        options.input = `${changes.password}\n`;
      }
      await run(argv, `changing account ${name} failed`, options);
    },

    async addGroup(name: string, gid: string | undefined, members: string[]) {
      const argv = ['pw', 'groupadd', '-n', name];
      if (gid !== undefined) argv.push('-g', gid);
      if (members.length > 0) argv.push('-M', members.join(','));
      await run(argv, `creating group ${name} failed`);
    },

    async deleteGroup(name: string) {
      await run(['pw', 'groupdel', '-n', name], `deleting group ${name} failed`);
    },

    async changeMembers(name: string, change: MemberChange) {
      const [flag, list] = 'set' in change ? ['-M', change.set] : 'add' in change ? ['-m', change.add] : ['-d', change.remove];
      await run(['pw', 'groupmod', '-n', name, flag, list.join(',')], `changing the members of group ${name} failed`);
    },

    async removableDevices() {
      const result = await ctx.runner.run(['personacrypt', 'list', '-r'], { timeoutMs: TIMEOUT_MS });
      if (result.code === 127) {
        throw unsupported('personacrypt is not installed on this host (it is a TrueOS tool, not part of FreeBSD)');
      }
      if (result.code !== 0) throw hostError('personacrypt list -r failed', result);
      return parsePersonacryptList(result.stdout);
    },
  };
}
