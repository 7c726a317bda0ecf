import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { keyedBy, noArgs, queuedAck, safeName, str, yesNo, boolString } from './fields.ts';
import { PROP_NAME, ifaceName, propValue, sizeArg } from './fields-storage.ts';

/**
 * A guest name as vm-bhyve's `util::check_name` accepts it (letters, digits, `.`, `_`, `-`, starting and
 * ending with a letter or digit, at most 231 characters), without `..`: it names a directory and files.
 */
const vmName = lazy(() =>
  z
    .string()
    .max(231, 'must be at most 231 characters')
    .regex(/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/, 'may hold only letters, digits and . _ - and must start and end with a letter or digit')
    .refine((n) => !n.includes('..'), 'must not contain `..`')
    .describe('Virtual machine name'),
);
/** A file name in the ISO store: no `/`, no leading `-` or `.`, no `..`. */
const isoName = lazy(() => safeName('ISO file name').refine((n) => !n.includes('..'), 'must not contain `..`'));
const diskName = lazy(() =>
  z
    .string()
    .regex(/^disk[0-9]{1,3}$/, 'must be a disk name like disk1')
    .describe('Disk name, `disk<N>`'),
);

/** `http://`, `ftp://` or `file://` followed by URL characters that no shell or option parser treats specially. */
const isoUrl = lazy(() =>
  z
    .string()
    .max(2048, 'must be at most 2048 characters')
    .regex(/^(http|ftp|file):\/\//, 'must begin with http://, ftp:// or file://')
    .regex(/^[a-z]+:\/\/[A-Za-z0-9._~:/?=%+,@-]+$/, 'may hold only letters, digits and . _ ~ : / ? = % + , @ -')
    .refine((u) => !u.split(/[/?]/).includes('..'), 'must not contain `..`')
    .describe('Where to download the ISO from; begins with `http://`, `ftp://` or `file://`'),
);

export const vmRecord = lazy(() =>
  z
    .object({
      description: str('Description'),
      rcboot: yesNo('Scheduled to start at host boot'),
      running: yesNo('Running'),
      vmm: yesNo('Loaded into memory'),
    })
    .describe('A virtual machine'),
);

/** The guest property names the spec lists for `getprops`. */
export const GUEST_PROPERTY_NAMES = [
  'autogrub',
  'bargs',
  'boot',
  'con',
  'cpu',
  'description',
  'install',
  'loader',
  'name',
  'os',
  'persist',
  'ram',
  'size',
  'tap',
] as const;

export const guestPropsRecord = lazy(() =>
  z
    .object({
      autogrub: str('GRUB autoboot commands').optional(),
      bargs: str('bhyve arguments').optional(),
      boot: str('Start at host boot flag').optional(),
      con: str('Console device (nmdm)').optional(),
      cpu: str('Number of virtual CPUs').optional(),
      description: str('Description').optional(),
      install: str('Install-mode flag (booting from an ISO)').optional(),
      loader: str('Boot loader').optional(),
      name: str('Guest name').optional(),
      os: str('Guest operating system').optional(),
      persist: str('Restart-on-exit flag').optional(),
      ram: str('Memory, `<n>M` / `<n>G`').optional(),
      size: str('Size of disk0, `<n>M` / `<n>G`').optional(),
      tap: str('Network tap device').optional(),
    })
    .catchall(z.string().describe('Value of another guest property'))
    .describe('Guest properties: property name to string value'),
);

export const diskListRecord = lazy(() => keyedBy('Disk name, `disk<N>`', str('Size'), 'Disk name to size'));

/** `setprop` arguments: `name` plus one or more `<property>: <value>`. */
const setpropArgs = lazy(() =>
  z
    .object({ name: vmName() })
    .catchall(propValue('Value of the property named by the key; letters, digits and . , : @ + / % _ -'))
    .superRefine((a, ctx) => {
      const props = Object.keys(a).filter((k) => k !== 'name');
      if (props.length === 0) ctx.addIssue({ code: 'custom', message: 'at least one <property>=<value> is required', path: [] });
      for (const k of props) {
        if (!PROP_NAME.test(k)) ctx.addIssue({ code: 'custom', message: 'must be a property name (lower-case letters, digits, _)', path: [k] });
      }
    })
    .describe('`name` plus one or more guest properties to set'),
);

export const vm = defineClass({
  namespace: 'admin',
  name: 'vm',
  description: 'Virtual machines, ISO images and guest disks',
  limitedAccess: 'read',
  actions: {
    listvms: action({
      description: 'List virtual machines',
      args: noArgs,
      reply: () => z.object({ listvms: keyedBy('VM name', vmRecord(), 'VM records keyed by name') }),
      access: 'read',
    }),
    fetchiso: action({
      description: 'Download an ISO image (queued; a dispatcher event reports progress and completion)',
      args: () => z.strictObject({ url: isoUrl() }),
      reply: () => z.object({ fetchiso: queuedAck() }),
      access: 'write',
      queued: 'no_queue',
      ack: 'queueid',
    }),
    listisos: action({
      description: 'List downloaded ISO images',
      args: noArgs,
      reply: () => z.object({ listisos: z.array(str('ISO file name')).describe('ISO file names') }),
      access: 'read',
    }),
    renameiso: action({
      description: 'Rename an ISO image',
      args: () => z.strictObject({ source: isoName().describe('Existing ISO name'), target: isoName().describe('New ISO name') }),
      reply: () =>
        z.object({
          renameiso: z.object({ source: str('Previous ISO name'), target: str('New ISO name') }).describe('The rename'),
        }),
      access: 'write',
    }),
    rmiso: action({
      description: 'Delete an ISO image',
      args: () => z.strictObject({ target: isoName().describe('ISO name to delete') }),
      reply: () => z.object({ rmiso: z.object({ target: str('The deleted ISO name') }).describe('The deletion') }),
      access: 'write',
    }),
    setup: action({
      description: 'Set up the VM system on a network device and a pool',
      args: () => z.strictObject({ nic: ifaceName('Network device the guests bridge to'), pool: safeName('ZFS pool for guests') }),
      reply: () => z.object({ setup: z.object({ nic: str('Network device'), pool: str('Pool') }).describe('The setup') }),
      access: 'write',
    }),
    issetup: action({
      description: 'Report whether the VM system is set up',
      args: noArgs,
      reply: () => z.object({ issetup: z.object({ setup: boolString('`true` when set up') }).describe('Setup state') }),
      access: 'read',
    }),
    create: action({
      description: 'Create a virtual machine with a first disk of the given size',
      args: () => z.strictObject({ name: vmName(), size: sizeArg('Size of the first disk, for example `8G`') }),
      reply: () => z.object({ create: z.object({ name: str('VM name'), size: str('Disk size') }).describe('The new VM') }),
      access: 'write',
    }),
    install: action({
      description: 'Boot a virtual machine from an ISO image to install it',
      args: () => z.strictObject({ name: vmName(), iso: isoName().describe('ISO to boot from') }),
      reply: () => z.object({ install: z.object({ iso: str('ISO name'), name: str('VM name') }).describe('The install boot') }),
      access: 'write',
    }),
    start: action({
      description: 'Start a virtual machine',
      args: () => z.strictObject({ name: vmName() }),
      reply: () => z.object({ start: z.object({ name: str('VM name') }).describe('The started VM') }),
      access: 'write',
    }),
    stop: action({
      description: 'Stop a virtual machine',
      args: () => z.strictObject({ name: vmName() }),
      reply: () => z.object({ stop: z.object({ name: str('VM name') }).describe('The stopped VM') }),
      access: 'write',
    }),
    delete: action({
      description: 'Delete a virtual machine and its disks',
      args: () => z.strictObject({ name: vmName() }),
      reply: () => z.object({ delete: z.object({ name: str('VM name') }).describe('The deleted VM') }),
      access: 'write',
    }),
    adddisk: action({
      description: 'Add a disk to a virtual machine',
      args: () => z.strictObject({ name: vmName(), size: sizeArg('Size of the new disk, for example `8G`') }),
      reply: () =>
        z.object({
          adddisk: keyedBy('VM name', z.object({ size: str('Size of the new disk') }).describe('The new disk'), 'The new disk keyed by VM name'),
        }),
      access: 'write',
    }),
    listdisks: action({
      description: 'List the disks of a virtual machine',
      args: () => z.strictObject({ name: vmName() }),
      reply: () => z.object({ listdisks: diskListRecord() }),
      access: 'read',
    }),
    resizedisk: action({
      description: 'Grow a disk of a virtual machine (the new size must be larger than the current one)',
      args: () => z.strictObject({ name: vmName(), disk: diskName(), size: sizeArg('New size, larger than the current one') }),
      reply: () =>
        z.object({
          resizedisk: z.object({ disk: str('Disk name'), name: str('VM name'), size: str('New size') }).describe('The resize'),
        }),
      access: 'write',
    }),
    deletedisk: action({
      description: 'Remove a disk from a virtual machine',
      args: () => z.strictObject({ name: vmName(), disk: diskName() }),
      reply: () => z.object({ deletedisk: z.object({ disk: str('Disk name'), name: str('VM name') }).describe('The removal') }),
      access: 'write',
    }),
    version: action({
      description: 'Report the version of the VM tool',
      args: noArgs,
      reply: () => z.object({ version: z.object({ version: str('Version string') }).describe('Tool version') }),
      access: 'read',
    }),
    getprops: action({
      description: 'Show the properties of a virtual machine',
      args: () => z.strictObject({ name: vmName() }),
      reply: () => z.object({ getprops: keyedBy('VM name', guestPropsRecord(), 'Guest properties keyed by VM name') }),
      access: 'read',
    }),
    setprop: action({
      description: 'Set one or more properties of a virtual machine',
      args: setpropArgs,
      reply: () =>
        z.object({
          setprop: keyedBy('VM name', keyedBy('Property name', str('New value'), 'The changed properties'), 'The changed properties keyed by VM name'),
        }),
      access: 'write',
    }),
  },
});
