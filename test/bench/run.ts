/**
 * `npm run bench`: runs every `test/bench/*.bench.ts` (or the ones named on the command line) one
 * after another, each in its own process so they do not disturb each other's measurements. Each
 * bench prints its own figures; they are measurements, not pass/fail tests.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRatio, type TargetRow } from './ab-pairs.ts';

const dir = new URL('.', import.meta.url).pathname;
const wanted = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
const scratch = mkdtempSync(join(tmpdir(), 'hostadm-bench-targets-'));
const targetsFile = join(scratch, 'targets.jsonl');
let failed = 0;
for (const file of benches) {
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(dir, file)], {
    stdio: 'inherit',
    env: { ...process.env, HOSTADM_BENCH_TARGETS: targetsFile },
  });
  if (result.status !== 0) failed++;
}
if (benches.length === 0) console.log('no benchmarks matched');
// Every target the benches reported, in one table: the median ratio of alternating A/B pairs, its spread, the verdict.
const rows: TargetRow[] = existsSync(targetsFile)
  ? readFileSync(targetsFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TargetRow)
  : [];
rmSync(scratch, { recursive: true, force: true });
if (rows.length > 0) {
  console.log('\n== targets');
  for (const r of rows)
    console.log(`${r.verdict.padEnd(12)} ${r.target}: ${formatRatio(r.ratio)} (target ${r.direction === 'at-most' ? '≤' : '≥'} ${r.limit}×)`);
}
process.exit(failed === 0 ? 0 : 1);
