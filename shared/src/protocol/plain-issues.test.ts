import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { api } from '../api/index.ts';
import { fieldErrors } from './field-errors.ts';

const problems = (schema: z.ZodType, value: unknown) => {
  const result = schema.safeParse(value);
  assert.equal(result.success, false, JSON.stringify(value));
  return fieldErrors(result.error!, value);
};

test('zod issues read as plain words: what the field must be, and what was given', () => {
  const schema = z
    .object({
      name: z.string().min(1).max(32),
      kind: z.enum(['a', 'b']),
      count: z.number().int().min(1).max(10),
      tags: z.array(z.string()).min(1),
      when: z.string().regex(/^\d+$/),
    })
    .strict();
  const byField = Object.fromEntries(problems(schema, { name: '', kind: 'c', count: 11, tags: 'x', when: 'soon', extra: 1 }).map((e) => [e.field, e.message]));
  assert.deepEqual(byField, {
    name: 'must not be empty',
    kind: 'must be one of a, b (got "c")',
    count: 'must be at most 10 (got 11)',
    tags: 'must be a list (got "x")',
    when: 'must match the pattern /^\\d+$/ (got "soon")',
    extra: 'unknown argument',
  });
  assert.deepEqual(problems(schema, { kind: 'a', count: 1.5, tags: [], when: '1' }), [
    { field: 'name', message: 'is required (a string)' },
    { field: 'count', message: 'must be a whole number (got 1.5)' },
    { field: 'tags', message: 'must not be an empty list' },
  ]);
  const long = problems(z.object({ name: z.string().max(3) }), { name: 'x'.repeat(100) })[0]!.message;
  assert.equal(long, `must be at most 3 characters (got "${'x'.repeat(40)}…" (100 characters))`);
});

test("a contract's own message is kept, with the value; a record key that is refused is named", () => {
  const run = api.rpc.dispatcher.actions.run.args;
  assert.deepEqual(problems(run, { 'bad id!': 'ls' }), [{ field: 'bad id!', message: 'may hold only letters, digits and _ . : { } - (got "bad id!")' }]);
  const killproc = api.admin.systemmanager.actions.killproc.args;
  // One message per field: the refinement after the failed pattern would only say it again.
  assert.deepEqual(problems(killproc, { pid: 'abc', signal: 'HUP' }), [
    { field: 'pid', message: 'must be a positive process id (got "abc")' },
    { field: 'signal', message: 'must be one of INT, QUIT, ABRT, KILL, ALRM, TERM (got "HUP")' },
  ]);
});

test('secrets are never echoed back', () => {
  const useradd = api.admin.users.actions.useradd.args;
  const [problem] = problems(useradd, { name: 'bob', password: 'p'.repeat(2000) });
  assert.equal(problem!.field, 'password');
  assert.equal(problem!.message, 'must be at most 1024 characters');
});

test("no contract's argument check ever shows zod's own wording", () => {
  const zodWords = /Invalid input|Invalid option|Too (big|small)|expected \w+, received|Unrecognized key/;
  const probes: unknown[] = [{}, { x: 1 }, null, [], 'x', { name: 42, pid: [], services: {}, dir: 7, id: null }];
  let checked = 0;
  for (const namespace of Object.values(api)) {
    for (const contract of Object.values(namespace as Record<string, { actions?: Record<string, { args: z.ZodType }> }>)) {
      for (const action of Object.values(contract.actions ?? {})) {
        for (const probe of probes) {
          const result = action.args.safeParse(probe);
          if (result.success) continue;
          for (const e of fieldErrors(result.error, probe)) assert.doesNotMatch(e.message, zodWords, `${e.field}: ${e.message}`);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 100, `only ${checked} refusals checked`);
});
