/**
 * Jails on Linux: namespace containers over a release root, kept under the jail root
 * (`<data>/jails` unless configured):
 *
 * - `releases/<name>/root`: a release, made once: from a tarball supplied as `releases/<name>.tar`
 *   (`.tar.gz`, `.tgz`, `.tar.xz`), or with debootstrap (`--variant=minbase <name>`) when `<name>` is
 *   a Debian suite and debootstrap is installed; a `releases/<name>/root` made by hand is used as is;
 * - `jails/<uuid>/{upper,work,root}`: a jail, an overlay of its upper directory on the release's root
 *   (every jail shares its release's files: type `basejail`); an empty jail (`-e`) is a plain root;
 * - `jails.json`: the record (common/jail-book.ts: properties, release, made by hostadm) and the
 *   running jails' init PIDs and veths.
 *
 * Releases are made by jail-releases.ts, running is jail-runtime.ts, limits jail-limits.ts. Pools are ZFS's: `activatepool`/`deactivatepool`
 * answer 501 here. A failed create removes what it made (the release it unpacked for it included).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import {
  createPlan,
  emptyBook,
  findJail,
  jailConflict,
  jailType,
  newJailProps,
  releaseSettingsOf,
  settingsOf,
  shortIp4,
  type BookJail,
  type BookRelease,
  type JailBook,
} from '../common/jail-book.ts';
import type { JailCleanScope, JailPort, JailProp } from '../ports/jail.ts';
import {
  attachNetwork,
  detachNetwork,
  execInside,
  isAlive,
  launchInit,
  mountRoot,
  run,
  setHostname,
  stopInit,
  unmountRoot,
  vethName,
  type JailPaths,
  type RunningJail,
} from './jail-runtime.ts';
import { JailCgroups, hasLimits, limitsOf } from './jail-limits.ts';
import { humanBytes, parsePasswdAccount } from './parse/jail.ts';
import { LINUX_DEFAULTS, makeRelease } from './jail-releases.ts';

interface LinuxJailState {
  book: JailBook;
  running: Record<string, RunningJail>;
}

const SLOW = { timeoutMs: 20 * 60_000 };

export interface LinuxJailOptions {
  /** Where releases, jails and their record live (no `,` `:` or spaces: overlay options cannot hold them). */
  jailRoot: string;
  cgroupRoot: string;
}

export function linuxJail(ctx: LinuxContext, options: LinuxJailOptions): JailPort {
  const { runner } = ctx;
  const { jailRoot } = options;
  if (!jailRoot.startsWith('/') || /[,:\s]/.test(jailRoot)) throw new Error(`jail root ${jailRoot} must be an absolute path without , : or spaces`);
  const statePath = join(jailRoot, 'jails.json');
  const cgroups = new JailCgroups(runner, options.cgroupRoot);

  const load = (): LinuxJailState => {
    if (!existsSync(statePath)) return { book: emptyBook(), running: {} };
    return JSON.parse(readFileSync(statePath, 'utf8')) as LinuxJailState;
  };
  const save = (state: LinuxJailState): void => {
    mkdirSync(jailRoot, { recursive: true, mode: 0o700 });
    const tmp = `${statePath}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
    renameSync(tmp, statePath);
  };
  const update = (change: (state: LinuxJailState) => void): void => {
    const state = load();
    change(state);
    save(state);
  };

  const releaseRoot = (tag: string) => join(jailRoot, 'releases', tag, 'root');
  const pathsOf = (state: LinuxJailState, jail: BookJail): JailPaths => {
    const dir = join(jailRoot, 'jails', jail.uuid);
    const release = jail.release ? state.book.releases[jail.release] : undefined;
    return { dir, root: join(dir, 'root'), upper: join(dir, 'upper'), work: join(dir, 'work'), lower: release ? releaseRoot(release.tag) : null };
  };
  const label = (j: BookJail) => `${j.uuid} (${j.props.tag})`;

  /** The jail's init PID when it runs; a jail whose init has gone is tidied up (mount, veth, cgroups) and forgotten. */
  const aliveInit = async (state: LinuxJailState, jail: BookJail): Promise<number | null> => {
    const entry = state.running[jail.uuid];
    if (!entry) return null;
    const paths = pathsOf(state, jail);
    if (await isAlive(runner, entry.pid, paths.root)) return entry.pid;
    await tidy(state, jail, entry);
    return null;
  };
  const tidy = async (state: LinuxJailState, jail: BookJail, entry: RunningJail): Promise<void> => {
    const others = Object.keys(state.running).filter((u) => u !== jail.uuid);
    await detachNetwork(runner, entry.veth, others.length > 0);
    await cgroups.remove(jail.uuid);
    await unmountRoot(runner, pathsOf(state, jail));
    update((s) => {
      delete s.running[jail.uuid];
    });
    delete state.running[jail.uuid];
  };

  const ensureRelease = (name: string) => makeRelease(runner, jailRoot, load().book, name);

  /** Makes a jail's directories and records it; on any failure removes what it made (and the release it unpacked for it). */
  const make = async (
    props: readonly JailProp[],
    build: (paths: JailPaths) => Promise<void>,
    base: Record<string, string>,
    release: BookRelease | null,
    type: string,
    releaseMade: boolean,
  ): Promise<BookJail> => {
    const uuid = randomUUID();
    const state = load();
    if (release) state.book.releases[release.uuid] = release;
    const jail: BookJail = { uuid, release: release?.uuid ?? null, hostadm: true, props: {} };
    const paths = pathsOf(state, jail);
    try {
      jail.props = newJailProps(state.book, { ...base, tag: uuid }, props, uuid);
      if (!props.some(([n]) => n === 'host_hostname')) jail.props.host_hostname = jail.props.tag as string;
      Object.assign(jail.props, { type, release: release?.tag ?? 'EMPTY', boot: 'off', last_started: 'none', compressratio: '1.00x', mountpoint: paths.root });
      await run(runner, ['mkdir', '-p', '--', paths.upper, paths.work, paths.root]);
      await build(paths);
      update((s) => {
        if (release) s.book.releases[release.uuid] = release;
        s.book.jails[uuid] = jail;
      });
    } catch (error) {
      await runner.run(['rm', '-rf', '--one-file-system', '--', paths.dir], SLOW);
      if (releaseMade && release) await runner.run(['rm', '-rf', '--one-file-system', '--', join(jailRoot, 'releases', release.tag)], SLOW);
      throw error;
    }
    return jail;
  };

  const destroyDirs = async (state: LinuxJailState, jail: BookJail): Promise<void> => {
    const paths = pathsOf(state, jail);
    await unmountRoot(runner, paths);
    await run(runner, ['rm', '-rf', '--one-file-system', '--', paths.dir], SLOW);
  };

  return {
    async list() {
      const state = load();
      const out = [];
      for (const j of Object.values(state.book.jails)) {
        const pid = await aliveInit(state, j);
        out.push({
          uuid: j.uuid,
          tag: j.props.tag ?? j.uuid,
          boot: j.props.boot === 'on' ? ('on' as const) : ('off' as const),
          state: pid ? 'up' : 'down',
          jid: pid ? String(pid) : '-',
          ip4: shortIp4(j.props.ip4_addr),
          type: jailType(j),
        });
      }
      return out;
    },
    async settings(name, prop) {
      return settingsOf(findJail(load().book, name).props, prop);
    },
    async releaseSettings(prop) {
      return releaseSettingsOf(load().book, prop);
    },
    async usage() {
      const state = load();
      const available = (await run(runner, ['df', '-B1', '--output=avail', '--', existsSync(jailRoot) ? jailRoot : '/'])).trim().split('\n').pop() ?? '';
      const out = [];
      for (const j of Object.values(state.book.jails)) {
        const paths = pathsOf(state, j);
        const used = (await run(runner, ['du', '-s', '-B1', '-x', '--', paths.lower ? paths.upper : paths.root])).split(/\s/)[0] ?? '0';
        out.push({
          uuid: j.uuid,
          tag: j.props.tag ?? j.uuid,
          crt: '1.00x',
          res: j.props.reservation ?? 'none',
          qta: j.props.quota ?? 'none',
          use: humanBytes(Number(used)),
          ava: humanBytes(Number(available)),
        });
      }
      return out;
    },
    async start(name) {
      const state = load();
      const j = findJail(state.book, name);
      if (await aliveInit(state, j)) return { changed: false, info: ` ${label(j)} is already up` };
      if (j.props.template === 'yes') throw jailConflict(`${j.props.tag} is a template: clone it to run it`);
      const limits = limitsOf(j.props);
      const paths = pathsOf(state, j);
      const messages = [`* Starting ${label(j)}`];
      await mountRoot(runner, paths);
      if (paths.lower) messages.push(`+ Mounted root (overlay on release ${j.props.release}) OK`);
      const init = (j.props.exec_start ?? LINUX_DEFAULTS.exec_start ?? '').split(' ').filter((w) => w !== '');
      let pid: number | null = null;
      const veth = vethName(j.uuid);
      try {
        pid = await launchInit(runner, paths, init);
        update((s) => {
          s.running[j.uuid] = { pid: pid as number, veth };
        });
        messages.push(`+ Started ${init.join(' ')} as PID ${pid} in new mount, PID, UTS, IPC and network namespaces OK`);
        await setHostname(runner, pid, j.props.host_hostname ?? j.props.tag ?? j.uuid);
        const addresses =
          (j.props.ip4_addr ?? 'none') === 'none' ? [] : (j.props.ip4_addr ?? '').split(',').map((a) => (a.includes('|') ? (a.split('|')[1] ?? '') : a));
        await attachNetwork(runner, pid, veth, addresses);
        messages.push(`+ Configuring network (eth0 on ${'hostadm-jails'}${addresses.length ? `, ${addresses.join(' ')}` : ''}) OK`);
        if (hasLimits(limits)) {
          await cgroups.apply(j.uuid, pid, limits);
          messages.push('+ Applying resource limits OK');
        }
      } catch (error) {
        const now = load();
        const entry = now.running[j.uuid];
        if (entry) await stopInit(runner, entry.pid, paths.root, 0);
        if (entry) await tidy(now, j, entry);
        else await unmountRoot(runner, paths);
        throw error;
      }
      update((s) => {
        const stored = s.book.jails[j.uuid];
        if (stored) stored.props.last_started = new Date().toISOString().replace('T', ' ').slice(0, 19);
      });
      messages.push('+ Started OK');
      return { changed: true, messages };
    },
    async stop(name) {
      const state = load();
      const j = findJail(state.book, name);
      const pid = await aliveInit(state, j);
      if (!pid) return { changed: false, info: ` ${label(j)} is already down` };
      const timeout = Math.min(Math.max(Number.parseInt(j.props.stop_timeout ?? '10', 10) || 0, 0), 300);
      const messages = [`* Stopping ${label(j)}`];
      const killed = await stopInit(runner, pid, pathsOf(state, j).root, timeout);
      messages.push(killed ? `+ Stopping init (SIGKILL after ${timeout}s) OK` : '+ Stopping init OK');
      await tidy(state, j, state.running[j.uuid] as RunningJail);
      messages.push('+ Tearing down network OK', '+ Removing resource limits OK', '+ Unmounting root OK');
      return { changed: true, messages };
    },
    async cap(name) {
      const state = load();
      const j = findJail(state.book, name);
      const pid = await aliveInit(state, j);
      if (!pid) throw jailConflict(`${j.props.tag} is not running: its limits are applied when it starts`);
      await cgroups.apply(j.uuid, pid, limitsOf(j.props));
    },
    async create(props, switches) {
      // Props are checked before a release is unpacked for them.
      newJailProps(load().book, LINUX_DEFAULTS, props, randomUUID());
      const asked = props.find(([n]) => n === 'release')?.[1];
      const ensured = switches === '-e' || asked === undefined ? null : await ensureRelease(asked);
      const book = load().book;
      if (ensured) book.releases[ensured.release.uuid] = ensured.release;
      const plan = createPlan(book, props, switches);
      const jail = await make(
        props,
        async () => {},
        plan.release?.props ?? LINUX_DEFAULTS,
        plan.release,
        plan.release ? 'basejail' : 'emptyjail',
        ensured?.made ?? false,
      );
      return { uuid: jail.uuid, lines: [`Successfully created: ${jail.uuid} (${jail.props.tag})`] };
    },
    async clone(name, props) {
      const state = load();
      const source = findJail(state.book, name);
      const release = source.release ? (state.book.releases[source.release] ?? null) : null;
      const from = pathsOf(state, source);
      const copy = async (paths: JailPaths) => {
        await run(runner, ['cp', '-a', '--', `${release ? from.upper : from.root}/.`, release ? paths.upper : paths.root], SLOW);
      };
      const jail = await make(props, copy, { ...source.props, origin: source.uuid }, release, source.props.type ?? 'basejail', false);
      return { uuid: jail.uuid, lines: [`Successfully cloned: ${source.uuid} -> ${jail.uuid} (${jail.props.tag})`] };
    },
    async destroy(name) {
      const state = load();
      const j = findJail(state.book, name);
      if (await aliveInit(state, j)) throw jailConflict(`${j.props.tag} is running: stop it first (nothing was destroyed)`);
      await destroyDirs(state, j);
      update((s) => {
        delete s.book.jails[j.uuid];
      });
      return [`Destroyed: ${label(j)}`];
    },
    async exec(name, user, argv) {
      const state = load();
      const j = findJail(state.book, name);
      const pid = await aliveInit(state, j);
      if (!pid) throw jailConflict(`${j.props.tag} is not running: start it to run commands in it`);
      // Read from inside the jail's root, so a symlink there cannot point the agent at the host's files.
      const passwd = await runner.run(['nsenter', '-t', String(pid), '-m', '-r', '--', 'cat', '/etc/passwd'], { timeoutMs: 30_000 });
      const account = passwd.code === 0 ? parsePasswdAccount(passwd.stdout, user) : null;
      if (!account)
        throw new HostadmError('NOT_FOUND', `jail ${j.props.tag} has no account ${user} (its /etc/passwd)`, {
          fieldErrors: [{ field: 'user', message: 'no such account in the jail' }],
        });
      const timeout = Math.min(Math.max(Number.parseInt(j.props.exec_timeout ?? '60', 10) || 60, 1), 3600);
      return execInside(runner, pid, account, argv, timeout, await cgroups.procsFiles(j.uuid));
    },
    async clean(scope) {
      await cleanLinux(scope);
    },
    async activePool() {
      throw unsupported(`Linux jails live in the jail root ${jailRoot}, not on a ZFS pool`);
    },
    async activate() {
      throw unsupported(`Linux jails live in the jail root ${jailRoot}, not on a ZFS pool`);
    },
    async deactivate() {
      throw unsupported(`Linux jails live in the jail root ${jailRoot}, not on a ZFS pool`);
    },
  };

  /** What hostadm made of `scope`; 409 with nothing removed while any of it runs or a release is in use. */
  async function cleanLinux(scope: JailCleanScope): Promise<void> {
    const state = load();
    const isTemplate = (j: BookJail) => j.props.template === 'yes';
    const jails =
      scope === 'releases'
        ? []
        : Object.values(state.book.jails).filter((j) => j.hostadm && (scope === 'all' || (scope === 'templates' ? isTemplate(j) : !isTemplate(j))));
    const up: string[] = [];
    for (const j of jails) if (await aliveInit(state, j)) up.push(j.props.tag ?? j.uuid);
    if (up.length > 0) throw new HostadmError('CONFLICT', `running jails would be destroyed (${up.join(', ')}): stop them first; nothing was cleaned`);
    const releases = scope === 'releases' || scope === 'all' ? Object.values(state.book.releases).filter((r) => r.hostadm) : [];
    const users = Object.values(state.book.jails).filter((j) => !jails.includes(j) && releases.some((r) => r.uuid === j.release));
    if (users.length > 0)
      throw new HostadmError('CONFLICT', `jails still use these releases (${users.map((j) => j.props.tag).join(', ')}); nothing was cleaned`);
    for (const j of jails) {
      await destroyDirs(state, j);
      update((s) => {
        delete s.book.jails[j.uuid];
      });
    }
    for (const r of releases) {
      await run(runner, ['rm', '-rf', '--one-file-system', '--', join(jailRoot, 'releases', r.tag)], SLOW);
      update((s) => {
        delete s.book.releases[r.uuid];
      });
    }
  }
}
