/**
 * Exit codes the help's table promises, where they used to differ, and output for scripts: a key the
 * bridge refuses (401) is exit 3 like any failed sign-in, not 6; `bridge keys list` draws no lines and
 * no colours unless a person at a terminal wants them (NO_COLOR, https://no-color.org).
 * The other codes: call.test.ts (0, 2, 3, 4, 5, 6), jobs.test.ts (130), agent-command.test.ts (2, 6).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rsaKey } from '../helpers/keys.ts';
import { nodeOnly, startTestBridge } from '../bridge/helpers.ts';
import { TestPeer } from '../bridge/peers.ts';
import { HOSTADM, runCli, show } from './cli-support.ts';

test('a key the bridge refuses is a failed sign-in: exit 3, saying to enroll it', async (t) => {
  const bridge = await startTestBridge(t);
  const config = mkdtempSync(join(tmpdir(), 'hostadm-exit-'));
  t.after(() => rmSync(config, { recursive: true, force: true }));
  const env = { XDG_CONFIG_HOME: config };
  assert.equal((await runCli(['keys', 'new', '--name', 'stranger'], env)).code, 0);
  const key = join(config, 'hostadm', 'keys', 'stranger.key');
  const refused = await runCli(['ps', '--bridge', bridge.url, '--host', 'web1', '--key', key], env);
  assert.equal(refused.code, 3, show(refused));
  assert.match(refused.stderr, /^hostadm: the bridge refused the key \S+: 401 .*enroll it/m);
  assert.doesNotMatch(refused.stderr, /^\s+at /m);
});

const BOX = /[┌┐└┘│─┼├┤]/;
const ESCAPE = /\u001b\[/;

test('bridge keys list: no lines or colours when piped or with NO_COLOR; a boxed table for a terminal', {
  skip: nodeOnly("reads the Node bridge's data directory"),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'client');
  t.after(() => peer.close());
  assert.equal((await peer.enroll(await bridge.token('client', { nickname: 'laptop' }), rsaKey())).name, 'response');
  const args = ['bridge', 'keys', 'list', '--data', bridge.dataDir];

  const piped = await runCli(args, {});
  assert.equal(piped.code, 0, show(piped));
  assert.match(piped.stdout, /^key id +kind +nickname/m);
  assert.match(piped.stdout, /\blaptop\b/);
  assert.doesNotMatch(piped.stdout, BOX);
  assert.doesNotMatch(piped.stdout, ESCAPE);

  // A real terminal through script(1), when the machine has it.
  if (!existsSync('/usr/bin/script')) return;
  const tty = (extra: Record<string, string>) => onTerminal([HOSTADM, ...args], extra);
  const plain = await tty({ NO_COLOR: '1' });
  assert.match(plain, /\blaptop\b/);
  assert.doesNotMatch(plain, BOX);
  assert.doesNotMatch(plain, ESCAPE);
  const boxed = await tty({});
  assert.match(boxed, /\blaptop\b/);
  assert.match(boxed, BOX, 'the terminal path was really taken');
});

/** Runs argv with a pseudo-terminal as its stdout (script -qec); resolves with what it printed. */
function onTerminal(argv: string[], extra: Record<string, string>): Promise<string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'NO_COLOR' && !k.startsWith('HOSTADM_')) env[k] = v;
  Object.assign(env, extra);
  const command = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('/usr/bin/script', ['-qec', command, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve) => child.once('close', () => resolve(out)));
}
