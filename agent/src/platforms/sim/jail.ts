/**
 * The simulated host's jails: iocage on ZFS pools (`zroot` active, `tank` beside it), two fetched
 * releases and two jails the host had before hostadm (so the clean actions have something to leave
 * alone). Everything is the `jail` slice of the sim state; starting and stopping take a moment per
 * step, as iocage does, and say so in iocage's words. `execjail` runs nothing: a few commands answer
 * as a FreeBSD jail would (id, hostname, whoami, uname, echo, pwd, true, false), others say they were
 * simulated.
 */
import { randomUUID } from 'node:crypto';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import {
  JAIL_DEFAULTS,
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
  type JailBook,
} from '../common/jail-book.ts';
import type { JailCleanScope, JailPort } from '../ports/jail.ts';

export interface SimJails {
  /** Pool name to what iocage keeps on it. */
  pools: Record<string, JailBook>;
  active: string | null;
  /** uuid to jid of the jails that run. */
  running: Record<string, number>;
  nextJid: number;
}

/** How long each step of a start or stop takes: long enough to be seen in a demo, short for tests. */
const STEP_MS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Accounts of a FreeBSD base system (uid, primary group, its gid). */
const JAIL_ACCOUNTS: Record<string, { uid: number; group: string; gid: number; home: string }> = {
  root: { uid: 0, group: 'wheel', gid: 0, home: '/root' },
  toor: { uid: 0, group: 'wheel', gid: 0, home: '/root' },
  daemon: { uid: 1, group: 'daemon', gid: 1, home: '/root' },
  operator: { uid: 2, group: 'operator', gid: 5, home: '/' },
  www: { uid: 80, group: 'www', gid: 80, home: '/nonexistent' },
  nobody: { uid: 65534, group: 'nobody', gid: 65534, home: '/nonexistent' },
};

function release(uuid: string, tag: string): JailBook['releases'][string] {
  return {
    uuid,
    tag,
    hostadm: false,
    props: { ...JAIL_DEFAULTS, release: tag, tag, host_hostuuid: uuid, type: 'release', used: '1.12G', available: '92.7G', compressratio: '2.01x' },
  };
}

function seedJail(uuid: string, tag: string, releaseTag: string, extra: Record<string, string>): BookJail {
  return {
    uuid,
    release: null,
    hostadm: false,
    props: { ...JAIL_DEFAULTS, tag, host_hostuuid: uuid, host_hostname: tag, release: releaseTag, used: '1.04G', available: '92.7G', ...extra },
  };
}

export function seedJails(): SimJails {
  const zroot = emptyBook();
  zroot.releases['7b4d1c0e-5e8a-4f0b-9f51-0d7d5e4c2a11'] = release('7b4d1c0e-5e8a-4f0b-9f51-0d7d5e4c2a11', '13.3-RELEASE');
  zroot.releases['c2f9a6e4-1b3d-4c8e-a7f0-5b2e9d1c6f38'] = release('c2f9a6e4-1b3d-4c8e-a7f0-5b2e9d1c6f38', '14.1-RELEASE');
  zroot.jails['26e8e027-f00c-11e4-8f7f-3c970e80eb61'] = seedJail('26e8e027-f00c-11e4-8f7f-3c970e80eb61', 'www01', '14.1-RELEASE', {
    type: 'thickjail',
    boot: 'on',
    ip4_addr: 'em0|192.168.1.20/24',
  });
  zroot.jails['a91e5b8c-3d2f-4e61-b0c7-8f4a2d6e1b93'] = seedJail('a91e5b8c-3d2f-4e61-b0c7-8f4a2d6e1b93', 'db01', '13.3-RELEASE', {
    type: 'basejail',
    used: '412M',
    memoryuse: '2G:deny',
  });
  return { pools: { zroot, tank: emptyBook() }, active: 'zroot', running: { '26e8e027-f00c-11e4-8f7f-3c970e80eb61': 1 }, nextJid: 2 };
}

const label = (j: BookJail) => `${j.uuid} (${j.props.tag})`;

export function simJail(ctx: SimContext): JailPort {
  const slice = ctx.store.slice('jail', seedJails);
  const book = (): JailBook => {
    const state = slice.get();
    if (state.active === null) throw new HostadmError('CONFLICT', 'no pool is active for jails: activatepool one first');
    return state.pools[state.active] ?? emptyBook();
  };
  /** Changes the active pool's book in the persisted state. */
  const change = <R>(edit: (b: JailBook, state: SimJails) => R): R =>
    slice.update((state) => {
      if (state.active === null) throw new HostadmError('CONFLICT', 'no pool is active for jails: activatepool one first');
      const b = state.pools[state.active] ?? emptyBook();
      state.pools[state.active] = b;
      return edit(b, state);
    });
  const running = (uuid: string) => slice.get().running[uuid] !== undefined;

  const make = async (source: BookJail | null, props: Parameters<JailPort['create']>[0], switches: Parameters<JailPort['create']>[1]) => {
    const b = book();
    const plan = source
      ? { release: source.release ? (b.releases[source.release] ?? null) : null, type: source.props.type ?? 'thickjail', uuid: randomUUID() }
      : createPlan(b, props, switches);
    const inherited = source ? source.props : (plan.release?.props ?? JAIL_DEFAULTS);
    const jailProps = newJailProps(b, { ...JAIL_DEFAULTS, ...inherited, boot: 'off', tag: plan.uuid }, props, plan.uuid);
    jailProps.type = plan.type;
    jailProps.release = source ? (source.props.release ?? '-') : (plan.release?.tag ?? 'EMPTY');
    if (!props.some(([n]) => n === 'host_hostname')) jailProps.host_hostname = jailProps.tag as string;
    jailProps.used = plan.type === 'basejail' ? '864K' : plan.type === 'emptyjail' ? '96K' : '1.04G';
    jailProps.origin = source ? `${slice.get().active}/iocage/jails/${source.uuid}/root@${plan.uuid}` : '-';
    await sleep(STEP_MS);
    change((draft) => {
      draft.jails[plan.uuid] = { uuid: plan.uuid, release: plan.release?.uuid ?? null, hostadm: true, props: jailProps };
    });
    return { uuid: plan.uuid, tag: jailProps.tag as string };
  };

  return {
    async list() {
      const state = slice.get();
      if (state.active === null) return [];
      return Object.values(book().jails).map((j) => ({
        uuid: j.uuid,
        tag: j.props.tag ?? j.uuid,
        boot: j.props.boot === 'on' ? 'on' : 'off',
        state: running(j.uuid) ? 'up' : 'down',
        jid: String(state.running[j.uuid] ?? '-'),
        ip4: shortIp4(j.props.ip4_addr),
        type: jailType(j),
      }));
    },
    async settings(jail, prop) {
      return settingsOf(findJail(book(), jail).props, prop);
    },
    async releaseSettings(prop) {
      return releaseSettingsOf(book(), prop);
    },
    async usage() {
      return Object.values(book().jails).map((j) => ({
        uuid: j.uuid,
        tag: j.props.tag ?? j.uuid,
        crt: j.props.compressratio ?? '1.00x',
        res: j.props.reservation ?? 'none',
        qta: j.props.quota ?? 'none',
        use: j.props.used ?? '-',
        ava: j.props.available ?? '-',
      }));
    },
    async start(name) {
      const j = findJail(book(), name);
      if (running(j.uuid)) return { changed: false, info: ` ${label(j)} is already up` };
      if (j.props.template === 'yes') throw jailConflict(`${j.props.tag} is a template: clone it to run it`);
      const vnet = j.props.vnet === 'on';
      const messages = [`* Starting ${label(j)}`, vnet ? '+ Started (VNET) OK' : '+ Started (shared IP mode) OK', '+ Starting services OK'];
      for (let i = 0; i < messages.length; i++) await sleep(STEP_MS);
      slice.update((state) => {
        state.running[j.uuid] = state.nextJid++;
        const stored = state.active ? state.pools[state.active]?.jails[j.uuid] : undefined;
        if (stored) stored.props.last_started = new Date().toISOString().replace('T', ' ').slice(0, 19);
      });
      return { changed: true, messages };
    },
    async stop(name) {
      const j = findJail(book(), name);
      if (!running(j.uuid)) return { changed: false, info: ` ${label(j)} is already down` };
      const messages = [`* Stopping ${label(j)}`, '+ Running pre-stop OK', '+ Stopping services OK', '+ Removing jail process OK', '+ Running post-stop OK'];
      for (let i = 0; i < messages.length; i++) await sleep(STEP_MS);
      slice.update((state) => {
        delete state.running[j.uuid];
      });
      return { changed: true, messages };
    },
    async cap(name) {
      const j = findJail(book(), name);
      if (!running(j.uuid)) throw jailConflict(`${j.props.tag} is not running: limits are applied when it starts`);
    },
    async create(props, switches) {
      const made = await make(null, props, switches);
      return { uuid: made.uuid, lines: [`Successfully created: ${made.uuid} (${made.tag})`] };
    },
    async clone(name, props) {
      const source = findJail(book(), name);
      const made = await make(source, props, undefined);
      return { uuid: made.uuid, lines: [`Successfully cloned: ${source.uuid} -> ${made.uuid} (${made.tag})`] };
    },
    async destroy(name) {
      const j = findJail(book(), name);
      if (running(j.uuid)) throw jailConflict(`${j.props.tag} is running: stop it first (nothing was destroyed)`);
      await sleep(STEP_MS);
      change((draft) => {
        delete draft.jails[j.uuid];
      });
      return [`Destroyed: ${label(j)}`];
    },
    async exec(name, user, argv) {
      const j = findJail(book(), name);
      if (!running(j.uuid)) throw jailConflict(`${j.props.tag} is not running: start it to run commands in it`);
      const account = JAIL_ACCOUNTS[user];
      if (!account)
        throw new HostadmError('NOT_FOUND', `jail ${j.props.tag} has no account ${user}`, {
          fieldErrors: [{ field: 'user', message: 'no such account in the jail' }],
        });
      return simulatedCommand(j, user, account, argv);
    },
    async clean(scope) {
      change((draft, state) => cleanBook(draft, state, scope));
    },
    async activePool() {
      return slice.get().active ?? 'none';
    },
    async activate(pool) {
      slice.update((state) => {
        if (!Object.hasOwn(state.pools, pool))
          throw new HostadmError('NOT_FOUND', `no ZFS pool ${pool} on this host (pools: ${Object.keys(state.pools).join(', ')})`, {
            fieldErrors: [{ field: 'pool', message: 'no such pool' }],
          });
        state.active = pool;
      });
    },
    async deactivate(pool) {
      slice.update((state) => {
        if (!Object.hasOwn(state.pools, pool))
          throw new HostadmError('NOT_FOUND', `no ZFS pool ${pool} on this host`, { fieldErrors: [{ field: 'pool', message: 'no such pool' }] });
        if (state.active !== pool)
          throw new HostadmError('CONFLICT', `pool ${pool} is not the active one`, { fieldErrors: [{ field: 'pool', message: 'not active' }] });
        const up = Object.keys(state.pools[pool]?.jails ?? {}).filter((u) => state.running[u] !== undefined);
        if (up.length > 0)
          throw new HostadmError('CONFLICT', `jails on ${pool} still run (${up.join(', ')}): stop them first`, {
            fieldErrors: [{ field: 'pool', message: 'jails still run' }],
          });
        state.active = null;
      });
    },
  };
}

/** Removes what hostadm made of `scope` from the active pool, or refuses (409) with nothing removed. */
function cleanBook(b: JailBook, state: SimJails, scope: JailCleanScope): void {
  const isTemplate = (j: BookJail) => j.props.template === 'yes';
  const ours = Object.values(b.jails).filter((j) => j.hostadm);
  const jailsHit = scope === 'releases' ? [] : ours.filter((j) => scope === 'all' || (scope === 'templates' ? isTemplate(j) : !isTemplate(j)));
  const up = jailsHit.filter((j) => state.running[j.uuid] !== undefined);
  if (up.length > 0)
    throw new HostadmError('CONFLICT', `running jails would be destroyed (${up.map((j) => j.props.tag).join(', ')}): stop them first; nothing was cleaned`);
  for (const j of jailsHit) delete b.jails[j.uuid];
  if (scope !== 'releases' && scope !== 'all') return;
  const releasesHit = Object.values(b.releases).filter((r) => r.hostadm);
  const users = Object.values(b.jails).filter((j) => releasesHit.some((r) => r.uuid === j.release));
  // Throwing inside the slice update discards the jails removed above too.
  if (users.length > 0) throw new HostadmError('CONFLICT', `jails still use these releases (${users.map((j) => j.props.tag).join(', ')}); nothing was cleaned`);
  for (const r of releasesHit) delete b.releases[r.uuid];
}

function simulatedCommand(j: BookJail, user: string, account: (typeof JAIL_ACCOUNTS)[string], argv: readonly string[]): string {
  const [program, ...rest] = argv;
  const name = (program ?? '').split('/').pop();
  switch (name) {
    case 'id':
      return `uid=${account.uid}(${user}) gid=${account.gid}(${account.group}) groups=${account.gid}(${account.group})\n`;
    case 'hostname':
      return `${j.props.host_hostname ?? j.props.tag}\n`;
    case 'whoami':
      return `${user}\n`;
    case 'uname':
      return rest.includes('-a') ? `FreeBSD ${j.props.host_hostname} ${j.props.release}-p1 FreeBSD ${j.props.release}-p1 GENERIC amd64\n` : 'FreeBSD\n';
    case 'echo':
      return `${rest.join(' ')}\n`;
    case 'pwd':
      return `${account.home}\n`;
    case 'true':
      return '';
    case 'false':
      throw new HostadmError('HOST_ERROR', `${argv.join(' ')} exited with code 1 in jail ${j.props.tag}`);
    default:
      return `[sim] ${argv.join(' ')}: simulated, not run\n`;
  }
}
