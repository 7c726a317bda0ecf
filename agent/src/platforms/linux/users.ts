/**
 * Accounts and groups on Linux with shadow-utils (useradd/usermod/userdel, groupadd/groupdel,
 * gpasswd, chpasswd, chage) and getent, all through the runner so tests can aim them at a
 * namespace with its own /etc. Passwords go to chpasswd on standard input (it hashes with the
 * system's method, yescrypt on Debian 12). A change that takes several commands undoes the
 * finished ones when a later one fails, so the account is never left half-changed.
 */
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { RunOptions } from '../../runner/runner.ts';
import { hostError, runOrHostError } from '../common/host-command.ts';
import type { GroupEntry, MemberChange, NewUser, UserAccount, UserChanges, UsersPort } from '../ports/users.ts';
import { parseAccountDate } from '@hostadm/shared/api/fields-accounts.ts';
import type { LinuxContext } from './index.ts';
import { chageArgsFor, parseGroup, parseLsblk, parsePasswd, parseShadow, type ShadowEntry } from './parse/users.ts';

const TIMEOUT_MS = 30_000;
const NO_HOME = new Set(['/nonexistent', '/var/empty']);

function noClasses(cls: string | undefined): void {
  if (cls !== undefined && cls !== '') {
    throw unsupported('login classes (class) exist on FreeBSD only; Linux has no login.conf classes');
  }
}

function seconds(value: string): number {
  const s = parseAccountDate(value, Date.now());
  // The handler checked the form already; this guards direct callers.
  if (s === null) throw new HostadmError('BAD_REQUEST', `not a date: ${value}`);
  return s;
}

/** usermod/useradd `-e`: a day, or '' for "never". */
function expireArg(value: string): string {
  const s = seconds(value);
  return s === 0 ? '' : isoDay(s);
}

/** `YYYY-MM-DD` (UTC) of epoch seconds: the form usermod/chage take. */
function isoDay(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().slice(0, 10);
}

export function linuxUsers(ctx: LinuxContext): UsersPort {
  const run = (argv: string[], what: string, options: RunOptions = {}) => runOrHostError(ctx.runner, argv, what, { timeoutMs: TIMEOUT_MS, ...options });

  async function shadow(): Promise<Map<string, ShadowEntry>> {
    // Without read access to shadow (not root) accounts are still listed, without aging.
    const result = await ctx.runner.run(['getent', 'shadow'], { timeoutMs: TIMEOUT_MS });
    return result.code === 0 ? parseShadow(result.stdout) : new Map();
  }

  /** Runs `steps` in order; when one fails, runs the undo of every finished one (newest first) and rethrows. */
  async function transaction(steps: Array<{ run: () => Promise<unknown>; undo?: () => Promise<unknown> }>): Promise<void> {
    const done: Array<() => Promise<unknown>> = [];
    for (const step of steps) {
      try {
        await step.run();
      } catch (err) {
        for (const undo of done.reverse()) await undo().catch(() => undefined);
        throw err;
      }
      if (step.undo) done.push(step.undo);
    }
  }

  const setPassword = (name: string, password: string) => run(['chpasswd'], `setting the password of ${name} failed`, { input: `${name}:${password}\n` });

  return {
    async listUsers(): Promise<UserAccount[]> {
      const [passwd, aging] = await Promise.all([run(['getent', 'passwd'], 'listing accounts failed'), shadow()]);
      return parsePasswd(passwd, aging);
    },

    async listGroups(): Promise<GroupEntry[]> {
      return parseGroup(await run(['getent', 'group'], 'listing groups failed'));
    },

    async addUser(user: NewUser) {
      noClasses(user.class);
      const argv = ['useradd'];
      if (user.uid !== undefined) argv.push('-u', user.uid);
      if (user.comment !== undefined) argv.push('-c', user.comment);
      const makeHome = user.home_dir !== undefined && !NO_HOME.has(user.home_dir);
      if (user.home_dir !== undefined) argv.push('-d', user.home_dir, makeHome ? '-m' : '-M');
      if (user.expire !== undefined) argv.push('-e', expireArg(user.expire));
      if (user.shell !== undefined) argv.push('-s', user.shell);
      if (user.group !== undefined) argv.push('-g', user.group);
      if (user.other_groups !== undefined) argv.push('-G', user.other_groups.join(','));
      argv.push('--', user.name);
      // userdel -r on undo must not remove a directory that was there before this account.
      const homeExisted = makeHome && (await ctx.runner.run(['test', '-e', user.home_dir as string], { timeoutMs: TIMEOUT_MS })).code === 0;
      const removeHome = makeHome && !homeExisted;
      await transaction([
        {
          run: () => run(argv, `creating account ${user.name} failed`),
          undo: () => run(['userdel', ...(removeHome ? ['-r'] : []), '--', user.name], `undoing account ${user.name} failed`),
        },
        { run: () => setPassword(user.name, user.password) },
        ...(user.change !== undefined
          ? [
              {
                run: () =>
                  run(
                    ['chage', ...chageArgsFor(seconds(user.change as string), Date.now()), '--', user.name],
                    `setting the password change time of ${user.name} failed`,
                  ),
              },
            ]
          : []),
      ]);
    },

    async deleteUser(name: string, cleanHome: boolean) {
      await run(['userdel', ...(cleanHome ? ['-r'] : []), '--', name], `deleting account ${name} failed`);
    },

    async modifyUser(name: string, changes: UserChanges) {
      noClasses(changes.class);
      const before = (await shadow()).get(name);
      const restoreAging = () =>
        run(['chage', '-d', before?.lastchg || '-1', '-M', before?.max || '-1', '--', name], `restoring the password aging of ${name} failed`);
      const usermod: string[] = [];
      if (changes.uid !== undefined) usermod.push('-u', changes.uid);
      if (changes.comment !== undefined) usermod.push('-c', changes.comment);
      if (changes.home_dir !== undefined) usermod.push('-d', changes.home_dir);
      if (changes.expire !== undefined) usermod.push('-e', expireArg(changes.expire));
      if (changes.shell !== undefined) usermod.push('-s', changes.shell);
      if (changes.group !== undefined) usermod.push('-g', changes.group);
      if (changes.other_groups !== undefined) usermod.push('-G', changes.other_groups.join(','));
      if (changes.newname !== undefined) usermod.push('-l', changes.newname);
      const steps: Array<{ run: () => Promise<unknown>; undo?: () => Promise<unknown> }> = [];
      if (changes.password !== undefined) {
        const password = changes.password;
        steps.push({
          run: () => setPassword(name, password),
          // chpasswd -e puts the old hash back; it stamps today as the last change, so aging is restored after it.
          undo: async () => {
            if (before) await run(['chpasswd', '-e'], `restoring the password of ${name} failed`, { input: `${name}:${before.hash}\n` });
            await restoreAging();
          },
        });
      }
      if (changes.change !== undefined) {
        const args = chageArgsFor(seconds(changes.change), Date.now());
        steps.push({ run: () => run(['chage', ...args, '--', name], `setting the password change time of ${name} failed`), undo: restoreAging });
      }
      // usermod changes all its fields in one write, and renames last, after the steps that use the old name.
      if (usermod.length > 0) steps.push({ run: () => run(['usermod', ...usermod, '--', name], `changing account ${name} failed`) });
      await transaction(steps);
    },

    async addGroup(name: string, gid: string | undefined, members: string[]) {
      const argv = ['groupadd', ...(gid !== undefined ? ['-g', gid] : []), '--', name];
      await transaction([
        { run: () => run(argv, `creating group ${name} failed`), undo: () => run(['groupdel', '--', name], `undoing group ${name} failed`) },
        ...(members.length > 0 ? [{ run: () => run(['gpasswd', '-M', members.join(','), '--', name], `setting the members of ${name} failed`) }] : []),
      ]);
    },

    async deleteGroup(name: string) {
      await run(['groupdel', '--', name], `deleting group ${name} failed`);
    },

    async changeMembers(name: string, change: MemberChange) {
      let members: string[];
      if ('set' in change) members = change.set;
      else {
        const current = parseGroup(await run(['getent', 'group', '--', name], `reading group ${name} failed`))[0]?.members ?? [];
        members = 'add' in change ? [...new Set([...current, ...change.add])] : current.filter((m) => !change.remove.includes(m));
      }
      // One gpasswd -M writes the whole list (group and gshadow) at once: nothing to undo.
      await run(['gpasswd', '-M', members.join(','), '--', name], `setting the members of ${name} failed`);
    },

    async removableDevices() {
      const result = await ctx.runner.run(['lsblk', '-J', '-b', '-o', 'NAME,RM,SIZE,MODEL,TYPE'], { timeoutMs: TIMEOUT_MS });
      if (result.code === 127) throw unsupported('lsblk (util-linux) is not installed');
      if (result.code !== 0) throw hostError('lsblk failed', result);
      return parseLsblk(result.stdout);
    },
  };
}
