/**
 * What one command costs, spawn to exit: wall time, and the CPU time (user + system) its Node process
 * spends, which cpu-at-exit.cjs (loaded with --require through NODE_OPTIONS) reports as it exits, to the
 * microsecond. On a shared machine the wall time moves with everyone else's load; the CPU time is
 * what the command itself spends (the shell of the bin wrapper, about a millisecond, is not counted).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const preload = new URL('./cpu-at-exit.cjs', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'hostadm-bench-cpu-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
let runs = 0;

export interface ProcessCost {
  wallMs: number;
  cpuMs: number;
}

export function measureCommand(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<ProcessCost> {
  const cpuFile = join(scratch, `run-${++runs}`);
  const nodeOptions = [env.NODE_OPTIONS, `--require=${preload}`].filter(Boolean).join(' ');
  const start = performance.now();
  const child = spawn(command, args, { env: { ...env, NODE_OPTIONS: nodeOptions, HOSTADM_BENCH_CPU_OUT: cpuFile }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => {
      const wallMs = performance.now() - start;
      if (code !== 0) {
        reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output}`));
        return;
      }
      const micros = existsSync(cpuFile) ? readFileSync(cpuFile, 'utf8').trim().split('\n').map(Number) : [];
      rmSync(cpuFile, { force: true });
      if (micros.length === 0) {
        reject(new Error(`${command} ${args.join(' ')} reported no CPU time (not a Node process?)`));
        return;
      }
      resolve({ wallMs, cpuMs: micros.reduce((a, b) => a + b, 0) / 1000 });
    }),
  );
}

/**
 * A measurement for alternatePairs (the wall time) that keeps each run's CPU time on the side, so one
 * run of pairs gives both ratios: `cpuRatios` pairs the runs of two recorders after the warm-up ones.
 */
export function costRecorder(command: string, args: string[], env: NodeJS.ProcessEnv): { measure: () => Promise<number>; cpu: number[] } {
  const cpu: number[] = [];
  return {
    cpu,
    async measure() {
      const cost = await measureCommand(command, args, env);
      cpu.push(cost.cpuMs);
      return cost.wallMs;
    },
  };
}

export function cpuRatios(a: readonly number[], b: readonly number[], warmup = 2): number[] {
  return b.slice(warmup).map((cost, i) => cost / a[warmup + i]!);
}
