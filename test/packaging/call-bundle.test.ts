/**
 * `hostadm call` as the npm package runs it: from one CommonJS bundle (cli/src/call.cjs) with a V8
 * code cache of its own (client/cli/src/lib/call-bundle.cts). The package is built as a user installs
 * it (test/bench/installed-cli.ts); each call is compared with the same call from the TypeScript
 * sources, and the cache is checked where a user would notice it: written once, private, replaced
 * when it cannot be used, never used for another bundle, absent when the compile cache is off.
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
const callCaches = (home: string) => (existsSync(cacheDir(home)) ? readdirSync(cacheDir(home)).filter((n) => n.startsWith('hostadm-call-')) : []);

test('a call from the package prints, fails and exits exactly as from the sources', async () => {
  for (const args of [
    ['call', 'rpc/identify'],
    ['call', 'users', 'usershow'],
    ['call', 'systemmanager', 'killproc', 'pid:=notanumber'],
    ['call', 'nosuch', 'thing'],
    ['call', 'users', '--help'],
  ]) {
    const fromPackage = await hostadm(installed.hostadm, args);
    const fromSources = await hostadm(repositoryCli, args);
    if (args[1] === 'rpc/identify' || args[2] === 'usershow') assert.equal(fromPackage.code, 0, fromPackage.stderr);
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
  assert.match(cache, /^hostadm-call-[0-9a-f]{32}-v\d+\.\d+\.\d+-\w+-connected\.v8$/);
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
  assert.equal((await hostadm(installed.hostadm, ['call', 'rpc/identify'], {}, home)).code, 0);
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
