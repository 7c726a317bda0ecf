/**
 * `beadm`: ZFS boot environments. Every action names environments that must exist (a 404 names the
 * field otherwise) and new names that must not (a 400 names it); the running environment and the one
 * chosen for the next boot are never destroyed, and `/` is never unmounted (409, nothing run). What
 * is left to refuse is the host tool's to say.
 */
import { beadm } from '@hostadm/shared/api/beadm.ts';
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { BootEnvironment } from '../platforms/ports/beadm.ts';
import { implementClass } from './types.ts';

type Field = 'source' | 'target' | 'newbe' | 'clonefrom' | 'be';

function missing(field: Field, name: string): HostadmError {
  return new HostadmError('NOT_FOUND', `${field}: no boot environment named ${name}`, { fieldErrors: [{ field, message: 'no such boot environment' }] });
}

function conflict(field: Field, message: string): HostadmError {
  return new HostadmError('CONFLICT', `${field}: ${message}`, { fieldErrors: [{ field, message }] });
}

type Listing = Record<string, BootEnvironment>;

function existing(all: Listing, field: Field, name: string): BootEnvironment {
  const be = Object.hasOwn(all, name) ? all[name] : undefined;
  if (!be) throw missing(field, name);
  return be;
}

function unused(all: Listing, field: Field, name: string): void {
  if (Object.hasOwn(all, name)) throw badRequest(`${field}: a boot environment named ${name} already exists`, [{ field, message: 'already exists' }]);
}

export const beadmImpl = implementClass(beadm, ({ platform }) => {
  const port = platform.ports.beadm;
  if (!port) return null;
  return {
    listbes: async () => ({ listbes: await port.list() }),
    renamebe: async ({ source, target }) => {
      const all = await port.list();
      existing(all, 'target', target);
      unused(all, 'source', source);
      await port.rename(target, source);
      return { renamebe: { source, target } };
    },
    activatebe: async ({ target }) => {
      existing(await port.list(), 'target', target);
      await port.activate(target);
      return { activatebe: { target } };
    },
    createbe: async ({ newbe, clonefrom }) => {
      const all = await port.list();
      unused(all, 'newbe', newbe);
      if (clonefrom !== undefined) existing(all, 'clonefrom', clonefrom.split('@')[0] ?? clonefrom);
      await port.create(newbe, clonefrom);
      return { createbe: { ...(clonefrom !== undefined ? { clonefrom } : {}), newbe } };
    },
    destroybe: async ({ target }) => {
      const be = existing(await port.list(), 'target', target);
      if (be.active.includes('N')) throw conflict('target', `${target} is the running boot environment; boot another one first`);
      if (be.active.includes('R')) throw conflict('target', `${target} is the boot environment for the next boot; activate another one first`);
      await port.destroy(target);
      return { destroybe: { target } };
    },
    mountbe: async ({ be, mountpoint }) => {
      const found = existing(await port.list(), 'be', be);
      if (found.mount !== '-') throw conflict('be', `${be} is already mounted at ${found.mount}`);
      return { mountbe: { be, mountpoint: await port.mount(be, mountpoint) } };
    },
    umountbe: async ({ be }) => {
      const found = existing(await port.list(), 'be', be);
      if (found.active.includes('N') || found.mount === '/') throw conflict('be', `${be} is the running system, mounted at /`);
      if (found.mount === '-') throw conflict('be', `${be} is not mounted`);
      await port.unmount(be);
      return { umountbe: { be } };
    },
  };
});
