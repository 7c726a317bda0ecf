/**
 * Data directories 0700 and files 0600 on the agent, the bridge and the CLI: made that way, and
 * tightened on start when they exist with wider modes (a restore, a copy, a loose umask).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent } from '../helpers/agent.ts';
import { startBridge } from '@hostadm/bridge/runtime/node/start.ts';
import pino from 'pino';

const root = new URL('../..', import.meta.url).pathname;
const mode = (path: string) => statSync(path).mode & 0o777;

/**
 * A temporary directory removed when the test ends. `after` hooks run in the order they were added, so
 * a test that starts an agent or bridge in it stops that one inside the test (try/finally): stopped
 * after the removal, the agent left the directory behind.
 */
function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-modes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every directory and file under `dir`, with its mode (symlinks excluded). */
function modes(dir: string): Array<[string, number]> {
  const out: Array<[string, number]> = [[dir, mode(dir)]];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory() || entry.isFile()) out.push([join(entry.parentPath, entry.name), mode(join(entry.parentPath, entry.name))]);
  }
  return out;
}

function assertPrivate(dir: string) {
  for (const [path, m] of modes(dir)) {
    const isDir = statSync(path).isDirectory();
    assert.equal(m & 0o077, 0, `${path} is ${m.toString(8)}: group and others must have no access`);
    if (isDir) assert.equal(m, 0o700, `${path} is ${m.toString(8)}`);
  }
}

test('agent: a new data directory is 0700 and its database, WAL and host key 0600 even under umask 022', async (t) => {
  const dir = join(scratch(t), 'agent');
  const old = process.umask(0o022);
  t.after(() => process.umask(old));
  const agent = await startTestAgent({}, dir);
  try {
    assert.ok(existsSync(join(dir, 'agent.db')));
    assertPrivate(dir);
  } finally {
    await agent.dispose();
  }
});

test('agent: a data directory restored with wide modes is tightened on start, and the agent says so', async (t) => {
  const dir = join(scratch(t), 'agent');
  const first = await startTestAgent({}, dir);
  await first.close();
  chmodSync(dir, 0o755);
  for (const [path] of modes(dir).slice(1)) chmodSync(path, statSync(path).isDirectory() ? 0o777 : 0o666);
  writeFileSync(join(dir, 'stray-notes.txt'), 'x', { mode: 0o644 });
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const again = await startTestAgent({ logger }, dir);
  try {
    assertPrivate(dir);
    assert.match(warnings.join(''), /modes tightened to 0700\/0600/);
    assert.match(warnings.join(''), /agent\.db/);
  } finally {
    await again.dispose();
  }
});

test('bridge: its data directory, database and secrets are private, and tightened when restored wide', async (t) => {
  const dir = join(scratch(t), 'bridge');
  const logger = pino({ level: 'silent' });
  const first = await startBridge({ dataDir: dir, listen: { host: '127.0.0.1', port: 0 }, logger });
  await first.close();
  assertPrivate(dir);
  chmodSync(dir, 0o755);
  for (const [path] of modes(dir).slice(1)) chmodSync(path, 0o644);
  const again = await startBridge({ dataDir: dir, listen: { host: '127.0.0.1', port: 0 }, logger });
  try {
    assertPrivate(dir);
  } finally {
    await again.close();
  }
});

test('CLI: the config directory (keys, tokens, profiles) is made 0700/0600 and tightened when it was wider', async (t) => {
  const home = scratch(t);
  const env = { ...process.env, XDG_CONFIG_HOME: home };
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(join(root, 'node_modules/.bin/hostadm'), args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      child.once('close', (code) => resolve({ code, stderr }));
    });
  assert.equal((await run(['keys', 'new', '--name', 'laptop'])).code, 0);
  assert.equal((await run(['profile', 'add', 'lab', '--url', 'ws://127.0.0.1:1'])).code, 0);
  const dir = join(home, 'hostadm');
  assertPrivate(dir);
  mkdirSync(join(dir, 'keys'), { recursive: true });
  chmodSync(dir, 0o755);
  for (const [path] of modes(dir).slice(1)) chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
  const listed = await run(['profile', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stderr, /tightened modes/);
  assertPrivate(dir);
});
