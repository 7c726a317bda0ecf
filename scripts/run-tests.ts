/**
 * `npm test`: type-check every workspace, run every test file with node's test runner, and end with
 * the plain `N passed, N failed` line CI reads.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const node = process.execPath;
const root = new URL('..', import.meta.url).pathname;

const typecheck = spawnSync(node, [join(root, 'scripts/typecheck.ts')], { stdio: 'inherit', cwd: root });
if (typecheck.status !== 0) {
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const patterns = process.argv.slice(2).length > 0
  ? process.argv.slice(2)
  : ['shared/**/*.test.ts', 'agent/**/*.test.ts', 'bridge/**/*.test.ts', 'client/**/*.test.ts', 'test/**/*.test.ts'];
const dir = mkdtempSync(join(tmpdir(), 'hostadm-tap-'));
const tapFile = join(dir, 'report.tap');
const run = spawnSync(
  node,
  [
    '--disable-warning=ExperimentalWarning',
    '--test',
    '--test-concurrency=3',
    '--test-timeout=120000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tapFile}`,
    ...patterns,
  ],
  { stdio: 'inherit', cwd: root, env: { ...process.env, NODE_ENV: 'test' } },
);
const tap = readFileSync(tapFile, 'utf8');
rmSync(dir, { recursive: true, force: true });
const count = (label: string) => Number(new RegExp(`^# ${label} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0);
const passed = count('pass');
const failed = count('fail') + count('cancelled');
const skipped = count('skipped') + count('todo');
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(run.status === 0 && failed === 0 && passed > 0 ? 0 : 1);
