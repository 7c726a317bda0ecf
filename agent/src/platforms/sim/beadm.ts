/**
 * The simulated host's boot environments (the `beadm` slice), modelled on bectl(8): the running
 * environment (`N`, mounted at `/`), the one chosen for the next boot (`R`), clones of an environment
 * or of one of its snapshots, temporary mounts under /tmp (`be_mount.XXXX`, as libbe names them),
 * renames and destroys. Nothing here runs a host command; the state persists with the sim host.
 */
import { randomBytes } from 'node:crypto';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import type { BeadmPort, BootEnvironment } from '../ports/beadm.ts';

interface SimBe {
  /** `YYYY-MM-DD HH:MM`, as bectl prints the creation time. */
  created: string;
  space: string;
  /** Where it is mounted, or null. */
  mounted: string | null;
  /** Snapshot names (the part after `@`). */
  snapshots: string[];
}

export interface SimBeadm {
  environments: Record<string, SimBe>;
  running: string;
  nextBoot: string;
}

export function seedBeadm(): SimBeadm {
  return {
    environments: {
      default: { created: '2024-03-14 09:12', space: '2.41G', mounted: '/', snapshots: ['2024-06-05-10:12:13-0'] },
      '14.0-RELEASE-p6_2024-06-05_101213': { created: '2024-06-05 10:12', space: '8.47M', mounted: null, snapshots: [] },
    },
    running: 'default',
    nextBoot: 'default',
  };
}

function stampNow(): string {
  const iso = new Date().toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}

function record(name: string, be: SimBe, state: SimBeadm): BootEnvironment {
  const flags = `${name === state.running ? 'N' : ''}${name === state.nextBoot ? 'R' : ''}`;
  const [date = '-', nick = '-'] = be.created.split(' ');
  return { active: flags || '-', mount: be.mounted ?? '-', space: be.space, date, nick };
}

/** What bectl says when libbe refuses; the handler has already checked names, so these are the host's own refusals. */
function refused(message: string): HostadmError {
  return new HostadmError('HOST_ERROR', message);
}

export function simBeadm(ctx: SimContext): BeadmPort {
  const slice = ctx.store.slice('beadm', seedBeadm);
  const get = (state: SimBeadm, name: string): SimBe => {
    const be = state.environments[name];
    if (!be) throw refused(`bectl: boot environment ${name} does not exist`);
    return be;
  };
  return {
    async list() {
      const state = slice.get();
      return Object.fromEntries(Object.entries(state.environments).map(([name, be]) => [name, record(name, be, state)]));
    },
    async rename(existing, newName) {
      slice.update((state) => {
        const be = get(state, existing);
        if (state.environments[newName]) throw refused(`bectl rename: failed to rename bootenv ${existing} to ${newName}: it exists`);
        delete state.environments[existing];
        state.environments[newName] = be;
        if (state.running === existing) state.running = newName;
        if (state.nextBoot === existing) state.nextBoot = newName;
      });
    },
    async activate(name) {
      slice.update((state) => {
        get(state, name);
        state.nextBoot = name;
      });
    },
    async create(newName, clonefrom) {
      slice.update((state) => {
        const [source = state.running, snapshot] = (clonefrom ?? state.running).split('@');
        const origin = get(state, source);
        if (snapshot !== undefined && !origin.snapshots.includes(snapshot)) throw refused(`bectl create: ${source}@${snapshot}: snapshot does not exist`);
        if (state.environments[newName]) throw refused(`bectl create: failed to create bootenv ${newName}: it exists`);
        state.environments[newName] = { created: stampNow(), space: '8K', mounted: null, snapshots: [] };
      });
    },
    async destroy(name) {
      slice.update((state) => {
        get(state, name);
        if (name === state.running || name === state.nextBoot) throw refused(`bectl destroy: cannot destroy active boot environment ${name}`);
        // Forcibly unmounted first (-F): the mount goes with it.
        delete state.environments[name];
      });
    },
    async mount(name, mountpoint) {
      return slice.update((state) => {
        const be = get(state, name);
        if (be.mounted) throw refused(`bectl mount: boot environment ${name} is already mounted at ${be.mounted}`);
        const where = mountpoint ?? `/tmp/be_mount.${randomBytes(3).toString('base64url').slice(0, 4)}`;
        const taken = Object.entries(state.environments).find(([, other]) => other.mounted === where);
        if (taken) throw refused(`bectl mount: ${where} is in use by boot environment ${taken[0]}`);
        be.mounted = where;
        return where;
      });
    },
    async unmount(name) {
      slice.update((state) => {
        const be = get(state, name);
        if (name === state.running) throw refused(`bectl umount: ${name} is mounted at / and cannot be unmounted`);
        if (!be.mounted) throw refused(`bectl umount: boot environment ${name} is not mounted`);
        // Forced (-f): open files do not keep it mounted.
        be.mounted = null;
      });
    },
  };
}
