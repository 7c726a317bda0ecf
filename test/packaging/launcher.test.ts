/**
 * client/bin/hostadm as installed from npm (compiled cli/src/main.cjs beside it, no sources): it runs
 * main.cjs on the `node` from PATH, starting Node once (a stand-in `node` on PATH logs each start and
 * prints what it was asked to run); main.cjs itself stops on a Node older than 22.16, saying which Node
 * it found and what it needs (main.cts, the same code, run on a Node that reports an older version).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
/** What the wrapper gives short commands (its `client_v8_flags="…"` line). */
const CLIENT_V8_FLAGS = /^client_v8_flags="([^"]*)"$/m.exec(readFileSync(join(root, 'client/bin/hostadm'), 'utf8'))?.[1] ?? '(no client_v8_flags line)';

/** An installed-package layout with a stand-in node of `version` as the only node on PATH. */
function installed(t: TestContext, version: string | null) {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-launcher-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'pkg/bin'), { recursive: true });
  mkdirSync(join(dir, 'pkg/cli/src'), { recursive: true });
  writeFileSync(join(dir, 'pkg/cli/src/main.cjs'), '');
  copyFileSync(join(root, 'client/bin/hostadm'), join(dir, 'pkg/bin/hostadm'));
  mkdirSync(join(dir, 'path'));
  if (version) {
    writeFileSync(
      join(dir, 'path/node'),
      `#!/bin/sh\necho "$*" >> ${join(dir, 'starts.log')}\nif [ "$1" = --version ]; then echo ${version}; exit 0; fi\necho "ran: $*"\n`,
    );
    chmodSync(join(dir, 'path/node'), 0o755);
  }
  // Only the stand-in: /usr/bin may have a node of its own. sh and its tools come by absolute path.
  for (const tool of ['readlink', 'dirname']) {
    const real = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(join(dir, `path/${tool}`), `#!/bin/sh\nexec ${real} "$@"\n`);
    chmodSync(join(dir, `path/${tool}`), 0o755);
  }
  const run = (...args: string[]) =>
    spawnSync('/bin/sh', [join(dir, 'pkg/bin/hostadm'), ...args], { encoding: 'utf8', env: { PATH: join(dir, 'path'), HOME: dir } });
  const starts = () => (existsSync(join(dir, 'starts.log')) ? readFileSync(join(dir, 'starts.log'), 'utf8').trim().split('\n') : []);
  return Object.assign(run, { starts });
}

test('the compiled CLI runs on the node from PATH, starting Node once', (t) => {
  const hostadm = installed(t, 'v24.1.0');
  const r = hostadm('ps', '--json');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^ran: --disable-warning=ExperimentalWarning --min-semi-space-size=\d+ \S+\/pkg\/bin\/\.\.\/cli\/src\/main\.cjs ps --json$/m);
  assert.equal(hostadm.starts().length, 1, `node was started once, not asked its version first: ${hostadm.starts().join(' | ')}`);
});

test('the heap floor for relaying goes to the commands that stay up, not to short commands', (t) => {
  const hostadm = installed(t, 'v24.1.0');
  for (const command of ['agent', 'bridge']) {
    const r = hostadm(command, '--help');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^ran: --disable-warning=ExperimentalWarning --initial-old-space-size=64 \\S+/main\\.cjs ${command} --help$`, 'm'));
  }
  // Any such V8 flag would make Node refuse its built-in code cache: every client command would compile
  // Node's own modules. Short commands get only the young-generation size, which V8 leaves out of its flag hash.
  for (const args of [['call', 'rpc/identify'], ['--version'], ['ps', '--json']]) {
    const r = hostadm(...args);
    assert.match(r.stdout, new RegExp(`^ran: --disable-warning=ExperimentalWarning ${CLIENT_V8_FLAGS} \\S+/main\\.cjs ${args.join(' ')}$`, 'm'));
  }
});

test("the short commands' V8 flags keep code caches valid: a cache made without them is accepted with them", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-launcher-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The same check V8 makes for Node's built-in modules and for the call bundle's cache (lib/call-bundle.cts).
  const script = `
    const vm = require('node:vm'), fs = require('node:fs');
    const source = 'function f(a) { return a * 2 } f(21)';
    const file = ${JSON.stringify(join(dir, 'cache.bin'))};
    if (process.argv[1] === 'make') fs.writeFileSync(file, new vm.Script(source).createCachedData());
    else console.log(new vm.Script(source, { cachedData: fs.readFileSync(file) }).cachedDataRejected ? 'rejected' : 'accepted');`;
  const node = (flags: string[], mode: string) => spawnSync(process.execPath, [...flags, '-e', script, mode], { encoding: 'utf8' });
  assert.equal(node([], 'make').status, 0);
  assert.match(CLIENT_V8_FLAGS, /^--\S/, "the wrapper names its short commands' flags");
  assert.equal(node(CLIENT_V8_FLAGS.split(' '), 'check').stdout.trim(), 'accepted');
  // The check is able to fail: the servers' heap floor is part of the hash.
  assert.equal(node(['--initial-old-space-size=64'], 'check').stdout.trim(), 'rejected');
});

test('a Node older than 22.16 is refused with what was found and what is needed, before anything loads', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-launcher-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const version of ['v22.15.1', 'v22.12.0', 'v20.20.2', 'v18.0.0']) {
    const pretend = join(dir, `node-${version}.cjs`);
    writeFileSync(
      pretend,
      `Object.defineProperty(process, 'version', { value: '${version}' });\nObject.defineProperty(process.versions, 'node', { value: '${version.slice(1)}' });\n`,
    );
    const r = spawnSync(process.execPath, ['--require', pretend, join(root, 'client/cli/src/main.cts'), '--help'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '', 'nothing was run');
    assert.match(r.stderr, new RegExp(`Node\\.js ${version.replaceAll('.', '\\.')} at .*node is too old; hostadm needs 22\\.16 or later \\(.*node:sqlite`));
  }
  for (const version of ['v22.16.0', 'v24.1.0']) {
    const pretend = join(dir, `node-${version}.cjs`);
    writeFileSync(pretend, `Object.defineProperty(process.versions, 'node', { value: '${version.slice(1)}' });\n`);
    const r = spawnSync(process.execPath, ['--require', pretend, join(root, 'client/cli/src/main.cts'), '--version'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
});

test('no node on PATH is said as such', (t) => {
  const r = installed(t, null)('--help');
  assert.equal(r.status, 127);
  assert.match(r.stderr, /no Node\.js found .*needs Node\.js 22\.16 or later/);
});
