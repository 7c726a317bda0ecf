/**
 * FreeBSD jails through the maintained Python iocage (sysutils/py-iocage):
 *
 * - listjails `iocage list -l`, df `iocage df -l`: tables read by header (parse/jail.ts);
 * - getjailsettings `iocage get all|<prop> <jail>`; with `-r`, `iocage get -r -h <prop>`, which in
 *   this iocage reports the property of every jail (releases carry no properties of their own);
 * - startjail/stopjail `iocage start|stop <jail>`, whose lines are the progress messages; a jail
 *   already in that state is answered with INFO before anything runs;
 * - capjail: iocage has no `cap` any more, so its limits are re-applied as iocage's start does:
 *   `rctl -r jail:ioc-<name>`, then `rctl -a jail:ioc-<name>:<resource>:<action>=<amount>` for every
 *   rctl property not `off`;
 * - createjail `iocage create [-b|-e] [-r <release>] [-n <tag>] <props>`, clonejail `iocage clone
 *   <jail> [-n <tag>] <props>`: a create that fails after iocage made the jail is destroyed again;
 * - destroyjail `iocage destroy -f <jail>` (refused while it runs, before anything runs);
 * - execjail `iocage exec -U <user> <jail> -- <argv>`. iocage hands a one-word command to
 *   `/bin/sh -c`, so one word may hold only letters, digits and `. / _ + -` (400 otherwise);
 * - clean: `iocage clean -f -j|-t|-a` destroys everything of its kind, so it runs only when all of it
 *   was made by hostadm (recorded in `<data>/jail-created.json`); otherwise 409 naming the others.
 *   hostadm never fetches releases here, so cleanreleases only succeeds when there are none;
 * - activatepool `iocage activate <pool>` / `iocage get -p`; deactivatepool clears iocage's
 *   `org.freebsd.ioc:active` on the pool (this iocage has no `deactivate`).
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HostadmError, badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import { commandFailed } from '../common/host-command.ts';
import { jailConflict, jailNotFound } from '../common/jail-book.ts';
import type { JailInfo, JailPort, JailProp } from '../ports/jail.ts';
import {
  RCTL_RESOURCES,
  RCTL_VALUE,
  createdName,
  parseJailList,
  parseJailProps,
  parseJailUsage,
  parseRecursiveGet,
  parseTable,
  progressLines,
} from './parse/jail.ts';

const QUICK = { timeoutMs: 60_000 };
// Creating from a release, or starting a jail's services, can take minutes.
const SLOW = { timeoutMs: 15 * 60_000 };
const ONE_SAFE_WORD = /^[A-Za-z0-9_./+-]+$/;

export function freebsdJail(ctx: FreebsdContext): JailPort {
  const { runner } = ctx;
  const registryPath = join(ctx.dataDir, 'jail-created.json');

  const iocage = async (args: string[], options = QUICK): Promise<string> => {
    const result = await runner.run(['iocage', ...args], options);
    if (result.code !== 0) throw commandFailed(`iocage ${args.join(' ')}`, result);
    return result.stdout;
  };
  const created = (): string[] => (existsSync(registryPath) ? (JSON.parse(readFileSync(registryPath, 'utf8')) as { names: string[] }).names : []);
  const record = (change: (names: Set<string>) => void): void => {
    const names = new Set(created());
    change(names);
    const tmp = `${registryPath}.tmp`;
    writeFileSync(tmp, JSON.stringify({ names: [...names].sort() }), { mode: 0o600 });
    renameSync(tmp, registryPath);
  };

  const list = async (): Promise<JailInfo[]> => parseJailList(await iocage(['list', '-l']));
  const resolve = async (name: string): Promise<JailInfo> => {
    const jails = await list();
    const found = jails.find((j) => j.uuid === name) ?? jails.find((j) => j.tag === name);
    if (!found) throw jailNotFound(name);
    return found;
  };
  const up = (j: JailInfo) => j.state === 'up';

  /** Runs a create or clone; if it failed after iocage made the jail, destroys it again. */
  const make = async (args: string[], tag: string | undefined): Promise<{ uuid: string; lines: string[] }> => {
    const before = new Set((await list()).map((j) => j.uuid));
    const result = await runner.run(['iocage', ...args], SLOW);
    const name = createdName(result.stdout) ?? tag;
    if (result.code !== 0) {
      const leftover = (await list()).find((j) => !before.has(j.uuid));
      if (leftover) await runner.run(['iocage', 'destroy', '-f', leftover.uuid], SLOW);
      throw commandFailed(`iocage ${args.join(' ')}`, result);
    }
    const made = name ?? (await list()).find((j) => !before.has(j.uuid))?.uuid;
    if (!made) throw new HostadmError('HOST_ERROR', `iocage ${args[0]} succeeded but named no jail: ${result.stdout.trim()}`);
    record((names) => names.add(made));
    return { uuid: made, lines: progressLines(result.stdout) };
  };
  const propArgs = (props: readonly JailProp[]) => props.filter(([n]) => n !== 'tag' && n !== 'release').map(([n, v]) => `${n}=${v}`);
  const tagOf = (props: readonly JailProp[]) => props.find(([n]) => n === 'tag')?.[1];

  /** `iocage clean -f <flag>` when everything of that kind is hostadm's; 409 naming the others otherwise. */
  const clean = async (flag: string, jails: JailInfo[], releases: string[]): Promise<void> => {
    const ours = new Set(created());
    const foreign = [...jails.filter((j) => !ours.has(j.uuid)).map((j) => j.uuid), ...releases];
    if (foreign.length > 0)
      throw new HostadmError(
        'CONFLICT',
        `iocage holds what hostadm did not create (${foreign.join(', ')}), and iocage clean ${flag} would destroy it too; nothing was cleaned`,
      );
    const running = jails.filter(up);
    if (running.length > 0)
      throw new HostadmError('CONFLICT', `running jails would be destroyed (${running.map((j) => j.uuid).join(', ')}): stop them first; nothing was cleaned`);
    if (jails.length === 0 && releases.length === 0) return;
    await iocage(['clean', '-f', flag], SLOW);
    record((names) => {
      for (const j of jails) names.delete(j.uuid);
    });
  };
  const releases = async (): Promise<string[]> =>
    parseTable(await iocage(['list', '-r']))
      .map((row) => Object.values(row)[0] ?? '')
      .filter((r) => r !== '');
  const templates = async (): Promise<JailInfo[]> => parseJailList(await iocage(['list', '-t', '-l']));

  return {
    list,
    async settings(name, prop) {
      const j = await resolve(name);
      if (prop === 'all') return parseJailProps(await iocage(['get', 'all', j.uuid]));
      return { [prop]: (await iocage(['get', prop, j.uuid])).trim() };
    },
    async releaseSettings(prop) {
      return parseRecursiveGet(await iocage(['get', '-r', '-h', prop]), prop);
    },
    async usage() {
      return parseJailUsage(await iocage(['df', '-l']));
    },
    async start(name) {
      const j = await resolve(name);
      if (up(j)) return { changed: false, info: ` ${j.uuid} is already up` };
      return { changed: true, messages: progressLines(await iocage(['start', j.uuid], SLOW)) };
    },
    async stop(name) {
      const j = await resolve(name);
      if (!up(j)) return { changed: false, info: ` ${j.uuid} is already down` };
      return { changed: true, messages: progressLines(await iocage(['stop', j.uuid], SLOW)) };
    },
    async cap(name) {
      const j = await resolve(name);
      if (!up(j)) throw jailConflict(`${j.uuid} is not running: its limits are applied when it starts`);
      const props = parseJailProps(await iocage(['get', 'all', j.uuid]));
      const rules = RCTL_RESOURCES.filter((r) => (props[r] ?? 'off') !== 'off').map((r) => [r, props[r] as string] as const);
      const bad = rules.filter(([, v]) => !RCTL_VALUE.test(v));
      if (bad.length > 0)
        throw jailConflict(`limits not in rctl's <action>=<amount> form: ${bad.map(([r, v]) => `${r}=${v}`).join(', ')}; nothing was applied`);
      const subject = `jail:ioc-${j.uuid.replace(/\./g, '_')}`;
      await runner.run(['rctl', '-r', subject], QUICK);
      for (const [resource, value] of rules) {
        const result = await runner.run(['rctl', '-a', `${subject}:${resource}:${value}`], QUICK);
        if (result.code !== 0) throw commandFailed(`rctl -a ${subject}:${resource}:${value}`, result);
      }
    },
    async create(props, switches) {
      const release = props.find(([n]) => n === 'release')?.[1];
      if (switches !== '-e' && release === undefined)
        throw badRequest('give release=<name> (or switches -e for an empty jail)', [{ field: 'props', message: 'release missing' }]);
      const tag = tagOf(props);
      // iocage makes clone (thin) jails by default: `-c` asks for nothing more.
      const flags = switches === '-b' || switches === '-e' ? [switches] : [];
      const args = ['create', ...flags, ...(switches !== '-e' && release ? ['-r', release] : []), ...(tag ? ['-n', tag] : []), ...propArgs(props)];
      return make(args, tag);
    },
    async clone(name, props) {
      const j = await resolve(name);
      const tag = tagOf(props);
      return make(['clone', j.uuid, ...(tag ? ['-n', tag] : []), ...propArgs(props)], tag);
    },
    async destroy(name) {
      const j = await resolve(name);
      if (up(j)) throw jailConflict(`${j.uuid} is running: stop it first (nothing was destroyed)`);
      const out = await iocage(['destroy', '-f', j.uuid], SLOW);
      record((names) => names.delete(j.uuid));
      return progressLines(out);
    },
    async exec(name, user, argv) {
      if (argv.length === 1 && !ONE_SAFE_WORD.test(argv[0] as string)) {
        throw badRequest(
          'iocage runs a one-word command through /bin/sh -c: one word may hold only letters, digits and . / _ + - (give the arguments as more words)',
          [{ field: 'command', message: 'one word with shell characters' }],
        );
      }
      const j = await resolve(name);
      if (!up(j)) throw jailConflict(`${j.uuid} is not running: start it to run commands in it`);
      return iocage(['exec', '-U', user, j.uuid, '--', ...argv], SLOW);
    },
    async clean(scope) {
      if (scope === 'jails')
        return clean(
          '-j',
          (await list()).filter((j) => j.type !== 'template'),
          [],
        );
      if (scope === 'templates') return clean('-t', await templates(), []);
      if (scope === 'releases') return clean('-r', [], await releases());
      return clean('-a', [...(await list()), ...(await templates())], await releases());
    },
    async activePool() {
      return (await iocage(['get', '-p'])).trim();
    },
    async activate(pool) {
      await iocage(['activate', pool]);
    },
    async deactivate(pool) {
      const active = (await iocage(['get', '-p'])).trim();
      if (active !== pool)
        throw new HostadmError('CONFLICT', `pool ${pool} is not the active one (${active || 'none'} is)`, {
          fieldErrors: [{ field: 'pool', message: 'not active' }],
        });
      const result = await runner.run(['zfs', 'set', 'org.freebsd.ioc:active=no', pool], QUICK);
      if (result.code !== 0) throw commandFailed(`zfs set org.freebsd.ioc:active=no ${pool}`, result);
    },
  };
}
