/**
 * The record of releases and jails that the agent keeps itself where no tool keeps it (sim, Linux):
 * each jail's properties (the spec's "Jail settings", persisted), the release it was made from, and
 * that hostadm made it. Pure functions over a plain JSON document, so the sim keeps it in its state
 * file and Linux in its jail root; what runs (state, jid) is the platform's to say.
 *
 * Rules shared by both: a jail is named by uuid or tag (exact, never a prefix); tags are unique;
 * `createjail` takes a `release` unless `-e` (empty); only known, settable properties are accepted.
 */
import { randomUUID } from 'node:crypto';
import { JAIL_SETTING_NAMES } from '@hostadm/shared/api/jail-settings.ts';
import { HostadmError, badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { JailCreateSwitch, JailProp } from '../ports/jail.ts';

export interface BookRelease {
  uuid: string;
  /** The release's name, `14.1-RELEASE` or `bookworm`. */
  tag: string;
  props: Record<string, string>;
  /** Made by hostadm (the clean actions destroy only these). */
  hostadm: boolean;
}

export interface BookJail {
  uuid: string;
  /** uuid of the release it was made from; null for an empty jail. */
  release: string | null;
  props: Record<string, string>;
  /** Made by hostadm (the clean actions destroy only these). */
  hostadm: boolean;
}

export interface JailBook {
  releases: Record<string, BookRelease>;
  jails: Record<string, BookJail>;
}

export const emptyBook = (): JailBook => ({ releases: {}, jails: {} });

/** Properties a client may not set: the platform reports them. */
const READ_ONLY = new Set([
  'available',
  'compressratio',
  'host_hostuuid',
  'jail_zfs_dataset',
  'last_started',
  'mountpoint',
  'origin',
  'release',
  'used',
  'type',
]);

/** A new jail's properties before the request's (iocage's defaults for the names of the spec's set). */
export const JAIL_DEFAULTS: Readonly<Record<string, string>> = Object.freeze({
  ...Object.fromEntries(JAIL_SETTING_NAMES.map((name) => [name, name.startsWith('allow_') ? '0' : 'off'])),
  allow_set_hostname: '1',
  available: '-',
  boot: 'off',
  branch: '-',
  children_max: '0',
  compression: 'lz4',
  compressratio: '1.00x',
  count: '1',
  defaultrouter: 'auto',
  defaultrouter6: 'auto',
  devfs_ruleset: '4',
  dhcp: 'off',
  enforce_statfs: '2',
  exec_clean: '1',
  exec_fib: '0',
  exec_jail_user: 'root',
  exec_poststart: '/usr/bin/true',
  exec_poststop: '/usr/bin/true',
  exec_prestart: '/usr/bin/true',
  exec_prestop: '/usr/bin/true',
  exec_start: '/bin/sh /etc/rc',
  exec_stop: '/bin/sh /etc/rc.shutdown',
  exec_system_jail_user: '0',
  exec_system_user: 'root',
  exec_timeout: '60',
  ftpdir: '-',
  ftpfiles: 'base.txz doc.txz lib32.txz src.txz',
  ftphost: 'download.freebsd.org',
  ftplocaldir: '-',
  gitlocation: 'https://github.com',
  hack88: '0',
  host_domainname: 'none',
  hostid: '-',
  interfaces: 'vnet0:bridge0',
  ip4: 'new',
  ip4_addr: 'none',
  ip4_autoend: 'none',
  ip4_autostart: 'none',
  ip4_autosubnet: 'none',
  ip4_saddrsel: '1',
  ip6: 'new',
  ip6_addr: 'none',
  ip6_saddrsel: '1',
  istemplate: 'no',
  jail_zfs: 'off',
  jail_zfs_dataset: '-',
  jail_zfs_mountpoint: 'none',
  last_started: 'none',
  login_flags: '-f root',
  mount_devfs: '1',
  mount_fdescfs: '1',
  mount_linprocfs: '0',
  mount_procfs: '0',
  notes: 'none',
  owner: 'root',
  pkglist: 'none',
  priority: '99',
  quota: 'none',
  reservation: 'none',
  resolver: '/etc/resolv.conf',
  securelevel: '2',
  start: '0',
  stop_timeout: '30',
  sync_stat: '-',
  sync_target: 'none',
  sync_tgt_zpool: 'none',
  template: 'no',
  type: 'jail',
  used: '-',
  vnet0_mac: 'none',
  vnet1_mac: 'none',
  vnet2_mac: 'none',
  vnet3_mac: 'none',
});

const KNOWN = new Set<string>(JAIL_SETTING_NAMES);

const propsError = (message: string) => badRequest(message, [{ field: 'props', message }]);
const conflict = (field: string, message: string) => new HostadmError('CONFLICT', message, { fieldErrors: [{ field, message }] });

export function jailNotFound(name: string): HostadmError {
  const message = `no jail has the uuid or tag ${name}`;
  return new HostadmError('NOT_FOUND', message, { fieldErrors: [{ field: 'jail', message }] });
}

/** The jail named by uuid or tag, or a 404 naming `jail`. */
export function findJail(book: JailBook, name: string): BookJail {
  const byUuid = book.jails[name];
  if (byUuid) return byUuid;
  const byTag = Object.values(book.jails).find((j) => j.props.tag === name);
  if (byTag) return byTag;
  throw jailNotFound(name);
}

export function findRelease(book: JailBook, name: string): BookRelease | undefined {
  return book.releases[name] ?? Object.values(book.releases).find((r) => r.tag === name);
}

/** What a tag must look like (the contract's rule for jail names). */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.:@+-]*$/;

/** The jails' type as listed: a template, or how it shares its release. */
export function jailType(jail: BookJail): string {
  return jail.props.template === 'yes' ? 'template' : (jail.props.type ?? 'jail');
}

/**
 * The properties of a jail about to be made from `props`: defaults, then what the source jail or the
 * release had, then the request. A 400 naming `props` for an unknown or read-only property or a bad
 * tag, 409 for a tag in use.
 */
export function newJailProps(book: JailBook, base: Record<string, string>, props: readonly JailProp[], uuid: string): Record<string, string> {
  const out: Record<string, string> = { ...base };
  for (const [name, value] of props) {
    if (name === 'release') continue;
    if (!KNOWN.has(name)) throw propsError(`${name} is not a jail property (see Jail settings)`);
    if (READ_ONLY.has(name)) throw propsError(`${name} is reported by the host and cannot be set`);
    out[name] = value;
  }
  const tag = out.tag ?? uuid;
  if (!TAG.test(tag) || tag.includes('..') || tag.length > 255)
    throw propsError(`tag ${tag} is not a valid jail name (letters, digits, . _ : @ + -; no leading - or ., no ..)`);
  if (Object.values(book.jails).some((j) => j.props.tag === tag || j.uuid === tag)) throw conflict('props', `a jail named ${tag} exists already`);
  out.tag = tag;
  out.host_hostuuid = uuid;
  if (out.template === 'yes') out.istemplate = 'yes';
  return out;
}

/** The settings reply of one jail: every property, or only `prop` (404 naming `prop` when unknown). */
export function settingsOf(props: Record<string, string>, prop: string): Record<string, string> {
  if (prop === 'all')
    return Object.fromEntries(
      Object.keys(props)
        .sort()
        .map((k) => [k, props[k] as string]),
    );
  const value = props[prop];
  if (value === undefined) {
    const message = `${prop} is not a jail property (see Jail settings)`;
    throw new HostadmError('NOT_FOUND', message, { fieldErrors: [{ field: 'prop', message }] });
  }
  return { [prop]: value };
}

/** Mode 2: `prop` of every release, keyed by release uuid, with `TAG`. */
export function releaseSettingsOf(book: JailBook, prop: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const r of Object.values(book.releases)) {
    const value = r.props[prop];
    if (value === undefined) {
      const message = `${prop} is not a release property (see Jail settings)`;
      throw new HostadmError('NOT_FOUND', message, { fieldErrors: [{ field: 'prop', message }] });
    }
    out[r.uuid] = { TAG: r.tag, [prop]: value };
  }
  return out;
}

/** `ip4_addr` (`<iface>|<addr>[/<prefix>],...`) as listjails shows it: the first address, or `-`. */
export function shortIp4(ip4Addr: string | undefined): string {
  if (ip4Addr === undefined || ip4Addr === 'none' || ip4Addr === '') return '-';
  const first = ip4Addr.split(',')[0] ?? '';
  const address = first.includes('|') ? first.split('|')[1] : first;
  return (address ?? '').split('/')[0] || '-';
}

/** The parts of a create request: the release (unless empty) and the jail's type. */
export function createPlan(
  book: JailBook,
  props: readonly JailProp[],
  switches: JailCreateSwitch | undefined,
): { release: BookRelease | null; type: 'basejail' | 'thickjail' | 'emptyjail'; uuid: string } {
  const asked = props.find(([name]) => name === 'release')?.[1];
  const uuid = randomUUID();
  if (switches === '-e') return { release: null, type: 'emptyjail', uuid };
  if (asked === undefined) throw propsError('give release=<name> (or switches -e for an empty jail)');
  const release = findRelease(book, asked);
  if (!release) {
    const message = `release ${asked} is not downloaded here (known: ${
      Object.values(book.releases)
        .map((r) => r.tag)
        .join(', ') || 'none'
    })`;
    throw new HostadmError('NOT_FOUND', message, { fieldErrors: [{ field: 'props', message }] });
  }
  return { release, type: switches === '-b' ? 'basejail' : 'thickjail', uuid };
}

/** A 409 naming `jail`, for an action the jail's state forbids. */
export function jailConflict(message: string): HostadmError {
  return conflict('jail', message);
}
