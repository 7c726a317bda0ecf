import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitCommandLine, CommandLineError } from './command-line.ts';

test('words split on whitespace; quotes group; shell operators stay plain text', () => {
  assert.deepEqual(splitCommandLine('  ls   -l /tmp '), ['ls', '-l', '/tmp']);
  assert.deepEqual(splitCommandLine(`echo 'a b' "c d" e\\ f`), ['echo', 'a b', 'c d', 'e f']);
  assert.deepEqual(splitCommandLine(`printf "%s" "say \\"hi\\"" 'it''s'`), ['printf', '%s', 'say "hi"', 'its']);
  assert.deepEqual(splitCommandLine('ls | wc -l; rm -rf / && echo $(id)'), ['ls', '|', 'wc', '-l;', 'rm', '-rf', '/', '&&', 'echo', '$(id)']);
  assert.deepEqual(splitCommandLine(`echo ''`), ['echo', '']);
});

test('unbalanced quotes, a trailing backslash and empty commands are refused', () => {
  assert.throws(() => splitCommandLine(`echo "open`), CommandLineError);
  assert.throws(() => splitCommandLine(`echo 'open`), CommandLineError);
  assert.throws(() => splitCommandLine('echo \\'), CommandLineError);
  assert.throws(() => splitCommandLine('   '), CommandLineError);
});
