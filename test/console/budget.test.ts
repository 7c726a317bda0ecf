/**
 * The console's size budget: the JavaScript a browser must fetch before the first screen (the entry
 * module and the modules it preloads, as index.html names them) stays ≤ 150 KB gzipped, with the SDK
 * and the channel crypto inside it. Contract modules load on demand and are not counted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CONSOLE_DIST, ensureConsoleBuilt } from '../../scripts/build-console.ts';

const BUDGET = 150 * 1024;

test('initial JavaScript ≤ 150 KB gzipped, SDK and channel crypto included', () => {
  ensureConsoleBuilt({ quiet: true });
  const html = readFileSync(join(CONSOLE_DIST, 'index.html'), 'utf8');
  const initial = [...html.matchAll(/<(?:script type="module"[^>]*src|link rel="modulepreload"[^>]*href)="\.?\/([^"]+\.js)"/g)].map((m) => m[1]!);
  assert.ok(initial.length >= 1, 'index.html loads an entry module');
  const sources = initial.map((file) => readFileSync(join(CONSOLE_DIST, file)));
  const gzipped = sources.reduce((sum, s) => sum + gzipSync(s, { level: 9 }).byteLength, 0);
  const text = sources.map((s) => s.toString('utf8')).join('\n');
  // The SDK's bridge transport and the hsc1 channel are in the first load, not deferred.
  assert.match(text, /hsc1/, 'the channel crypto is part of the initial JavaScript');
  assert.match(text, /bridge-signin/, "the SDK's bridge sign-in is part of the initial JavaScript");
  console.log(`initial JavaScript: ${initial.join(', ')}: ${(gzipped / 1024).toFixed(1)} KB gzipped (budget ${BUDGET / 1024} KB)`);
  assert.ok(gzipped <= BUDGET, `initial JavaScript is ${gzipped} bytes gzipped, over the ${BUDGET}-byte budget`);
});
