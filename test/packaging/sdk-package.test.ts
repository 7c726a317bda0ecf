/**
 * The SDK as its own package (issue 14 item 6): `@hostadm/sdk` from `npm run package`, installed with
 * `@hostadm/shared` alone into an empty directory, brings no native code (nothing compiled, no install
 * script, no .node file), is imported by package name from a plain Node script that signs in to an agent,
 * and bundles for the browser (esbuild, platform browser) with no Node module left in the bundle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, globSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFor, SIM_PASSWORD } from '../helpers/agent.ts';

const root = new URL('../..', import.meta.url).pathname;
const UNREACHABLE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network request|request to .* failed/i;

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out }));
  });
}

test('@hostadm/sdk installs alone with no native code, runs in Node by its package name and bundles for the browser', { timeout: 180_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'hostadm-sdk-package-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const out = join(work, 'out');
  const build = await run(process.execPath, [join(root, 'scripts/build.ts'), '--pack', '--out', out], root);
  assert.equal(build.code, 0, build.out);
  const tarballs = ['hostadm-sdk-0.1.0.tgz', 'hostadm-shared-0.1.0.tgz'].map((f) => join(out, f));

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'sdk-only', private: true, type: 'module' }));
  const install = await run('npm', ['install', '--prefer-offline', '--loglevel=error', '--omit=optional', ...tarballs], app);
  if (install.code !== 0 && UNREACHABLE.test(install.out)) {
    t.skip(`the npm registry cannot be reached: ${install.out.trim().split('\n')[0]}`);
    return;
  }
  assert.equal(install.code, 0, install.out);

  // Nothing native: no compiled addon, no build file, no install script in anything installed.
  const modules = join(app, 'node_modules');
  const native = globSync('**/{*.node,binding.gyp}', { cwd: modules });
  assert.deepEqual(native, [], 'no native addon or node-gyp build');
  for (const manifest of globSync('**/package.json', { cwd: modules })) {
    const scripts = (JSON.parse(readFileSync(join(modules, manifest), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    assert.ok(!scripts.install && !scripts.preinstall && !scripts.postinstall, `${manifest} runs no install script`);
  }
  assert.ok(!existsSync(join(modules, '@hostadm/client')) && !existsSync(join(modules, '@hostadm/agent')), 'neither the CLI nor the agent came along');

  // In Node, by package name, against a real agent.
  const agent = await agentFor(t);
  writeFileSync(
    join(app, 'check.js'),
    `import { connect } from '@hostadm/sdk/node';
const client = await connect({ url: process.argv[2], auth: { username: 'admin', password: process.argv[3] } });
console.log(Object.keys(await client.admin.users.usershow()).sort().join(','));
await client.close();
`,
  );
  const node = await run(process.execPath, ['check.js', agent.url, SIM_PASSWORD], app);
  assert.equal(node.code, 0, node.out);
  assert.match(node.out, /admin/);

  // For a browser: one bundle, no Node module in it.
  writeFileSync(join(app, 'page.js'), "import { connect } from '@hostadm/sdk/browser';\nglobalThis.hostadmConnect = connect;\n");
  const esbuild = join(root, 'node_modules/esbuild/bin/esbuild');
  const bundle = await run(esbuild, ['page.js', '--bundle', '--platform=browser', '--format=esm', '--outfile=page.bundle.js', '--log-level=warning'], app);
  assert.equal(bundle.code, 0, bundle.out);
  const text = readFileSync(join(app, 'page.bundle.js'), 'utf8');
  assert.doesNotMatch(text, /from\s*["']node:|require\(["'](node:)?(fs|net|child_process|crypto)["']\)/, 'no Node module is left for the browser');
  assert.match(text, /hostadmConnect/);
});
