/**
 * The `vm` port: virtual machines, their disks and properties, and the ISO store (vm-bhyve on FreeBSD,
 * QEMU/KVM supervised by the agent on Linux, a model on sim). Names and sizes reaching it were
 * validated by the contract; a port answers NOT_FOUND for a guest, disk or ISO that does not exist and
 * CONFLICT for a state that forbids the change (a running guest, a name in use), naming the field.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { WorkPlan } from '../../jobs/queued-actions.ts';

export interface VmSummary {
  description: string;
  /** Starts when the host (Linux: the agent) starts. */
  rcboot: boolean;
  running: boolean;
  /** Loaded into memory (bhyve: in /dev/vmm; QEMU: the process exists, even paused). */
  vmm: boolean;
}

export interface VmPort {
  /**
   * Whether the agent starts the guests marked `boot=1` when it starts and stops them when it stops
   * (Linux, sim: nothing else would). On FreeBSD the host's rc.d script does it (vm-bhyve's `vm_list`,
   * iohyve's `boot` property), so the agent leaves it alone there.
   */
  readonly agentStartsBootGuests?: boolean;
  listVms(): Promise<Record<string, VmSummary>>;
  isSetup(): Promise<boolean>;
  /** Guests bridge to `nic`; their disks live on `pool` (a ZFS pool; Linux: a directory under the agent's data). */
  setup(nic: string, pool: string): Promise<void>;
  /** A new stopped guest with `disk0` of `size`; nothing is left behind when it fails. */
  create(name: string, size: string): Promise<void>;
  /** Boots the guest from the ISO (it must be stopped); the ISO stays attached until it is next stopped. */
  install(name: string, iso: string): Promise<void>;
  start(name: string): Promise<void>;
  stop(name: string): Promise<void>;
  /** Removes a stopped guest and its disks. */
  destroy(name: string): Promise<void>;
  /** Adds the next `disk<N>`; returns its name. */
  addDisk(name: string, size: string): Promise<string>;
  /** Disk name to size (`<n>M`/`<n>G`, as the tool shows it). */
  listDisks(name: string): Promise<Record<string, string>>;
  /** Grows a disk of a stopped guest; a size not larger than the current one is a 400 naming `size`. */
  resizeDisk(name: string, disk: string, size: string): Promise<void>;
  /** Removes a disk other than `disk0`. */
  deleteDisk(name: string, disk: string): Promise<void>;
  version(): Promise<string>;
  getProps(name: string): Promise<Record<string, string>>;
  /** Sets properties; returns the changed ones as now stored. */
  setProps(name: string, props: Readonly<Record<string, string>>): Promise<Record<string, string>>;
  listIsos(): Promise<string[]>;
  renameIso(source: string, target: string): Promise<void>;
  removeIso(target: string): Promise<void>;
  /** Checks what needs the host's state (set up, space for the name) and plans the download. */
  fetchIso(url: string): Promise<WorkPlan>;
}

/** `1073741824` → `1G`: the largest unit that divides the size exactly (as `<n>M`/`<n>G` in the spec). */
export function formatSize(bytes: number): string {
  const units = ['T', 'G', 'M', 'K'] as const;
  for (const [i, unit] of units.entries()) {
    const factor = 1024 ** (units.length - i);
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return String(bytes);
}

/** `8G` → bytes (the contract's `sizeArg` form: a whole number and K, M, G or T). */
export function parseSize(size: string): number {
  const match = /^([0-9]+)([KMGTkmgt])$/.exec(size);
  if (!match)
    throw new HostadmError('BAD_REQUEST', `size: ${size} is not a size like 8G`, { fieldErrors: [{ field: 'size', message: 'must be a size like 8G' }] });
  const power = 'KMGT'.indexOf((match[2] as string).toUpperCase()) + 1;
  return Number(match[1]) * 1024 ** power;
}

export const noSuchVm = (name: string) =>
  new HostadmError('NOT_FOUND', `name: no virtual machine named ${name}`, { fieldErrors: [{ field: 'name', message: 'no such virtual machine' }] });
export const noSuchDisk = (name: string, disk: string) =>
  new HostadmError('NOT_FOUND', `disk: ${name} has no ${disk}`, { fieldErrors: [{ field: 'disk', message: 'no such disk' }] });
export const noSuchIso = (field: string, iso: string) =>
  new HostadmError('NOT_FOUND', `${field}: no ISO named ${iso}`, { fieldErrors: [{ field, message: 'no such ISO' }] });
export const conflict = (field: string, message: string) => new HostadmError('CONFLICT', `${field}: ${message}`, { fieldErrors: [{ field, message }] });
export const notSetUp = () => new HostadmError('CONFLICT', 'the VM system is not set up: run setup with nic and pool first');
export const tooSmall = (disk: string, current: string, size: string) =>
  new HostadmError('BAD_REQUEST', `size: ${size} is not larger than ${disk}'s current ${current}`, {
    fieldErrors: [{ field: 'size', message: `must be larger than the current ${current}` }],
  });
export const disk0Stays = () =>
  new HostadmError('BAD_REQUEST', 'disk: disk0 cannot be removed', { fieldErrors: [{ field: 'disk', message: 'disk0 cannot be removed' }] });
