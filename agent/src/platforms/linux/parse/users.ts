/**
 * Parsers and conversions for the Linux users port: `getent passwd/shadow/group` lines into the
 * FreeBSD-shaped records the interface reports, and `lsblk -J` into personacrypt's device list.
 * Pure functions, so the odd cases (no shadow entry, forced password change) are tested directly.
 */
import type { GroupEntry, UserAccount } from '../../ports/users.ts';

const DAY = 86_400;
/** shadow(5)'s "no maximum age" as useradd writes it. */
const NO_MAX_AGE = 99_999;

export interface ShadowEntry {
  hash: string;
  /** Days since the epoch of the last password change; '' unknown, '0' = must change at next login. */
  lastchg: string;
  max: string;
  expire: string;
}

export function parseShadow(text: string): Map<string, ShadowEntry> {
  const out = new Map<string, ShadowEntry>();
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length < 9 || f[0] === '') continue;
    out.set(f[0] as string, { hash: f[1] as string, lastchg: f[2] as string, max: f[4] as string, expire: f[7] as string });
  }
  return out;
}

/**
 * FreeBSD's `change` (when the password must be changed) from Linux's aging fields: last change
 * plus maximum age. A forced change at next login (lastchg 0) has no date; it is reported as `1`,
 * a time long past, which is what an overdue `change` looks like on FreeBSD.
 */
export function changeFromShadow(s: ShadowEntry | undefined): string {
  if (!s || s.lastchg === '') return '0';
  if (s.lastchg === '0') return '1';
  if (s.max === '' || Number(s.max) >= NO_MAX_AGE || Number(s.max) < 0) return '0';
  return String((Number(s.lastchg) + Number(s.max)) * DAY);
}

export function expireFromShadow(s: ShadowEntry | undefined): string {
  if (!s || s.expire === '' || Number(s.expire) < 0) return '0';
  return String(Number(s.expire) * DAY);
}

/** `getent passwd` joined with `getent shadow` (absent entries: no aging). Linux has no login classes. */
export function parsePasswd(passwd: string, shadow: Map<string, ShadowEntry>): UserAccount[] {
  const out: UserAccount[] = [];
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f.length !== 7 || f[0] === '') continue;
    const [name, , uid, gid, comment, home, shell] = f as [string, string, string, string, string, string, string];
    const s = shadow.get(name);
    out.push({ name, uid, gid, class: '', change: changeFromShadow(s), expire: expireFromShadow(s), comment, home_dir: home, shell });
  }
  return out;
}

export function parseGroup(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length !== 4 || f[0] === '') continue;
    out.push({ name: f[0] as string, gid: f[2] as string, members: (f[3] as string).split(',').filter((m) => m !== '') });
  }
  return out;
}

/**
 * The chage(1) arguments that make Linux's aging match a FreeBSD `change` time: `0` clears the
 * maximum age; a future day becomes "changed today, valid until that day"; a day already past
 * forces a change at the next login. (Linux ages passwords periodically; after the user changes it,
 * the same maximum age applies again.)
 */
export function chageArgsFor(changeSeconds: number, nowMs: number): string[] {
  const today = Math.floor(nowMs / 1000 / DAY);
  if (changeSeconds === 0) return ['-d', String(today), '-M', '-1'];
  const day = Math.floor(changeSeconds / DAY);
  if (day > today) return ['-d', String(today), '-M', String(day - today)];
  return ['-d', '0'];
}

interface LsblkDevice {
  name?: unknown;
  rm?: unknown;
  size?: unknown;
  model?: unknown;
  type?: unknown;
  children?: unknown;
}

/**
 * `lsblk -J -b -o NAME,RM,SIZE,MODEL,TYPE`: the removable whole disks, keyed by kernel name
 * (`sdb`, like FreeBSD's `da0`), valued `<model> <size>` as personacrypt prints them. lsblk 2.37+
 * writes `rm` as a JSON boolean and sizes as numbers; older ones write strings ("1", "8004304896").
 */
export function parseLsblk(json: string): Record<string, string> {
  const doc = JSON.parse(json) as { blockdevices?: LsblkDevice[] };
  const out: Record<string, string> = {};
  for (const dev of doc.blockdevices ?? []) {
    const removable = dev.rm === true || dev.rm === 1 || dev.rm === '1';
    if (!removable || dev.type !== 'disk' || typeof dev.name !== 'string') continue;
    const size = Number(dev.size);
    const model = typeof dev.model === 'string' && dev.model.trim() !== '' ? dev.model.trim() : 'Removable disk';
    out[dev.name] = `<${model}> ${Number.isFinite(size) ? humanSize(size) : '?'}`;
  }
  return out;
}

/** A size as gpart(8) shows it (humanize_number, powers of 1024): `7.5G`, `29G`, `512M`. */
export function humanSize(bytes: number): string {
  const units = ['B', 'K', 'M', 'G', 'T', 'P', 'E'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = value < 10 && unit > 0 ? value.toFixed(1) : String(Math.round(value));
  return `${shown}${units[unit]}`;
}
