/**
 * The `beadm` port: ZFS boot environments (FreeBSD's bectl(8) or beadm(1), zectl on a Linux ZFS root,
 * the simulated host's model). Names reaching it were validated by the contract; the handler has
 * checked that the environments it names exist (or, for a new name, do not), so a port reports only
 * what the host itself refuses, as a HOST_ERROR with the tool's words.
 */
import type { z } from 'zod';
import type { beRecord } from '@hostadm/shared/api/beadm.ts';

/** One boot environment in the spec's shape (`listbes`). */
export type BootEnvironment = z.infer<ReturnType<typeof beRecord>>;

export interface BeadmPort {
  /** Every boot environment, keyed by name. */
  list(): Promise<Record<string, BootEnvironment>>;
  /** Renames `existing` to `newName`. */
  rename(existing: string, newName: string): Promise<void>;
  /** Makes `name` the default at next boot (flag `R`). */
  activate(name: string): Promise<void>;
  /** A new environment cloned from `clonefrom` (an inactive environment or `<be>@<snapshot>`), else from the active one. */
  create(newName: string, clonefrom?: string): Promise<void>;
  /** Destroys `name`, unmounting it first even when busy. */
  destroy(name: string): Promise<void>;
  /** Mounts `name` at `mountpoint` (or a fresh temporary directory) and returns where. */
  mount(name: string, mountpoint?: string): Promise<string>;
  /** Unmounts `name`, forced even when in use. */
  unmount(name: string): Promise<void>;
}
