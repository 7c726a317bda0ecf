/**
 * Field builders used only by the system classes (firewall, powerd, moused, services, systemmanager, network,
 * fs, update). The common builders live in `fields.ts`.
 */
import { z } from 'zod';

const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
/** Same token rule as `safeName` in fields.ts (kept in step with it). */
const SAFE_TOKEN = /^[A-Za-z0-9_][A-Za-z0-9_.:@+-]*$/;

/** The literal string `true` (replies such as `{enabled: "true"}` that never carry `false`). */
export const trueString = (description: string) => z.literal('true').describe(description);

/**
 * A number sent as a JSON number or as a decimal string, checked against a range and normalized to its
 * decimal string (the form written into host configuration and command arguments).
 */
export const rangedNumber = (description: string, opts: { min: number; max?: number; integer: boolean }) => {
  let num = opts.integer ? z.number().int('must be a whole number') : z.number();
  num = num.min(opts.min, `must be at least ${opts.min}`);
  if (opts.max !== undefined) num = num.max(opts.max, `must be at most ${opts.max}`);
  const pattern = opts.integer ? /^-?\d{1,12}$/ : /^-?\d{1,12}(\.\d{1,6})?$/;
  return z
    .union([
      num,
      z
        .string()
        .regex(pattern, opts.integer ? 'must be a whole number' : 'must be a decimal number')
        .transform(Number)
        .pipe(num),
    ])
    .transform(String)
    .describe(description);
};

/** A positive process id, as a JSON integer or a decimal string; normalized to the string. */
export const pidArg = (description: string) =>
  z
    .union([
      z.number().int('must be a whole number').min(1, 'must be a positive process id').max(2147483647, 'is not a process id'),
      z
        .string()
        .regex(/^[1-9]\d{0,9}$/, 'must be a positive process id')
        .refine((s) => Number(s) <= 2147483647, 'is not a process id'),
    ])
    .transform(String)
    .describe(description);

/**
 * A firewall port, `<number>/<tcp|udp>`, number 1 to 65535 without leading zeros.
 */
export const portSpec = (description: string) =>
  z
    .string()
    .regex(/^[1-9]\d{0,4}\/(tcp|udp)$/, 'must be `<port>/tcp` or `<port>/udp`, the port a number without leading zeros')
    .refine((p) => Number(p.split('/')[0]) <= 65535, 'port must be 1 to 65535')
    .describe(description);

/**
 * A sysctl name: dotted components of letters, digits, `_`, `%` and `-` (never first), at least two
 * components. No `=`, spaces or shell metacharacters, so `<name>=<value>` stays one unambiguous argument.
 */
export const sysctlName = (description: string) =>
  z
    .string()
    .max(255, 'must be at most 255 characters')
    .regex(/^[A-Za-z0-9_%][A-Za-z0-9_%-]*(\.[A-Za-z0-9_%][A-Za-z0-9_%-]*)+$/, 'must be a dotted sysctl name like kern.ipc.maxsockbuf')
    .describe(description);

/** A sysctl value: string (no control characters, at most 1024 characters) or a JSON number; normalized to string. */
export const sysctlValue = (description: string) =>
  z
    .union([z.number(), z.string().max(1024, 'must be at most 1024 characters').regex(NO_CONTROL, 'must not contain control characters')])
    .transform(String)
    .describe(description);

/**
 * A safe token that is required in one variant of a union; when absent the message names the field and the
 * variant instead of the generic type error.
 */
export const requiredToken = (field: string, when: string, description: string) =>
  z
    .string({ error: (iss) => (iss.input === undefined ? `\`${field}\` is required when ${when}` : `\`${field}\` must be a string`) })
    .min(1, `\`${field}\` must not be empty`)
    .max(255, `\`${field}\` must be at most 255 characters`)
    .regex(SAFE_TOKEN, `\`${field}\` may hold only letters, digits and . _ : @ + - and must not start with - or .`)
    .describe(description);

/** A URL written into a configuration file: http, https, ftp or file scheme, no spaces or control characters. */
export const urlString = (description: string) =>
  z
    .string()
    .max(1024, 'must be at most 1024 characters')
    .regex(/^(https?|ftp|file):\/\/[^\s\u0000-\u001f\u007f"'`\\]+$/, 'must be an http(s), ftp or file URL without spaces or quotes')
    .describe(description);

/** Requires at least one of `keys` to be present (for `set_options`-style requests). */
export const atLeastOne =
  (keys: readonly string[]) =>
  (value: Record<string, unknown>): boolean =>
    keys.some((k) => value[k] !== undefined);
