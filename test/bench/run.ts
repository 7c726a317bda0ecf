/**
 * `npm run bench`: runs every `test/bench/*.bench.ts` (or the ones named on the command line) one
 * after another, each in its own process so they do not disturb each other's measurements. Each
 * bench prints its own figures; they are measurements, not pass/fail tests.
 *
 * `npm run bench -- --record NAME [bench ...]` also writes the whole output, headed by what the
 * figures depend on (commit, time, machine, load average before and after), to docs/bench/NAME.md:
 * figures quoted in docs/ cite such a run by name, so a reader can see where they came from and how
 * noisy the machine was.
 *
 * `npm run bench` builds what `npm ci` builds first (prebench: the console and the checkout's call
 * bundle), so a checkout whose sources changed since its install measures the README's layout, not
 * the fallback to the TypeScript sources.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRatio, type TargetRow } from './ab-pairs.ts';

const dir = new URL('.', import.meta.url).pathname;
const repoRoot = join(dir, '..', '..');
const args = process.argv.slice(2);
const recordAt = args.indexOf('--record');
const recordName = recordAt >= 0 ? args[recordAt + 1] : undefined;
if (recordAt >= 0 && (!recordName || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(recordName))) {
  console.error('--record needs a run name of letters, digits, dots, dashes or underscores (e.g. 2026-11-25-quiet)');
  process.exit(2);
}
const wanted = args.filter((_, i) => recordAt < 0 || (i !== recordAt && i !== recordAt + 1));
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
const scratch = mkdtempSync(join(tmpdir(), 'hostadm-bench-targets-'));
const targetsFile = join(scratch, 'targets.jsonl');
const transcript: string[] = [];

function out(text: string): void {
  process.stdout.write(text);
  if (recordName) transcript.push(text);
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/** Runs one bench, echoing its output (and keeping it for the record). */
function runBench(file: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(dir, file)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOSTADM_BENCH_TARGETS: targetsFile },
    });
    child.stdout.setEncoding('utf8').on('data', out);
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      process.stderr.write(text);
      if (recordName) transcript.push(text);
    });
    child.on('close', (code) => resolve(code));
  });
}

const startedAt = new Date();
const loadBefore = loadAverage();
let failed = 0;
for (const file of benches) {
  out(`\n== ${file}\n`);
  if ((await runBench(file)) !== 0) failed++;
}
if (benches.length === 0) out('no benchmarks matched\n');
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
  out('\n== targets\n');
  for (const r of rows) out(`${r.verdict.padEnd(12)} ${r.target}: ${formatRatio(r.ratio)} (target ${r.direction === 'at-most' ? '≤' : '≥'} ${r.limit}×)\n`);
}

if (recordName) {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', repoRoot, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout: the record says so
  }
  const header = [
    `# Bench run \`${recordName}\``,
    '',
    `- command: \`npm run bench -- ${args.join(' ')}\``,
    `- commit: \`${commit}\``,
    `- started: ${startedAt.toISOString()}, finished: ${new Date().toISOString()}`,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`,
    `- load average (1/5/15 min) before: ${loadBefore}; after: ${loadAverage()}`,
    `- exit: ${failed === 0 ? 'every bench finished' : `${failed} bench(es) failed`}`,
    '',
    'Ratios are medians of alternating A/B pairs with their 10th–90th percentile spread (test/bench/ab-pairs.ts).',
    '',
    '```text',
  ];
  const recordDir = join(repoRoot, 'docs', 'bench');
  mkdirSync(recordDir, { recursive: true });
  const file = join(recordDir, `${recordName}.md`);
  writeFileSync(file, `${header.join('\n')}\n${transcript.join('').trim()}\n\`\`\`\n`);
  console.log(`\nrecorded in ${file}`);
}
process.exit(failed === 0 ? 0 : 1);
