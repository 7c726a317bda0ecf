import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonNestingExceeds } from './json-depth.ts';

test('nesting is counted outside strings only, up to the limit', () => {
  assert.equal(jsonNestingExceeds('{"a":[1,{"b":2}]}', 3), false);
  assert.equal(jsonNestingExceeds('{"a":[1,{"b":[2]}]}', 3), true);
  assert.equal(jsonNestingExceeds(JSON.stringify({ s: '[[[[[[[[{{{{' }), 1), false);
  assert.equal(jsonNestingExceeds(JSON.stringify({ s: 'a\\"[[[[' }), 1), false);
  assert.equal(jsonNestingExceeds('['.repeat(3_000_000), 16), true);
  assert.equal(jsonNestingExceeds('[]'.repeat(1000), 1), false);
});
