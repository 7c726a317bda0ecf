/**
 * CLI cold start to first reply: `hostadm call rpc/identify` spawned N times against an in-process
 * agent (time from spawn to the reply on stdout, and to exit), then a signed-in call resuming a cached
 * token (`call users usershow`), and `hostadm --version` (process start-up alone). Each figure is
 * also taken with NODE_COMPILE_CACHE set for the whole process (what the bin wrapper could do).
 *
 * Run: node test/bench/cli-start.bench.ts [iterations]   (or `npm run bench cli-start`)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, SIM_PASSWORD } from '../helpers/agent.ts';

const N = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 20);
const WARMUP = 2;
const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');

interface Timing {
  firstOutputMs: number;
  exitMs: number;
}

function once(args: string[], env: Record<string, string>): Promise<Timing> {
  const start = performance.now();
  const child = spawn(hostadm, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let first = 0;
  let stderr = '';
  child.stdout.once('data', () => (first = performance.now() - start));
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`hostadm ${args.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ firstOutputMs: first, exitMs: performance.now() - start });
    }),
  );
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(label: string, args: string[], env: Record<string, string>): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await once(args, env);
  const runs: Timing[] = [];
  for (let i = 0; i < N; i++) runs.push(await once(args, env));
  const first = runs.map((r) => r.firstOutputMs).sort((a, b) => a - b);
  const exit = runs.map((r) => r.exitMs).sort((a, b) => a - b);
  console.log(
    `${label.padEnd(56)} reply p50 ${pct(first, 50).toFixed(0).padStart(4)} ms  p90 ${pct(first, 90).toFixed(0).padStart(4)} ms   exit p50 ${pct(exit, 50).toFixed(0).padStart(4)} ms  p90 ${pct(exit, 90).toFixed(0).padStart(4)} ms`,
  );
}

const agent = await startTestAgent();
const config = mkdtempSync(join(tmpdir(), 'hostadm-bench-'));
const cache = mkdtempSync(join(tmpdir(), 'hostadm-bench-ncc-'));
try {
  const env = { XDG_CONFIG_HOME: config, HOSTADM_URL: agent.url, HOSTADM_USER: 'admin', HOSTADM_PASSWORD: SIM_PASSWORD };
  console.log(`hostadm start-up, ${N} runs each after ${WARMUP} warm-up runs (the compile cache is warm after those)`);
  for (const [suffix, extra] of [
    ['', {}],
    [' [NODE_COMPILE_CACHE]', { NODE_COMPILE_CACHE: cache }],
  ] as const) {
    await measure(`hostadm --version${suffix}`, ['--version'], { ...env, ...extra });
    await measure(`hostadm call rpc/identify${suffix}`, ['call', 'rpc/identify'], { ...env, ...extra });
    await measure(`hostadm call users usershow (token)${suffix}`, ['call', 'users', 'usershow'], { ...env, ...extra });
  }
} finally {
  await agent.dispose();
  rmSync(config, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
}
