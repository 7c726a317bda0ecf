/**
 * Field builders shared by the contracts. The spec sends almost every value as a string; these keep
 * the spellings (`"true"`/`"false"`, `YES`/`NO`, `on`/`off`) in one place.
 */
import { z } from 'zod';
import { lazy } from '../protocol/define.ts';

/** A string field with its description (the common case). */
export const str = (description: string) => z.string().describe(description);

/** The spec's boolean-like strings `true` / `false`. */
export const boolString = (description: string) => z.enum(['true', 'false']).describe(description);

/** `YES` / `NO` (vm fields). */
export const yesNo = (description: string) => z.enum(['YES', 'NO']).describe(description);

/** `on` / `off` (jail boot, package options). */
export const onOff = (description: string) => z.enum(['on', 'off']).describe(description);

/** An optional argument that accepts `true`/`false` as strings or JSON booleans, normalized to the string. */
export const boolArg = (description: string) =>
  z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => (typeof v === 'boolean' ? (v ? 'true' : 'false') : v))
    .describe(description);

/** An object keyed by a resource name (`keyedBy('user name', userRecord)`). */
export const keyedBy = <T extends z.ZodType>(key: string, value: T, description: string) => z.record(z.string().describe(key), value).describe(description);

/** `{result: "success"}`, the reply of most write actions. */
export const resultSuccess = lazy(() =>
  z.object({ result: z.literal('success').describe('Always `success`; failures are error envelopes') }).describe('The operation succeeded'),
);

/** A request with no arguments besides `action`. Unknown keys are refused so typos are caught. */
export const noArgs = lazy(() => z.strictObject({}).describe('No arguments'));

/** One name or an array of names (the original accepted both for list-like arguments). */
export const oneOrMany = (item: z.ZodString, description: string) =>
  z
    .union([item, z.array(item).min(1)])
    .transform((v) => (Array.isArray(v) ? v : [v]))
    .describe(description);

/** The pending acknowledgement of a queued `pkg`-style action: `{proc_cmd, proc_id, status}`. */
export const pendingAck = lazy(() =>
  z
    .object({
      proc_cmd: str('The command that the job executes'),
      proc_id: str('Job id, `admin_<action>-{<uuid>}`; the completion event carries it as `process_id`'),
      status: z.literal('pending').describe('Always `pending`; the result arrives as a `dispatcher` event'),
    })
    .describe('Queued: the result arrives later as a dispatcher event'),
);

/** The pending acknowledgement of `fetchiso` / `startupdate`: `{command, comment, queueid}`. */
export const queuedAck = lazy(() =>
  z
    .object({
      command: str('The command that the job executes'),
      comment: str('Human text, `Task Queued`'),
      queueid: str('Job id; the completion event carries it as `process_id`'),
    })
    .describe('Queued: the result arrives later as a dispatcher event'),
);

/**
 * Values that reach host commands. They are checked here, at the edge, so no handler ever sees one
 * that a shell or an option parser could misread: no metacharacters, no leading `-`, no `..`.
 */
const SAFE_TOKEN = /^[A-Za-z0-9_][A-Za-z0-9_.:@+-]*$/;
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

/** An identifier such as an account, group, service, jail, VM, BE or pool name. */
export const safeName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .regex(SAFE_TOKEN, 'may hold only letters, digits and . _ : @ + - and must not start with - or .')
    .describe(description);

/** A ZFS dataset or snapshot path: safe tokens joined by `/` (and one `@` for snapshots). */
export const datasetName = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]*(\/[A-Za-z0-9_][A-Za-z0-9_.:-]*)*$/, 'must be a dataset path like pool/a/b')
    .describe(description);

/** An absolute path with no `..` segment and no control characters. */
export const absolutePath = (description: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(4096, 'must be at most 4096 characters')
    .regex(/^\//, 'must be an absolute path')
    .regex(NO_CONTROL, 'must not contain control characters')
    .refine((p) => !p.split('/').includes('..'), 'must not contain `..`')
    .describe(description);

/** Free text that is passed as one argv element (comments, descriptions): no control characters. */
export const text = (description: string, max = 1024) =>
  z.string().max(max, `must be at most ${max} characters`).regex(NO_CONTROL, 'must not contain control characters').describe(description);

/** A decimal number sent as a string (the spec's ids, counts and sizes), or a JSON integer. */
export const numericString = (description: string) =>
  z
    .union([z.string().regex(/^\d{1,18}$/, 'must be a non-negative whole number'), z.number().int().nonnegative()])
    .transform(String)
    .describe(description);
