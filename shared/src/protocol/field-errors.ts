/**
 * zod issues as field errors, the way every 400 reports them: every problem at once, each naming
 * its field (a dotted path inside `args`) in plain words (plain-issues.ts). The agent uses it for
 * replies, the SDK and the CLI to check arguments before sending, so a user sees the same words
 * wherever a check fails.
 */
import type { z } from 'zod';
import { capFieldErrors, type FieldError } from './errors.ts';
import { plainIssueMessage, valueAt } from './plain-issues.ts';

/** With the field errors they summarize, for the agent's, the bridge's and the SDK's refusals. */
export { summarizeFieldErrors } from './errors.ts';

/**
 * Capped as every error reply is (capFieldErrors), so summaries built from it stay short too.
 * `input` is the value that was checked: each message then says what was given (secrets excepted).
 */
export function fieldErrors(error: z.ZodError, input?: unknown): FieldError[] {
  return capFieldErrors(allFieldErrors(error, input));
}

type Issue = z.core.$ZodIssue;

function allFieldErrors(error: z.ZodError, input: unknown): FieldError[] {
  const out: FieldError[] = [];
  const add = (issue: Issue, path: readonly PropertyKey[]) => {
    const field = path.map(String).join('.');
    // A refinement after a failed check repeats the problem in other words (a pid that is not digits
    // "is not a process id" either): one message per field is enough.
    if (issue.code === 'custom' && out.some((e) => e.field === (field || '(args)'))) return;
    // A record key that breaks its schema (a job id): the key is what was given; its own check says why.
    const message =
      issue.code === 'invalid_key' && issue.issues[0] && path.length > 0
        ? plainIssueMessage(issue.issues[0], String(path.at(-1)), 'record key')
        : plainIssueMessage(issue, valueAt(input, path), field);
    out.push({ field: field || '(args)', message });
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: [...issue.path.map(String), key].join('.'), message: 'unknown argument' });
    } else if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A union's message is "invalid input". The branch that got furthest says what is wrong: first
      // the one whose type matched at the top (no root type mismatch), then the one with fewest problems.
      const rootMismatches = (branch: readonly Issue[]) => branch.filter((i) => i.code === 'invalid_type' && i.path.length === 0).length;
      const best = issue.errors.reduce((a, b) => {
        const byType = rootMismatches(b) - rootMismatches(a);
        return byType < 0 || (byType === 0 && b.length < a.length) ? b : a;
      });
      if (best.length > 0) for (const sub of best) add(sub, [...issue.path, ...sub.path]);
      else add(issue, issue.path);
    } else {
      add(issue, issue.path);
    }
  }
  return out;
}
