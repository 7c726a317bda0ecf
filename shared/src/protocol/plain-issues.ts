/**
 * One zod issue in plain words: what the field must be, and what was given. zod's own English
 * ("Invalid input: expected string, received number", "Too small: expected string to have >=1
 * characters") is never shown to a user; a contract's own message ("must be a group name") is kept,
 * with the value that broke it. Used for every 400 (agent), every refusal before sending (SDK, CLI)
 * and the bridge's admin API, through field-errors.ts.
 */
import type { z } from 'zod';

type Issue = z.core.$ZodIssue;

/** zod's default English messages; anything else is a contract's own wording, kept as written. */
const ZOD_DEFAULT = /^(Invalid (input|option|string|number|key|value|discriminator|element)\b|Invalid [a-z0-9_ -]+$|Too (big|small): |Unrecognized keys?: )/;

/** Fields whose values are never echoed back (they would end up in terminals, logs and audit rows). */
const SECRET_FIELD = /pass|secret|token|private|proof|signature|credential|^key$|_key$|^pub_?key/i;

const MAX_ECHO = 40;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  bigint: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  tuple: 'a list',
  object: 'an object',
  record: 'an object',
  map: 'an object',
  null: 'null',
  undefined: 'absent',
  date: 'a date',
  literal: 'a fixed value',
};

const FORMAT_WORDS: Record<string, string> = {
  email: 'an email address',
  url: 'a URL',
  uuid: 'a UUID',
  guid: 'a GUID',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  cidrv4: 'an IPv4 range (CIDR)',
  cidrv6: 'an IPv6 range (CIDR)',
  datetime: 'a date and time (ISO 8601)',
  date: 'a date (YYYY-MM-DD)',
  time: 'a time (HH:MM[:SS])',
  base64: 'base64 text',
  base64url: 'base64url text',
  hostname: 'a host name',
};

/** A value as it was given, short and on one line: `"a b"`, `42`, `true`, `a list`, `an object`. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const text = JSON.stringify(value.length > MAX_ECHO ? value.slice(0, MAX_ECHO) : value);
    return value.length > MAX_ECHO ? `${text.slice(0, -1)}…" (${value.length} characters)` : text;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : `a list of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function plural(n: number | bigint, one: string, many: string): string {
  return `${n} ${Number(n) === 1 ? one : many}`;
}

function sizeWords(issue: Extract<Issue, { code: 'too_small' | 'too_big' }>): string {
  const small = issue.code === 'too_small';
  const bound = small ? (issue as { minimum: number | bigint }).minimum : (issue as { maximum: number | bigint }).maximum;
  const inclusive = issue.inclusive !== false;
  const exact = (issue as { exact?: boolean }).exact === true;
  const limit = exact ? 'exactly' : small ? (inclusive ? 'at least' : 'more than') : inclusive ? 'at most' : 'fewer than';
  switch (issue.origin) {
    case 'string':
      if (small && inclusive && Number(bound) === 1 && !exact) return 'must not be empty';
      return `must be ${limit} ${plural(bound, 'character', 'characters')}`;
    case 'array':
    case 'set':
      if (small && inclusive && Number(bound) === 1 && !exact) return 'must not be an empty list';
      return `must have ${limit} ${plural(bound, 'item', 'items')}`;
    case 'number':
    case 'int':
    case 'bigint': {
      const word = small ? (inclusive ? 'at least' : 'greater than') : inclusive ? 'at most' : 'less than';
      return `must be ${exact ? 'exactly' : word} ${String(bound)}`;
    }
    default:
      return `must be ${limit} ${String(bound)}`;
  }
}

/** What the field must be, in plain words (no value). */
function requirement(issue: Issue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'invalid_value': {
      const values = issue.values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
      return values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}`;
    }
    case 'too_small':
    case 'too_big':
      return sizeWords(issue);
    case 'invalid_format': {
      const f = issue as { format: string; pattern?: string; prefix?: string; suffix?: string; includes?: string };
      if (f.format === 'starts_with') return `must start with "${f.prefix}"`;
      if (f.format === 'ends_with') return `must end with "${f.suffix}"`;
      if (f.format === 'includes') return `must contain "${f.includes}"`;
      if (f.format === 'regex') return `must match the pattern ${f.pattern}`;
      return `must be ${FORMAT_WORDS[f.format] ?? `a valid ${f.format}`}`;
    }
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'unrecognized_keys':
      return 'unknown argument';
    case 'invalid_key':
      return 'has a key that is not allowed';
    case 'invalid_element':
      return 'has a value that is not allowed';
    case 'invalid_union':
      return 'does not match any of the allowed forms';
    default:
      return issue.message;
  }
}

/**
 * The issue's message in plain words. `value` is what was given at the issue's path (undefined when
 * absent); `field` is the field's name, so a secret's value is never repeated.
 */
export function plainIssueMessage(issue: Issue, value: unknown, field: string): string {
  const own = !ZOD_DEFAULT.test(issue.message);
  if (issue.code === 'invalid_type' && value === undefined && !own) return `is required (${TYPE_WORDS[issue.expected] ?? issue.expected})`;
  const words = own ? issue.message : requirement(issue);
  const saysItAll = (value === '' || (Array.isArray(value) && value.length === 0)) && / empty\b/.test(words);
  const echo = !SECRET_FIELD.test(lastSegment(field)) && issue.code !== 'unrecognized_keys' && value !== undefined && !saysItAll;
  return echo ? `${words} (got ${describeValue(value)})` : words;
}

function lastSegment(field: string): string {
  const dot = field.lastIndexOf('.');
  return dot < 0 ? field : field.slice(dot + 1);
}

/** The value at `path` inside `root`, or undefined when the path does not lead anywhere. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let at = root;
  for (const key of path) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}
