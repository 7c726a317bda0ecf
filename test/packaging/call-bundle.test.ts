/**
 * `hostadm call` as the npm package runs it: from one CommonJS bundle (cli/src/call.cjs) with a V8
 * code cache of its own (client/cli/src/lib/call-bundle.cts). The package is built as a user installs
 * it (test/bench/installed-cli.ts); each call is compared with the same call from the TypeScript
 * sources, and the cache is checked where a user would notice it: written once, private, replaced
 * when it cannot be used, never used for another bundle, absent when the compile cache is off. zod is
 * the bundle's companion beside it (`cli/src/zod-<hash>.cjs`), loaded with a cache of its own
 * (`hostadm-zod-*.v8`) by a call that checks arguments, and by no other.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, SIM_PASSWORD, type TestAgent } from '../helpers/agent.ts';
import { installPackagedCli, type InstalledCli } from '../bench/installed-cli.ts';

const root = new URL('../..', import.meta.url).pathname;
const repositoryCli = join(root, 'client/bin/hostadm');

let installed: InstalledCli;
let agent: TestAgent;
let top: string;

before(async () => {
  installed = installPackagedCli();
  agent = await startTestAgent();
  top = mkdtempSync(join(tmpdir(), 'hostadm-call-bundle-'));
});

after(async () => {
  await agent.dispose();
  installed.dispose();
  rmSync(top, { recursive: true, force: true });
});

async function hostadm(bin: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}, home = join(top, 'home')) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: installed.path,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
    HOSTADM_URL: agent.url,
    HOSTADM_USER: 'admin',
    HOSTADM_PASSWORD: SIM_PASSWORD,
    ...extraEnv,
  };
  delete env.NODE_COMPILE_CACHE;
  if (!('NODE_DISABLE_COMPILE_CACHE' in extraEnv)) delete env.NODE_DISABLE_COMPILE_CACHE;
  // Asynchronous: the agent answers from this process.
  const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const cacheDir = (home: string) => join(home, 'cache/hostadm/node-compile-cache');
const cachesOf = (home: string, prefix: string) => (existsSync(cacheDir(home)) ? readdirSync(cacheDir(home)).filter((n) => n.startsWith(prefix)) : []);
const callCaches = (home: string) => cachesOf(home, 'hostadm-call-');
/** The zod companion's code caches: present once a call has loaded it. */
const zodCaches = (home: string) => cachesOf(home, 'hostadm-zod-');

test('a call from the package prints, fails and exits exactly as from the sources', async () => {
  for (const args of [
    ['call', 'rpc/identify'],
    ['call', 'users', 'usershow'],
    ['call', 'systemmanager', 'killproc', 'pid:=notanumber'],
    ['call', 'systemmanager', 'killproc'], // refused: pid and signal are required
    ['call', 'fs', 'dirlist', 'dir=/'],
    ['call', 'nosuch', 'thing'],
    ['call', 'users', '--help'],
  ]) {
    const fromPackage = await hostadm(installed.hostadm, args);
    const fromSources = await hostadm(repositoryCli, args);
    if (args[1] === 'rpc/identify' || args[2] === 'usershow' || args[2] === 'dirlist') assert.equal(fromPackage.code, 0, fromPackage.stderr);
    assert.equal(fromPackage.code, fromSources.code, `${args.join(' ')}: ${fromPackage.stderr}`);
    assert.equal(fromPackage.stdout, fromSources.stdout, args.join(' '));
    assert.equal(fromPackage.stderr, fromSources.stderr, args.join(' '));
  }
});

test('the code cache is written once, private, and used by the next call', async () => {
  const home = join(top, 'once');
  const first = await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home);
  assert.equal(first.code, 0, first.stderr);
  const [cache, ...others] = callCaches(home);
  assert.ok(cache, 'a code cache for the call bundle');
  assert.deepEqual(others, []);
  // rpc/identify is an operation, outside the call index: its (empty) arguments are checked, so `checked`.
  assert.match(cache, /^hostadm-call-[0-9a-f]{32}-v\d+\.\d+\.\d+-\w+-checked\.v8$/);
  const written = statSync(join(cacheDir(home), cache));
  assert.equal(written.mode & 0o777, 0o600);
  const again = await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(callCaches(home), [cache]);
  assert.equal(statSync(join(cacheDir(home), cache)).mtimeMs, written.mtimeMs, 'an accepted cache is not written again');
});

test('a cache V8 cannot use is replaced, and the call works regardless', async () => {
  const home = join(top, 'garbage');
  assert.equal((await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home)).code, 0);
  const [cache] = callCaches(home);
  writeFileSync(join(cacheDir(home), cache!), 'not a code cache');
  const r = await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home);
  assert.equal(r.code, 0, r.stderr);
  assert.notEqual(readFileSync(join(cacheDir(home), cache!), 'utf8'), 'not a code cache');
});

test('a run that never connects leaves a cache that the first connecting run replaces', async () => {
  const home = join(top, 'levels');
  assert.equal((await hostadm(installed.hostadm, ['call', 'users', '--help'], {}, home)).code, 0);
  assert.deepEqual(
    callCaches(home).map((n) => n.replace(/^.*-/, '')),
    ['local.v8'],
  );
  assert.equal((await hostadm(installed.hostadm, ['call', 'systemmanager', 'memorystats'], {}, home)).code, 0);
  assert.deepEqual(
    callCaches(home).map((n) => n.replace(/^.*-/, '')),
    ['connected.v8'],
  );
});

test('no code cache when the compile cache is turned off', async () => {
  const home = join(top, 'off');
  const r = await hostadm(installed.hostadm, ['call', 'rpc/identify'], { NODE_DISABLE_COMPILE_CACHE: '1' }, home);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(callCaches(home), []);
});

test('a changed bundle never meets the cache of another one', async () => {
  const home = join(top, 'changed');
  assert.equal((await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home)).code, 0);
  const [old] = callCaches(home);
  const bundle = join(installed.hostadm, '../../cli/src/call.cjs');
  const source = readFileSync(bundle, 'latin1');
  const changed = source.replace(/^\/\* hostadm-call-bundle [0-9a-f]+ \*\//, '/* hostadm-call-bundle 0123456789abcdef0123456789abcdef */');
  assert.notEqual(changed, source);
  writeFileSync(bundle, changed, 'latin1');
  try {
    const r = await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home);
    assert.equal(r.code, 0, r.stderr);
    const now = callCaches(home);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], old);
    assert.match(now[0]!, /^hostadm-call-0123456789abcdef0123456789abcdef-/);
  } finally {
    writeFileSync(bundle, source, 'latin1');
  }
});

/** Where nothing listens: a call that connects fails with exit 6, so exit 2 shows nothing was tried. */
const NOWHERE = { HOSTADM_URL: 'ws://127.0.0.1:1' };

test('zod is a companion file that only a call checking arguments loads, with a code cache of its own', async () => {
  const dir = join(installed.hostadm, '../../cli/src');
  const companions = readdirSync(dir).filter((n) => /^zod-[0-9a-f]{32}\.cjs$/.test(n));
  assert.equal(companions.length, 1, `one zod companion beside call.cjs: ${companions.join(', ')}`);
  assert.ok(readFileSync(join(dir, 'call.cjs'), 'latin1').includes(`require("./${companions[0]}")`), 'the bundle requires it');

  const home = join(top, 'zod');
  const bare = await hostadm(installed.hostadm, ['call', 'systemmanager', 'memorystats'], {}, home);
  assert.equal(bare.code, 0, bare.stderr);
  assert.deepEqual(zodCaches(home), [], 'a call without arguments does not load zod');
  assert.equal(callCaches(home).length, 1);

  const refused = await hostadm(installed.hostadm, ['call', 'systemmanager', 'killproc'], NOWHERE, home);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /invalid arguments for admin\/systemmanager killproc:\n {2}pid: is required/);
  assert.deepEqual(
    zodCaches(home).map((n) => n.replace(/^.*-/, '')),
    ['local.v8'],
    'a refused call loads zod, and never connects',
  );

  const listed = await hostadm(installed.hostadm, ['call', 'fs', 'dirlist', 'dir=/'], {}, home);
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(Object.keys((JSON.parse(listed.stdout) as { dirlist: object }).dirlist).length > 0, listed.stdout);
  const [zodCache, ...more] = zodCaches(home);
  assert.deepEqual(more, []);
  assert.match(zodCache ?? '', new RegExp(`^hostadm-zod-${companions[0]?.slice(4, 36)}-v\\d+\\.\\d+\\.\\d+-\\w+-connected\\.v8$`));
  assert.equal(statSync(join(cacheDir(home), zodCache!)).mode & 0o777, 0o600);
  const written = statSync(join(cacheDir(home), zodCache!)).mtimeMs;
  // The bundle's cache, written by the call without arguments, is replaced once to hold the checks too.
  const [bundleCache, ...moreBundleCaches] = callCaches(home);
  assert.deepEqual(moreBundleCaches, []);
  assert.match(bundleCache ?? '', /-checked\.v8$/, 'a call with arguments raises the bundle cache to `checked`');
  const bundleWritten = statSync(join(cacheDir(home), bundleCache!)).mtimeMs;
  assert.equal((await hostadm(installed.hostadm, ['call', 'fs', 'dirlist', 'dir=/'], {}, home)).code, 0);
  assert.equal((await hostadm(installed.hostadm, ['call', 'systemmanager', 'memorystats'], {}, home)).code, 0);
  assert.equal(statSync(join(cacheDir(home), zodCache!)).mtimeMs, written, 'an accepted cache is not written again');
  assert.deepEqual(callCaches(home), [bundleCache], 'a call without arguments keeps the `checked` cache');
  assert.equal(statSync(join(cacheDir(home), bundleCache!)).mtimeMs, bundleWritten, 'nor is the bundle cache');
});

test("neither file's new cache removes the other's", async () => {
  const call = ['call', 'fs', 'dirlist', 'dir=/'];
  const dir = join(installed.hostadm, '../../cli/src');
  const companion = readdirSync(dir).find((n) => /^zod-[0-9a-f]{32}\.cjs$/.test(n)) ?? '';
  // Another bundle (its header's hash changed) with the same companion; then the other way round.
  for (const [file, kind, ownCaches, otherCaches] of [
    ['call.cjs', 'hostadm-call-bundle', callCaches, zodCaches],
    [companion, 'hostadm-call-zod', zodCaches, callCaches],
  ] as const) {
    const home = join(top, `two-caches-${kind}`);
    assert.equal((await hostadm(installed.hostadm, call, {}, home)).code, 0);
    const [other] = otherCaches(home);
    assert.ok(other && ownCaches(home).length === 1, file);
    const otherWritten = statSync(join(cacheDir(home), other)).mtimeMs;
    const source = readFileSync(join(dir, file), 'latin1');
    const changed = source.replace(new RegExp(`^/\\* ${kind} [0-9a-f]+ \\*/`), `/* ${kind} 0123456789abcdef0123456789abcdef */`);
    assert.notEqual(changed, source);
    writeFileSync(join(dir, file), changed, 'latin1');
    try {
      const r = await hostadm(installed.hostadm, call, {}, home);
      assert.equal(r.code, 0, r.stderr);
      assert.match(ownCaches(home).join(' '), /^hostadm-(call|zod)-0123456789abcdef0123456789abcdef-\S+$/, file);
      assert.deepEqual(otherCaches(home), [other], `${file}: the other file's cache is kept`);
      assert.equal(statSync(join(cacheDir(home), other)).mtimeMs, otherWritten, `${file}: and not written again`);
    } finally {
      writeFileSync(join(dir, file), source, 'latin1');
    }
  }
});
