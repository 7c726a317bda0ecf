import type { z } from 'zod';
import { badRequest, type HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { fieldErrors, summarizeFieldErrors } from '@hostadm/shared/protocol/field-errors.ts';

export { fieldErrors };

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalidArgs(result.error, what, value);
}

/** A 400 naming every field problem in plain words; `input` lets each message say what was given. */
export function invalidArgs(error: z.ZodError, what: string, input?: unknown): HostadmError {
  const errors = fieldErrors(error, input);
  return badRequest(`invalid arguments for ${what}: ${summarizeFieldErrors(errors)}`, errors);
}
