import type { z } from 'zod';
import { badRequest, type FieldError, type HostadmError } from '@hostadm/shared/protocol/errors.ts';

/** Turns zod issues into field errors: every problem at once, each naming its field. */
export function fieldErrors(error: z.ZodError, prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const base = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: [base, key].filter(Boolean).join('.'), message: 'unknown argument' });
    } else if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A union's message is "invalid input". The branch that got furthest says what is wrong: first
      // the one whose type matched at the top (no root type mismatch), then the one with fewest problems.
      const rootMismatches = (branch: readonly z.core.$ZodIssue[]) =>
        branch.filter((i) => i.code === 'invalid_type' && i.path.length === 0).length;
      const best = issue.errors.reduce((a, b) => {
        const byType = rootMismatches(b) - rootMismatches(a);
        return byType < 0 || (byType === 0 && b.length < a.length) ? b : a;
      });
      if (best.length > 0) {
        for (const sub of best) {
          const field = [base, ...sub.path.map(String)].filter(Boolean).join('.');
          out.push({ field: field || base || '(args)', message: sub.message });
        }
      } else out.push({ field: base || '(args)', message: issue.message });
    } else {
      out.push({ field: base || '(args)', message: issue.message });
    }
  }
  return out;
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalidArgs(result.error, what);
}

export function invalidArgs(error: z.ZodError, what: string): HostadmError {
  const errors = fieldErrors(error);
  const summary = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return badRequest(`invalid arguments for ${what}: ${summary}`, errors);
}
