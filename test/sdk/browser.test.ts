/**
 * The SDK in Chromium: the browser entry bundled with esbuild, served with a tiny test page, driven
 * by playwright-core against a real agent: connect, sign in (password, then a key through WebCrypto),
 * a typed call, an event and a job's completion. Skipped (with the reason) when Debian's chromium or
 * esbuild is not installed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFor, clientFor, SIM_PASSWORD } from './support.ts';
import { CHROMIUM, launchChromium } from '../helpers/chromium.ts';

const root = new URL('../..', import.meta.url).pathname;
const ESBUILD = join(root, 'node_modules/esbuild/package.json');

const skip = !existsSync(CHROMIUM)
  ? `no Chromium at ${CHROMIUM} (Debian: apt-get install chromium)`
  : !existsSync(ESBUILD)
    ? 'esbuild is not installed (it comes with drizzle-kit)'
    : false;

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>hostadm SDK in the browser</title>
<script type="module">
  import { connect, HostadmRequestError } from './sdk.js';
  const params = new URLSearchParams(location.search);
  const out = { steps: [] };
  try {
    const url = params.get('url');
    const client = await connect({ url, auth: { username: 'admin', password: params.get('password') }, validateReplies: true });
    out.steps.push('connected');
    out.method = client.session.method;
    out.identify = await client.identify();
    out.users = Object.keys(await client.admin.users.usershow());
    const stream = client.events.subscribe(['dispatcher']);
    await stream.ready;
    const job = await client.rpc.dispatcher.run({ fromBrowser: ['echo hello from the browser'] });
    for await (const event of stream) {
      if (event.name === 'dispatcher' && event.args.proc_id === 'fromBrowser' && event.args.state === 'finished') {
        out.event = event.args;
        break;
      }
    }
    out.done = await job.done;
    try {
      await client.admin.systemmanager.killproc({ pid: 'not a pid', signal: 'TERM' });
    } catch (err) {
      out.refused = { isRequestError: err instanceof HostadmRequestError, code: err.code, local: err.local, fields: [...new Set(err.fieldErrors.map((f) => f.field))] };
    }
    await client.close();
    const keyed = await connect({ url, auth: { key: { privatePem: params.get('key') } } });
    out.keyMethod = keyed.session.method;
    out.keyQuery = await keyed.query();
    await keyed.close();
    out.secure = window.isSecureContext;
  } catch (err) {
    out.error = String(err && err.stack || err);
  }
  window.result = out;
</script>`;

test('the browser entry in Chromium: connect, sign in, a typed call, an event, a job, key sign-in', { skip }, async (t) => {
  const agent = await agentFor(t);
  // A key registered from Node; the page signs in with it through WebCrypto.
  const admin = await clientFor(t, agent);
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  await admin.registerKey({ certPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), privatePem, nickname: 'browser' });

  const dir = mkdtempSync(join(tmpdir(), 'hostadm-browser-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(root, 'client/sdk/src/browser.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(dir, 'sdk.js'),
    logLevel: 'silent',
  });
  const bundle = readFileSync(join(dir, 'sdk.js'), 'utf8');
  assert.doesNotMatch(bundle, /from ["']node:|require\(["']ws["']\)/, 'the browser bundle pulls in nothing from Node');

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/sdk.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else if (path === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;

  const browser = await launchChromium(t);
  const page = await browser.newPage();
  const consoleLines: string[] = [];
  page.on('console', (m) => consoleLines.push(m.text()));
  page.on('pageerror', (e) => consoleLines.push(String(e)));
  const query = new URLSearchParams({ url: agent.url, password: SIM_PASSWORD, key: privatePem });
  await page.goto(`http://127.0.0.1:${port}/?${query}`);
  await page.waitForFunction(() => (globalThis as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 30_000 });
  const result = (await page.evaluate(() => (globalThis as unknown as { result: unknown }).result)) as Record<string, unknown>;

  assert.equal(result.error, undefined, `${String(result.error)}\nconsole: ${consoleLines.join('\n')}`);
  assert.equal(result.secure, true);
  assert.equal(result.method, 'password');
  assert.equal((result.identify as { type: string }).type, 'server');
  assert.ok((result.users as string[]).includes('admin'));
  const event = result.event as { success: string; log: string };
  assert.equal(event.success, 'true');
  assert.equal(event.log, 'hello from the browser\n');
  assert.deepEqual(result.done, result.event);
  assert.deepEqual(result.refused, { isRequestError: true, code: 400, local: true, fields: ['pid'] });
  assert.equal(result.keyMethod, 'key');
  assert.equal((result.keyQuery as Record<string, string>)['admin/users'], 'read/write');
});
