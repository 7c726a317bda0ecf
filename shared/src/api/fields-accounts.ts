/**
 * The forms of account values (`users` and every platform that writes accounts): names, GECOS
 * comments, home and shell paths, passwords, ids and the dates pw(8) accepts. They live here, in
 * the contract, so the SDK refuses before sending exactly what the agent refuses; the agent's
 * handlers keep only the checks that need the host's accounts.
 *
 * Each builder starts from the general rule (`safeName`, `absolutePath`, `text`, `numericString`)
 * and narrows it with a refinement: a value the general rule already refuses is reported in the
 * general rule's words alone (field-errors.ts keeps one message per field).
 */
import { z } from 'zod';
import { absolutePath, numericString, safeName, text } from './fields.ts';

/**
 * Account and group names we create or change: what passwd(5)/group(5) on both systems can hold
 * without quoting, at most 32 characters (Linux's limit; FreeBSD allows 32 too). A trailing `$` is
 * allowed for machine accounts.
 */
export const ACCOUNT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,30}[A-Za-z0-9_.$-]?$/;

/**
 * Names of accounts that already exist and sign in (an LDAP `user@realm` among them): looser than
 * ACCOUNT_NAME, but never an option (`-x`) or anything but one plain word.
 */
export const SIGNED_IN_ACCOUNT = /^[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?$/;

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

const GROUP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const GROUP_NAMES = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(,[A-Za-z0-9_][A-Za-z0-9_.-]*)*$/;

/** Login classes (login.conf(5) capability names). */
const LOGIN_CLASS = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/;

/** The largest id both systems accept (uid_t is 32 bits; 2^32-1 means "no id"). */
export const MAX_ACCOUNT_ID = 4_294_967_294;

const NAME_RULE = 'must be at most 32 letters, digits, `.`, `_` or `-` (a trailing `$` allowed), not starting with `.` or `-`';

/** An account or group name (see ACCOUNT_NAME). */
export const accountName = (description: string) => safeName(description).refine((v) => ACCOUNT_NAME.test(v), NAME_RULE);

/** A list of account or group names, each checked as one. */
export const accountNames = (description: string) => z.array(accountName('Account name')).describe(description);

/** Secondary groups: an array of names, or one string of comma-separated names (the original's form). */
export const groupList = (description: string) =>
  z
    .union([
      z.array(
        z
          .string()
          .regex(GROUP_NAME, 'must be a group name')
          .refine((g) => ACCOUNT_NAME.test(g), NAME_RULE),
      ),
      z
        .string()
        .regex(GROUP_NAMES, 'must be group names separated by commas')
        .refine((v) => v.split(',').every((g) => ACCOUNT_NAME.test(g)), `each name ${NAME_RULE}`)
        .transform((v) => v.split(',')),
    ])
    .describe(description);

export const password = (description: string) =>
  z
    .string()
    .min(1)
    .max(1024)
    .refine((v) => PASSWORD.test(v), 'must not contain line breaks or other control characters')
    .describe(description);

/** A user or group id: a decimal string or JSON integer up to MAX_ACCOUNT_ID, normalized to the string. */
export const accountId = (description: string) => numericString(description).refine((v) => Number(v) <= MAX_ACCOUNT_ID, `must be at most ${MAX_ACCOUNT_ID}`);

export const loginClass = (description: string) =>
  safeName(description).refine((v) => LOGIN_CLASS.test(v), 'must be a login class name: letters, digits, `.`, `_` or `-`');

export const gecos = (description: string) =>
  text(description, 256).refine((v) => COMMENT.test(v), "may hold letters, digits, spaces and & ' , . ( ) _ + @ / # ! - only, and must not start with -");

export const accountPath = (description: string) =>
  absolutePath(description).refine((v) => ACCOUNT_PATH.test(v), 'must be an absolute path of letters, digits and / . _ + @ - only');

/** A `change`/`expire` value in one of pw(8)'s forms (see parseAccountDate). */
export const accountDate = (description: string) =>
  text(description, 64).refine((v) => parseAccountDate(v, 0) !== null, 'must be epoch seconds, dd-mmm-yyyy, dd-mm-yyyy or +<n> followed by one of m h d w o y');

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * Epoch seconds for a `change`/`expire` value in one of pw(8)'s forms, or null when it is none of
 * them: decimal epoch seconds (`0` = never), `dd-mmm-yy[yy]` or `dd-mm-yy[yy]` (midnight UTC; pw
 * itself uses the host's local time), or `+<n>` followed by m(inutes), h(ours), d(ays), w(eeks),
 * (m)o(nths) or y(ears) from `nowMs`. Whether a value is one of the forms never depends on `nowMs`.
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
