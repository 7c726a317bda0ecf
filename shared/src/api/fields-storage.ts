/**
 * Field builders used only by the storage / virtualization contracts (jail, vm, snapshot, pkg, beadm, zfs).
 * Like fields.ts, every value here may reach a host command as one argv element: no shell metacharacters,
 * no whitespace unless stated, no leading `-`.
 */
import { z } from 'zod';

/** Characters allowed in a value that follows `<property>=` (the argv element starts with the name). */
const PROP_VALUE = /^[A-Za-z0-9_.,:@+/%-]+$/;

/** A property name such as `ip4_addr` or `ram`. */
export const PROP_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** `<n>` followed by a unit `K`, `M`, `G` or `T` (`8G`, `512M`); the number is not zero. */
export const sizeArg = (description: string) =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,8}[KMGTkmgt]$/, 'must be a size like 8G or 512M (a whole number followed by K, M, G or T)')
    .describe(description);

/** One ZFS dataset name component (BE names, snapshot names): no `/`, no `@`. */
export const componentName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/, 'may hold only letters, digits and . _ : - and must not start with - or .')
    .describe(description);

/** A host name or IP address (v4 or v6). */
export const hostArg = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(253, 'must be at most 253 characters')
    .regex(/^[A-Za-z0-9:]([A-Za-z0-9.:-]*[A-Za-z0-9])?$/, 'must be a host name or an IP address')
    .describe(description);

/** A TCP port 1..65535, as a string or a JSON integer; normalized to the string. */
export const portArg = (description: string) =>
  z
    .union([z.string().regex(/^[0-9]{1,5}$/, 'must be a port number'), z.number().int()])
    .transform(String)
    .refine((p) => Number(p) >= 1 && Number(p) <= 65535, 'must be a port between 1 and 65535')
    .describe(description);

/** A network interface name (`em0`, `bridge0`, `re0`). */
export const ifaceName = (description: string) =>
  z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_.]{0,15}$/, 'must be a network interface name like em0')
    .describe(description);

/** A package origin `<category>/<name>`, optionally with a flavor `@<flavor>`. */
export const pkgOrigin = (description: string) =>
  z
    .string()
    .max(255, 'must be at most 255 characters')
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]*\/[A-Za-z0-9][A-Za-z0-9_.+-]*(@[A-Za-z0-9_]+)?$/, 'must be a package origin like <category>/<name>')
    .describe(description);

/** A ports category (`games`, `x11-wm`). */
export const pkgCategory = (description: string) =>
  z
    .string()
    .max(64, 'must be at most 64 characters')
    .regex(/^[a-z0-9][a-z0-9_+-]*$/, 'must be a category name like games or x11-wm')
    .describe(description);

/**
 * Words separated by single or repeated spaces, each made of safe characters; the first word does not
 * start with `-`. For a search phrase or a comment that the host receives as one argv element.
 */
export const safePhrase = (description: string, max = 256) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(
      /^[A-Za-z0-9_.,:@+/%][A-Za-z0-9_.,:@+/%=-]*( +[A-Za-z0-9_.,:@+/%=-]+)*$/,
      'may hold only letters, digits, spaces and . , : @ + / % = _ - and must not start with -',
    )
    .describe(description);

/** A property value (the part after `=`); `-` may lead because the argv element starts with the name. */
export const propValue = (description: string) =>
  z.string().max(1024, 'must be at most 1024 characters').regex(PROP_VALUE, 'may hold only letters, digits and . , : @ + / % _ -').describe(description);

/** True when `v` is a valid property value. */
export const isPropValue = (v: string) => v.length <= 1024 && PROP_VALUE.test(v);

/** An hour `0`..`23` (one or two digits). */
export const HOUR = '([01]?[0-9]|2[0-3])';

/**
 * ZFS names (OpenZFS `zfs_namecheck.c`, `zpool_name_valid`), a little stricter so that every name is
 * one safe argv element: components of letters, digits and `_ - : .` (ZFS also allows a space; we
 * do not), none empty, none starting with `-` or `.` (so neither `.` nor `..`), whole names at most
 * 255 characters (ZFS_MAX_DATASET_NAME_LEN less the NUL), snapshot names counted with their dataset.
 */
export const ZFS_NAME_MAX = 255;
const ZFS_COMPONENT = '[A-Za-z0-9_][A-Za-z0-9_.:-]*';
const RESERVED_POOL = /^(mirror|raidz|draid|spare|log$|c[0-9])/;

/** A pool name: starts with a letter; `mirror…`, `raidz…`, `draid…`, `spare…`, `log` and `c<digit>…` are reserved. */
export const zfsPoolName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(ZFS_NAME_MAX, `must be at most ${ZFS_NAME_MAX} characters`)
    .regex(/^[A-Za-z][A-Za-z0-9_.:-]*$/, 'must start with a letter and hold only letters, digits and _ - : .')
    .refine((name) => !RESERVED_POOL.test(name), 'is a name ZFS reserves (mirror, raidz, draid, spare, log, c<digit>...)')
    .describe(description);

/** A filesystem or volume: `pool` or `pool/a/b`, the pool part a valid pool name. */
export const zfsDatasetName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(ZFS_NAME_MAX, `must be at most ${ZFS_NAME_MAX} characters`)
    .regex(new RegExp(`^[A-Za-z][A-Za-z0-9_.:-]*(/${ZFS_COMPONENT})*$`), 'must be a dataset path like pool/a/b (letters, digits, _ - : . in each part)')
    .refine((name) => !RESERVED_POOL.test(name.split('/')[0] ?? ''), 'starts with a pool name ZFS reserves')
    .describe(description);

/** The part of a snapshot name after `@`. */
export const zfsSnapName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(ZFS_NAME_MAX - 2, `must be at most ${ZFS_NAME_MAX - 2} characters`)
    .regex(new RegExp(`^${ZFS_COMPONENT}$`), 'may hold only letters, digits and _ - : . and must not start with - or .')
    .describe(description);

/** `dataset@snap` fits ZFS's name length. */
export const snapshotFits = (a: { dataset: string; snap: string }) => a.dataset.length + 1 + a.snap.length <= ZFS_NAME_MAX;
export const SNAPSHOT_TOO_LONG = { message: `dataset@snap must be at most ${ZFS_NAME_MAX} characters`, path: ['snap'] };
