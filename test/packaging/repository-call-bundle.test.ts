/**
 * `hostadm call` in a checkout runs the call bundle `npm ci` made (scripts/build-call-bundle.ts) only
 * while every file it was made from is unchanged; an edited source is never shadowed by it. Checked on
 * a scratch copy of the repository layout (client/, shared/ and the build scripts, the third-party
 * packages linked), through its own `client/bin/hostadm`, so the test can edit sources freely. Which
 * of the two ran is seen from outside: only the bundle leaves its code cache
 * (`hostadm-call-*.v8`) in the cache directory.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
let copy: string;
let runs = 0;

before(() => {
  copy = mkdtempSync(join(tmpdir(), 'hostadm-repo-bundle-'));
  for (const dir of ['client', 'shared']) {
    cpSync(join(root, dir), join(copy, dir), { recursive: true, filter: (src) => !src.includes('/.call-bundle') && !src.includes('/node_modules') });
  }
  mkdirSync(join(copy, 'scripts'));
  for (const file of ['bundle-cli.ts', 'build-call-bundle.ts']) cpSync(join(root, 'scripts', file), join(copy, 'scripts', file));
  cpSync(join(root, 'package.json'), join(copy, 'package.json'));
  // The copy's own workspaces, the rest (and the project's Node) linked from the repository.
  mkdirSync(join(copy, 'node_modules/@hostadm'), { recursive: true });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry !== '@hostadm' && entry !== '.bin') symlinkSync(join(root, 'node_modules', entry), join(copy, 'node_modules', entry));
  }
  for (const name of ['client', 'shared']) symlinkSync(join(copy, name), join(copy, 'node_modules/@hostadm', name));
  for (const name of ['agent', 'bridge', 'console']) symlinkSync(join(root, name), join(copy, 'node_modules/@hostadm', name));
});

after(() => rmSync(copy, { recursive: true, force: true }));

function buildBundle(): string {
  const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(copy, 'scripts/build-call-bundle.ts')], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stderr.trim();
}

/** Runs the copy's `hostadm` with a cache directory of its own; says whether the call bundle ran. */
function hostadm(args: string[]): { code: number | null; stdout: string; stderr: string; fromBundle: boolean } {
  const home = join(copy, `home-${++runs}`);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') };
  for (const name of ['NODE_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE', 'HOSTADM_PERSIST', 'HOSTADM_PROFILE', 'HOSTADM_URL']) delete env[name];
  const run = spawnSync(join(copy, 'client/bin/hostadm'), args, { env, encoding: 'utf8' });
  const caches = join(home, 'cache/hostadm/node-compile-cache');
  const fromBundle = existsSync(caches) && readdirSync(caches).some((name) => name.startsWith('hostadm-call-'));
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, fromBundle };
}

const CONTRACT = 'shared/src/api/systemmanager.ts';
const ORIGINAL = 'System information, processes, sysctl, halt and reboot';
// The same length: an edit that keeps the size, with its mtime put back below, is still seen.
const EDITED = 'SYSTEM INFORMATION, processes, sysctl, halt and reboot';

test('a fresh bundle runs the call; an edited source runs from the sources until the bundle is rebuilt', () => {
  const path = join(copy, CONTRACT);
  // A whole second, which utimes sets exactly: the edit below puts it back, as some tools do.
  const mtime = new Date(Math.floor(statSync(path).mtimeMs / 1000) * 1000);
  utimesSync(path, mtime, mtime);
  assert.match(buildBundle(), /built/);
  assert.match(buildBundle(), /up to date/);

  const bundled = hostadm(['call', 'systemmanager', '--help']);
  assert.equal(bundled.code, 0, bundled.stderr);
  assert.match(bundled.stdout, new RegExp(`admin/systemmanager: ${ORIGINAL}`));
  assert.ok(bundled.fromBundle, 'the fresh bundle ran');

  // A usage error prints and exits the same way from the bundle and from the sources.
  const usage = hostadm(['call', 'systemmanager', 'killproc', 'pid:=notanumber']);
  assert.equal(usage.code, 2);
  assert.ok(usage.fromBundle);

  const before = statSync(path);
  writeFileSync(path, readFileSync(path, 'utf8').replace(ORIGINAL, EDITED));
  utimesSync(path, mtime, mtime);
  assert.deepEqual([statSync(path).size, statSync(path).mtimeMs], [before.size, before.mtimeMs]);

  const edited = hostadm(['call', 'systemmanager', '--help']);
  assert.equal(edited.code, 0, edited.stderr);
  assert.match(edited.stdout, new RegExp(`admin/systemmanager: ${EDITED}`), 'the edit shows, not the stale bundle');
  assert.ok(!edited.fromBundle, 'the stale bundle did not run');
  const usageFromSources = hostadm(['call', 'systemmanager', 'killproc', 'pid:=notanumber']);
  assert.ok(!usageFromSources.fromBundle);
  assert.deepEqual([usageFromSources.code, usageFromSources.stdout, usageFromSources.stderr], [usage.code, usage.stdout, usage.stderr]);

  assert.match(buildBundle(), /built/);
  const rebuilt = hostadm(['call', 'systemmanager', '--help']);
  assert.match(rebuilt.stdout, new RegExp(`admin/systemmanager: ${EDITED}`));
  assert.ok(rebuilt.fromBundle, 'the rebuilt bundle ran');
});

test('a removed input or an unreadable manifest runs the sources', () => {
  buildBundle();
  const manifest = join(copy, 'client/cli/.call-bundle/manifest.json');
  const text = readFileSync(manifest, 'utf8');
  try {
    writeFileSync(manifest, '{"bundle": "call-0123456789abcdef.cjs", "inputs": [["nowhere.ts", 1, 2, 3]]}');
    const missing = hostadm(['call', 'systemmanager', '--help']);
    assert.equal(missing.code, 0, missing.stderr);
    assert.ok(!missing.fromBundle);
    writeFileSync(manifest, 'not json');
    const corrupt = hostadm(['call', 'systemmanager', '--help']);
    assert.equal(corrupt.code, 0, corrupt.stderr);
    assert.ok(!corrupt.fromBundle);
  } finally {
    writeFileSync(manifest, text);
  }
});
