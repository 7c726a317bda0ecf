/**
 * `npm run bench`: runs every `test/bench/*.bench.ts` (or the ones named on the command line) one
 * after another, each in its own process so they do not disturb each other's measurements. Each
 * bench prints its own figures; they are measurements, not pass/fail tests.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('.', import.meta.url).pathname;
const wanted = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
let failed = 0;
for (const file of benches) {
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(dir, file)], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
if (benches.length === 0) console.log('no benchmarks matched');
process.exit(failed === 0 ? 0 : 1);
