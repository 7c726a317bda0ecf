/**
 * Argument and reply checks against the contracts. The zod-issue-to-field-error rules live in
 * `shared/src/protocol/field-errors.ts`, shared with the agent, so a local refusal names the same
 * fields in the same words as the host's 400 would; this file adds only what the SDK needs on top.
 */
import type { z } from 'zod';
import type { FieldError } from '@hostadm/shared/protocol/errors.ts';
import { fieldErrors, summarizeFieldErrors } from '@hostadm/shared/protocol/field-errors.ts';
import { HostadmRequestError, targetLabel, type RequestTarget } from './errors.ts';

/** `field: message; field: message`; under its old name here because the CLI imports it from this file. */
export { summarizeFieldErrors as summarize };

/** Checks `value` against `schema`; returns the problems (empty when it conforms). */
export function check(schema: z.ZodType, value: unknown): FieldError[] {
  const result = schema.safeParse(value);
  return result.success ? [] : fieldErrors(result.error, value);
}

/** Arguments refused before sending: a 400 like the host's, marked `local` because nothing was sent. */
export function invalidArgs(target: RequestTarget, problems: FieldError[]): HostadmRequestError {
  return new HostadmRequestError(400, `invalid arguments for ${targetLabel(target)}: ${summarizeFieldErrors(problems)}`, target, {
    fieldErrors: problems,
    local: true,
  });
}
