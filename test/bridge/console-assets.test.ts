/**
 * The web console as the bridge serves it (both runtimes: the Node bridge from memory, the Workers
 * bridge as static assets): the page at /, its hashed files cached for good, the page revalidated,
 * a CSP that allows no inline script, compression, and the relay's routes untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_SECURITY_POLICY } from '@hostadm/console/server/headers.ts';
import { ensureConsoleBuilt } from '../../scripts/build-console.ts';
import { BRIDGE_RUNTIME, startTestBridge } from './helpers.ts';

ensureConsoleBuilt({ quiet: true });

test(`the ${BRIDGE_RUNTIME} bridge serves the console at / with its cache rules, CSP and compression`, async (t) => {
  const bridge = await startTestBridge(t);
  // Workers test hubs live under /_hub/<name>/; static assets are served at the Worker's root.
  const origin = new URL(bridge.httpUrl).origin;
  const page = await fetch(`${origin}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
  assert.match(page.headers.get('cache-control') ?? '', /no-cache/);
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  const html = await page.text();
  assert.match(html, /<title>hostadm console<\/title>/);
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script in the page');
  assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe-inline|unsafe-eval/);

  const script = /<script type="module"[^>]*src="\.?\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
  assert.ok(script, 'the page loads one module script from assets/');
  const asset = await fetch(`${origin}/${script}`, { headers: { 'accept-encoding': 'br, gzip' } });
  assert.equal(asset.status, 200);
  assert.match(asset.headers.get('content-type') ?? '', /javascript/);
  assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
  assert.match(asset.headers.get('cache-control') ?? '', /max-age=31536000/);
  const body = await asset.text();
  assert.ok(body.length > 10_000, 'the real bundle, not a placeholder');
  if (BRIDGE_RUNTIME === 'node') {
    // Cloudflare compresses at its edge, not in local workerd; the Node bridge compresses itself.
    assert.equal(asset.headers.get('content-encoding'), 'br');
    const gz = await fetch(`${origin}/${script}`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(gz.headers.get('content-encoding'), 'gzip');
    assert.equal(await gz.text(), body);
    const again = await fetch(`${origin}/${script}`, { headers: { 'if-none-match': asset.headers.get('etag') ?? '' } });
    assert.equal(again.status, 304);
    await again.body?.cancel();
  }
  assert.equal((await fetch(`${origin}/assets/no-such-file.js`)).status, 404);
  // The build's compressed forms beside each file are encodings of it, never files of their own
  // (the Node bridge maps them; the Workers upload leaves them out through dist/.assetsignore).
  for (const suffix of ['.br', '.gz']) {
    const form = await fetch(`${origin}/${script}${suffix}`);
    assert.equal(form.status, 404, `${script}${suffix} is not served`);
    await form.body?.cancel();
  }

  // The bridge's own routes are untouched.
  const relay = await fetch(bridge.url.replace(/^ws/, 'http'));
  assert.equal(relay.status, 426);
  await relay.body?.cancel();
});
