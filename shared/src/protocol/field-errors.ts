/**
 * zod issues as field errors, the way every 400 reports them: every problem at once, each naming
 * its field (a dotted path inside `args`). The agent uses it for replies, the SDK and the CLI to
 * check arguments before sending, so a user sees the same words wherever a check fails.
 */
import type { z } from 'zod';
import { capFieldErrors, type FieldError } from './errors.ts';

/** Capped as every error reply is (capFieldErrors), so summaries built from it stay short too. */
export function fieldErrors(error: z.ZodError, prefix = ''): FieldError[] {
  return capFieldErrors(allFieldErrors(error, prefix));
}

function allFieldErrors(error: z.ZodError, prefix: string): FieldError[] {
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

/** `field: message; field: message` for one-line error texts. */
export function summarizeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.message}`).join('; ');
}
