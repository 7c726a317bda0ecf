/**
 * Rules for account values shared by the users handler and the platforms: what an account or
 * group name, a GECOS comment, a home or shell path and a password may hold beyond the contract,
 * and the date forms FreeBSD's pw(8) accepts for `change` and `expire` (converted to epoch seconds
 * on platforms that need a number).
 */

/**
 * Account and group names: what passwd(5)/group(5) on both systems can hold without quoting, at
 * most 32 characters (Linux's limit; FreeBSD allows 32 too). A trailing `$` is allowed for
 * machine accounts.
 */
export const ACCOUNT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,30}[A-Za-z0-9_.$-]?$/;

/**
 * GECOS: letters (any script), digits, spaces and the punctuation full names, rooms and phone
 * numbers use, including `&` (FreeBSD expands it to the login name). `:` would split the passwd
 * line; shell metacharacters have no place in a name and are refused so a value that looks like
 * an attack is never stored even though it would only ever be one argv element.
 */
export const COMMENT = /^(?!-)[\p{L}\p{M}\p{N} &'’,.()_+@/#!-]*$/u;

/** Home directories and shells: plain absolute paths (`:` and spaces would break passwd(5)). */
export const ACCOUNT_PATH = /^\/[A-Za-z0-9_.+@/-]*$/;

/** A password goes on one line of stdin (`pw -h 0`, `chpasswd`): a line break would end it early or start another record. */
export const PASSWORD = /^[^\u0000-\u001f\u007f]+$/;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * Epoch seconds for a `change`/`expire` value in one of pw(8)'s forms, or null when it is none of
 * them: decimal epoch seconds (`0` = never), `dd-mmm-yy[yy]` or `dd-mm-yy[yy]` (midnight UTC; pw
 * itself uses the host's local time), or `+<n>` followed by m(inutes), h(ours), d(ays), w(eeks),
 * (m)o(nths) or y(ears) from `nowMs`.
 */
export function parseAccountDate(value: string, nowMs: number): number | null {
  if (/^\d{1,12}$/.test(value)) return Number(value);
  const rel = /^\+(\d{1,6})([mhdwoy])$/.exec(value);
  if (rel) {
    const n = Number(rel[1]);
    const now = new Date(nowMs);
    const unit = rel[2];
    if (unit === 'o') now.setUTCMonth(now.getUTCMonth() + n);
    else if (unit === 'y') now.setUTCFullYear(now.getUTCFullYear() + n);
    else now.setTime(nowMs + n * { m: 60, h: 3600, d: 86_400, w: 604_800 }[unit as 'm' | 'h' | 'd' | 'w'] * 1000);
    return Math.floor(now.getTime() / 1000);
  }
  const date = /^(\d{1,2})-([A-Za-z]{3}|\d{1,2})-(\d{2}|\d{4})$/.exec(value);
  if (!date) return null;
  const day = Number(date[1]);
  const monthText = date[2] as string;
  const month = /^\d+$/.test(monthText) ? Number(monthText) - 1 : MONTHS.indexOf(monthText.toLowerCase());
  let year = Number(date[3]);
  // strptime's %y: 69-99 are the 1900s, 00-68 the 2000s.
  if ((date[3] as string).length === 2) year += year >= 69 ? 1900 : 2000;
  if (month < 0 || month > 11 || day < 1) return null;
  const ms = Date.UTC(year, month, day);
  if (new Date(ms).getUTCDate() !== day) return null; // 31-02-2030 and the like
  return Math.floor(ms / 1000);
}

/** `YYYY-MM-DD` (UTC) of epoch seconds: the form Linux's usermod/chage take. */
export function isoDay(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().slice(0, 10);
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
