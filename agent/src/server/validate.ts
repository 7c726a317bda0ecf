import type { z } from 'zod';
import { badRequest, type HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { fieldErrors, summarizeFieldErrors } from '@hostadm/shared/protocol/field-errors.ts';

export { fieldErrors };

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalidArgs(result.error, what);
}

export function invalidArgs(error: z.ZodError, what: string): HostadmError {
  const errors = fieldErrors(error);
  return badRequest(`invalid arguments for ${what}: ${summarizeFieldErrors(errors)}`, errors);
}
