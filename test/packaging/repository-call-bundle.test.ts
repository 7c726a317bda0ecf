/**
 * `hostadm call` in a checkout runs the call bundle `npm ci` made (scripts/build-call-bundle.ts) only
 * while every file it was made from is unchanged; an edited source is never shadowed by it. Checked on
 * a scratch copy of the repository layout (client/, shared/ and the build scripts, the third-party
 * packages linked), through its own `client/bin/hostadm`, so the test can edit sources freely. Which
 * of the two ran is seen from outside: only the bundle leaves its code cache
 * (`hostadm-call-*.v8`) in the cache directory, and only its zod companion (`zod-<hash>.cjs` beside it)
 * leaves `hostadm-zod-*.v8`, so whether a call loaded zod shows too. A call without arguments is sent from the call index
 * (client/cli/src/lib/call-index.ts) in both layouts: the bundle's, made from the contracts when it is
 * built, must follow an edited contract as the sources do, and must spare the call zod and the contract.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFor, SIM_PASSWORD } from '../helpers/agent.ts';

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

function buildBundle(...flags: string[]): string {
  const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(copy, 'scripts/build-call-bundle.ts'), ...flags], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  return run.stderr.trim();
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  fromBundle: boolean;
  /** The bundle's zod companion was loaded (it leaves a code cache of its own). */
  loadedZod: boolean;
}

/**
 * Runs the copy's `hostadm` with a cache directory of its own (and `env` on top); says whether the
 * call bundle ran. Asynchronous: an agent a test starts answers from this process.
 */
async function hostadm(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const home = join(copy, `home-${++runs}`);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') };
  for (const name of ['NODE_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE', 'HOSTADM_PERSIST', 'HOSTADM_PROFILE', 'HOSTADM_URL']) delete env[name];
  const child = spawn(join(copy, 'client/bin/hostadm'), args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const caches = join(home, 'cache/hostadm/node-compile-cache');
  const names = existsSync(caches) ? readdirSync(caches) : [];
  return { code, stdout, stderr, fromBundle: names.some((n) => n.startsWith('hostadm-call-')), loadedZod: names.some((n) => n.startsWith('hostadm-zod-')) };
}

const CONTRACT = 'shared/src/api/systemmanager.ts';
const ORIGINAL = 'System information, processes, sysctl, halt and reboot';
// The same length: an edit that keeps the size, with its mtime put back below, is still seen.
const EDITED = 'SYSTEM INFORMATION, processes, sysctl, halt and reboot';

test('a fresh bundle runs the call; an edited source runs from the sources until the bundle is rebuilt', async () => {
  const path = join(copy, CONTRACT);
  // A whole second, which utimes sets exactly: the edit below puts it back, as some tools do.
  const mtime = new Date(Math.floor(statSync(path).mtimeMs / 1000) * 1000);
  utimesSync(path, mtime, mtime);
  assert.match(buildBundle(), /built/);
  assert.match(buildBundle(), /up to date/);

  const bundled = await hostadm(['call', 'systemmanager', '--help']);
  assert.equal(bundled.code, 0, bundled.stderr);
  assert.match(bundled.stdout, new RegExp(`admin/systemmanager: ${ORIGINAL}`));
  assert.ok(bundled.fromBundle, 'the fresh bundle ran');

  // A usage error prints and exits the same way from the bundle and from the sources.
  const usage = await hostadm(['call', 'systemmanager', 'killproc', 'pid:=notanumber']);
  assert.equal(usage.code, 2);
  assert.ok(usage.fromBundle);

  const before = statSync(path);
  writeFileSync(path, readFileSync(path, 'utf8').replace(ORIGINAL, EDITED));
  utimesSync(path, mtime, mtime);
  assert.deepEqual([statSync(path).size, statSync(path).mtimeMs], [before.size, before.mtimeMs]);

  const edited = await hostadm(['call', 'systemmanager', '--help']);
  assert.equal(edited.code, 0, edited.stderr);
  assert.match(edited.stdout, new RegExp(`admin/systemmanager: ${EDITED}`), 'the edit shows, not the stale bundle');
  assert.ok(!edited.fromBundle, 'the stale bundle did not run');
  const usageFromSources = await hostadm(['call', 'systemmanager', 'killproc', 'pid:=notanumber']);
  assert.ok(!usageFromSources.fromBundle);
  assert.deepEqual([usageFromSources.code, usageFromSources.stdout, usageFromSources.stderr], [usage.code, usage.stdout, usage.stderr]);

  assert.match(buildBundle(), /built/);
  const rebuilt = await hostadm(['call', 'systemmanager', '--help']);
  assert.match(rebuilt.stdout, new RegExp(`admin/systemmanager: ${EDITED}`));
  assert.ok(rebuilt.fromBundle, 'the rebuilt bundle ran');
});

test('a removed input or an unreadable manifest runs the sources', async () => {
  buildBundle();
  const manifest = join(copy, 'client/cli/.call-bundle/manifest.json');
  const text = readFileSync(manifest, 'utf8');
  try {
    writeFileSync(manifest, '{"bundle": "call-0123456789abcdef.cjs", "inputs": [["nowhere.ts", 1, 2, 3]]}');
    const missing = await hostadm(['call', 'systemmanager', '--help']);
    assert.equal(missing.code, 0, missing.stderr);
    assert.ok(!missing.fromBundle);
    writeFileSync(manifest, 'not json');
    const corrupt = await hostadm(['call', 'systemmanager', '--help']);
    assert.equal(corrupt.code, 0, corrupt.stderr);
    assert.ok(!corrupt.fromBundle);
  } finally {
    writeFileSync(manifest, text);
  }
});

/** Where nothing listens: a call that connects fails with exit 6, so exit 2 shows nothing was tried. */
const NOWHERE = { HOSTADM_URL: 'ws://127.0.0.1:1', HOSTADM_USER: 'admin', HOSTADM_PASSWORD: SIM_PASSWORD };

/** A reply's keys two levels down: the simulated host's figures (memory, uptime) change between calls. */
function shape(stdout: string): unknown {
  const reply = JSON.parse(stdout) as Record<string, unknown>;
  return Object.entries(reply).map(([key, value]) => [key, value !== null && typeof value === 'object' ? Object.keys(value).sort() : typeof value]);
}

test('a call without arguments is sent alike from the bundle and from the sources', async (t) => {
  const agent = await agentFor(t);
  const env = { HOSTADM_URL: agent.url, HOSTADM_USER: 'admin', HOSTADM_PASSWORD: SIM_PASSWORD };
  const calls = [
    ['call', 'systemmanager', 'memorystats'],
    ['call', 'systemmanager', 'systeminfo'], // an alias: sent as `systemmanager`
    ['call', 'rpc/settings', 'list_ssl_certificates'],
  ];
  const refused = ['call', 'systemmanager', 'killproc']; // needs pid and signal
  const withArguments = ['call', 'fs', 'dirlist', 'dir=/'];
  buildBundle();
  const bundled: Run[] = [];
  for (const args of calls) bundled.push(await hostadm(args, env));
  const bundledRefusal = await hostadm(refused, NOWHERE);
  const bundledChecked = await hostadm(withArguments, env);
  for (const [i, args] of calls.entries()) assert.ok(!bundled[i]!.loadedZod, `${args.join(' ')}: no zod loaded`);
  // Arguments to check, or a refusal to explain: the companion is loaded, and the call works.
  assert.ok(bundledRefusal.loadedZod && bundledChecked.loadedZod);
  assert.equal(bundledChecked.code, 0, bundledChecked.stderr);

  // Any write to an input moves its ctime: the bundle is stale and the sources run.
  const input = join(copy, 'client/cli/src/lib/call-index.ts');
  const { atime, mtime } = statSync(input);
  utimesSync(input, atime, mtime);
  for (const [i, args] of calls.entries()) {
    const fromSources = await hostadm(args, env);
    assert.ok(bundled[i]!.fromBundle && !fromSources.fromBundle, args.join(' '));
    assert.equal(bundled[i]!.code, 0, bundled[i]!.stderr);
    assert.equal(fromSources.code, 0, fromSources.stderr);
    assert.deepEqual(shape(bundled[i]!.stdout), shape(fromSources.stdout), args.join(' '));
  }
  const sourcesRefusal = await hostadm(refused, NOWHERE);
  assert.ok(bundledRefusal.fromBundle && !sourcesRefusal.fromBundle);
  assert.equal(bundledRefusal.code, 2, bundledRefusal.stderr);
  assert.match(bundledRefusal.stderr, /invalid arguments for admin\/systemmanager killproc:\n {2}pid: is required/);
  assert.deepEqual([sourcesRefusal.code, sourcesRefusal.stdout, sourcesRefusal.stderr], [bundledRefusal.code, bundledRefusal.stdout, bundledRefusal.stderr]);
  const sourcesChecked = await hostadm(withArguments, env);
  assert.ok(!sourcesChecked.fromBundle);
  assert.deepEqual([sourcesChecked.code, sourcesChecked.stdout, sourcesChecked.stderr], [bundledChecked.code, bundledChecked.stdout, bundledChecked.stderr]);
});

test('a removed or edited zod companion runs the sources until the bundle is rebuilt; old companions are removed', async () => {
  buildBundle();
  const dir = join(copy, 'client/cli/.call-bundle');
  const { companion } = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { companion: [string, number, number, number] };
  const path = join(copy, companion[0]);
  assert.match(companion[0], /^client\/cli\/\.call-bundle\/zod-[0-9a-f]{32}\.cjs$/);
  const original = readFileSync(path, 'latin1');
  const call = ['call', 'systemmanager', 'killproc'];
  const bundled = await hostadm(call, NOWHERE);
  assert.ok(bundled.fromBundle && bundled.loadedZod);

  rmSync(path);
  const removed = await hostadm(call, NOWHERE);
  assert.ok(!removed.fromBundle, 'a missing companion: the sources ran');
  assert.deepEqual([removed.code, removed.stdout, removed.stderr], [bundled.code, bundled.stdout, bundled.stderr]);
  assert.match(buildBundle(), /built/);
  assert.equal(readFileSync(path, 'latin1'), original);
  assert.ok((await hostadm(call, NOWHERE)).fromBundle);

  // The same size, its mtime put back: still seen (ctime), as for a source.
  const { mtime } = statSync(path);
  const edit = original.replace('Invalid input', 'INVALID INPUT');
  assert.notEqual(edit, original);
  writeFileSync(path, edit, 'latin1');
  utimesSync(path, mtime, mtime);
  const edited = await hostadm(call, NOWHERE);
  assert.ok(!edited.fromBundle, 'an edited companion: the sources ran');
  assert.deepEqual([edited.code, edited.stderr], [bundled.code, bundled.stderr]);
  assert.match(buildBundle(), /built/);
  assert.equal(readFileSync(path, 'latin1'), original, 'the rebuild writes the companion again');
  assert.ok((await hostadm(call, NOWHERE)).fromBundle);

  for (const old of ['zod-0123456789abcdef0123456789abcdef.cjs', 'call-0123456789abcdef0123456789abcdef.cjs']) writeFileSync(join(dir, old), '');
  assert.match(buildBundle('--force'), /built/);
  const { bundle } = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { bundle: string };
  assert.deepEqual(readdirSync(dir).sort(), [bundle, companion[0].replace(/^.*\//, ''), 'manifest.json'].sort());
});

test("the bundle's call index is made from the contracts: an action edited to need an argument is refused by both", async () => {
  const path = join(copy, CONTRACT);
  const original = readFileSync(path, 'utf8');
  const takesNone = "description: 'Report memory statistics',\n      args: noArgs,";
  assert.ok(original.includes(takesNone), 'memorystats takes no arguments');
  const call = ['call', 'systemmanager', 'memorystats'];
  try {
    writeFileSync(path, original.replace(takesNone, "description: 'Report memory statistics',\n      args: z.strictObject({ detail: z.string() }),"));
    const fromSources = await hostadm(call, NOWHERE);
    assert.ok(!fromSources.fromBundle);
    assert.equal(fromSources.code, 2, fromSources.stderr);
    assert.match(fromSources.stderr, /invalid arguments for admin\/systemmanager memorystats:\n {2}detail: is required/);
    assert.match(buildBundle(), /built/);
    const bundled = await hostadm(call, NOWHERE);
    assert.ok(bundled.fromBundle);
    assert.deepEqual([bundled.code, bundled.stdout, bundled.stderr], [fromSources.code, fromSources.stdout, fromSources.stderr]);
  } finally {
    writeFileSync(path, original);
  }
});

/**
 * Modules whose loading a call without arguments is spared: zod (its companion file, logged as
 * ZOD_COMPANION below), the contracts, the argument checks.
 */
const ZOD_COMPANION = 'zod companion';
const CHECKING = /^zod companion$|^shared\/src\/api\/|^client\/sdk\/src\/validate\.ts$|^shared\/src\/protocol\/(field-errors|plain-issues)\.ts$/;

test('from the bundle, a call without arguments initialises no zod, contract or checks; a call with arguments does', async (t) => {
  const agent = await agentFor(t);
  buildBundle();
  const dir = join(copy, 'client/cli/.call-bundle');
  const { bundle, companion } = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { bundle: string; companion: [string, ...number[]] };
  // Each module of the bundle is initialised by its esbuild wrapper, named by its path: logged here;
  // the companion (zod, one scope, no wrappers) logs once when it runs. Both in a folder of their own.
  const log = join(copy, 'module-inits.log');
  const instrumentedDir = join(copy, 'instrumented');
  mkdirSync(instrumentedDir, { recursive: true });
  const companionName = companion[0].replace(/^.*\//, '');
  const zod = readFileSync(join(copy, companion[0]), 'latin1').replace(
    /^(\/\* hostadm-call-zod [0-9a-f]+ \*\/\n)/,
    `$1process.getBuiltinModule("node:fs").appendFileSync(${JSON.stringify(log)},${JSON.stringify(`${ZOD_COMPANION}\n`)});`,
  );
  assert.ok(zod.includes(ZOD_COMPANION));
  writeFileSync(join(instrumentedDir, companionName), zod, 'latin1');
  let wrapped = 0;
  const instrumented = readFileSync(join(dir, bundle), 'latin1').replace(/(__esm|__commonJS)\(\{("[^"]+")\(([^)]*)\)\{/g, (_, kind, name, params) => {
    wrapped++;
    return `${kind}({${name}(${params}){process.getBuiltinModule("node:fs").appendFileSync(${JSON.stringify(log)},${name}+"\\n");`;
  });
  assert.ok(wrapped > 100, `the bundle's modules are wrapped as this test expects (${wrapped} found)`);
  const file = join(instrumentedDir, 'call.cjs');
  writeFileSync(file, instrumented, 'latin1');

  const home = join(copy, 'home-inits');
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    HOSTADM_URL: agent.url,
    HOSTADM_USER: 'admin',
    HOSTADM_PASSWORD: SIM_PASSWORD,
  };
  const loader = JSON.stringify(join(copy, 'client/cli/src/lib/call-bundle.cts'));
  const inits = async (args: string[]): Promise<string[]> => {
    rmSync(log, { force: true });
    const script = `require(${loader}).runCallBundle(${JSON.stringify(file)}, [process.argv[0], 'hostadm', ...process.argv.slice(1)])`;
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '-e', script, '--', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const code = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(code, 0, `${args.join(' ')}: ${stderr}`);
    return readFileSync(log, 'utf8').trim().split('\n');
  };

  const free = await inits(['call', 'systemmanager', 'memorystats']);
  assert.ok(free.includes('client/sdk/src/client/hostadm-client.ts'), 'the log sees the modules a call loads');
  assert.deepEqual(
    free.filter((m) => CHECKING.test(m)),
    [],
  );
  // The same with arguments: the contract, zod and the checks load (and the log would show them).
  const checked = await inits(['call', 'systemmanager', 'killproc', 'pid:=412', 'signal=TERM']);
  for (const expected of [/^shared\/src\/api\/systemmanager\.ts$/, /^zod companion$/, /^client\/sdk\/src\/validate\.ts$/]) {
    assert.ok(
      checked.some((m) => expected.test(m)),
      `${expected} initialised for a call with arguments`,
    );
  }
});
