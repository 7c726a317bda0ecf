/**
 * The console's files as the Node bridge and the agent serve them: the compressed forms the build
 * wrote beside each file are served as its encodings (never under their own names), and a file
 * edited after the build is compressed afresh rather than served with stale compressed bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { compressAsset, consoleAssets } from '../../console/server/assets.ts';

function builtDist(t: { after: (fn: () => void) => void }): { dir: string; script: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-assets-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), `<!doctype html><title>hostadm</title>${'<p>console</p>'.repeat(60)}`);
  const script = join(dir, 'assets', 'app.js');
  writeFileSync(script, `export const app = ${JSON.stringify('x'.repeat(4000))};\n`);
  for (const file of [join(dir, 'index.html'), script]) {
    const { br, gzip } = compressAsset(Buffer.from(`${file} as built`));
    writeFileSync(`${file}.br`, br);
    writeFileSync(`${file}.gz`, gzip);
  }
  return { dir, script };
}

const get = (handler: ReturnType<typeof consoleAssets>, path: string, encoding = '') =>
  handler(new Request(`http://console${path}`, { headers: { 'accept-encoding': encoding } }));

test("the build's compressed forms are served as the file's encodings, and not under their own names", async (t) => {
  const { dir, script } = builtDist(t);
  const handler = consoleAssets(dir);
  const br = get(handler, '/assets/app.js', 'br, gzip')!;
  assert.equal(br.headers.get('content-encoding'), 'br');
  assert.equal(brotliDecompressSync(Buffer.from(await br.arrayBuffer())).toString(), `${script} as built`);
  const gzip = get(handler, '/assets/app.js', 'gzip')!;
  assert.equal(gzip.headers.get('content-encoding'), 'gzip');
  assert.equal(gunzipSync(Buffer.from(await gzip.arrayBuffer())).toString(), `${script} as built`);
  assert.equal(get(handler, '/assets/app.js.br', 'br'), undefined);
  assert.equal(get(handler, '/index.html.gz'), undefined);
});

test('a file newer than its compressed forms is compressed from its own bytes', async (t) => {
  const { dir, script } = builtDist(t);
  const later = new Date(Date.now() + 60_000);
  utimesSync(script, later, later);
  const handler = consoleAssets(dir);
  const br = get(handler, '/assets/app.js', 'br')!;
  assert.equal(br.headers.get('content-encoding'), 'br');
  const served = brotliDecompressSync(Buffer.from(await br.arrayBuffer())).toString();
  assert.match(served, /^export const app = "x{4000}";/);
  const identity = get(handler, '/assets/app.js')!;
  assert.equal(identity.headers.get('content-encoding'), null);
  assert.equal(await identity.text(), served);
});
