/**
 * Following queued jobs: a live progress bar per job on a terminal (cli-progress), or one line per
 * step otherwise, ending with each job's result. Ctrl-C stops waiting (the jobs keep running).
 */
import type { JobCompletion, JobHandle } from '../../../sdk/src/types.ts';
import { CliError, EXIT, usageError } from './exit.ts';

export type ProgressMode = 'bar' | 'log' | 'none';

export function progressMode(flag: string | undefined): ProgressMode {
  if (flag === undefined || flag === 'auto') return process.stderr.isTTY ? 'bar' : 'log';
  if (flag === 'bar' || flag === 'log' || flag === 'none') return flag;
  throw usageError(`--progress: expected bar, log, none or auto, not ${flag}`);
}

export interface FollowOptions {
  mode: ProgressMode;
  /** Where the jobs' output goes: `stderr` prefixed by job id (call), `stdout` as is (jobs run), or nowhere. */
  output: 'stderr' | 'stdout' | 'none';
}

export const succeeded = (c: JobCompletion) => c.success === 'true';

export function resultWords(c: JobCompletion): string {
  const reason = typeof c.reason === 'string' && c.reason ? `: ${c.reason}` : '';
  return succeeded(c) ? 'succeeded' : `failed${reason}`;
}

export async function followJobs(jobs: readonly JobHandle[], options: FollowOptions): Promise<JobCompletion[]> {
  const display = options.mode === 'bar' ? await barDisplay(jobs) : options.mode === 'log' ? logDisplay() : silentDisplay();
  const cleanup: Array<() => void> = [];
  const sigint = new Promise<never>((_, reject) => {
    const onSigint = () => {
      const ids = jobs.filter((j) => !j.completion).map((j) => j.id);
      reject(
        new CliError(
          EXIT.interrupted,
          `stopped waiting; still running on the host: ${ids.join(', ')}`,
          `follow again: hostadm jobs wait ${ids[0] ?? ''}   cancel: hostadm jobs kill ${ids.join(' ')}`,
        ),
      );
    };
    process.once('SIGINT', onSigint);
    cleanup.push(() => process.off('SIGINT', onSigint));
  });
  sigint.catch(() => undefined);
  try {
    const all = Promise.all(
      jobs.map(async (job) => {
        const started = Date.now();
        let partial = '';
        const emitLines = (text: string, final: boolean) => {
          partial += text;
          const lines = partial.split('\n');
          partial = final ? '' : lines.pop()!;
          for (const line of final ? lines.filter((l, i) => i < lines.length - 1 || l !== '') : lines) {
            if (options.output === 'stdout') display.stdoutLine(line);
            else if (options.output === 'stderr') display.line(job.id, line);
          }
        };
        display.start(job.id);
        for await (const step of job.progress) {
          if (step.output) emitLines(step.output, false);
          if (step.percent !== null) display.percent(job.id, step.percent);
        }
        const completion = await job.done;
        emitLines('', true);
        display.finish(job.id, completion, Date.now() - started);
        return completion;
      }),
    );
    return await Promise.race([all, sigint]);
  } finally {
    for (const fn of cleanup) fn();
    display.stop();
  }
}

interface Display {
  start(id: string): void;
  line(id: string, text: string): void;
  stdoutLine(text: string): void;
  percent(id: string, value: number): void;
  finish(id: string, completion: JobCompletion, ms: number): void;
  stop(): void;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

function logDisplay(): Display {
  const lastPercent = new Map<string, number>();
  const err = (text: string) => process.stderr.write(`${text}\n`);
  return {
    start: (id) => err(`[${id}] started`),
    line: (id, text) => err(`[${id}] ${text}`),
    stdoutLine: (text) => process.stdout.write(`${text}\n`),
    percent: (id, value) => {
      const rounded = Math.floor(value);
      if (lastPercent.get(id) === rounded) return;
      lastPercent.set(id, rounded);
      err(`[${id}] ${rounded}%`);
    },
    finish: (id, c, ms) => err(`[${id}] ${resultWords(c)} in ${seconds(ms)}`),
    stop: () => undefined,
  };
}

function silentDisplay(): Display {
  return {
    start: () => undefined,
    line: () => undefined,
    stdoutLine: (text) => process.stdout.write(`${text}\n`),
    percent: () => undefined,
    finish: () => undefined,
    stop: () => undefined,
  };
}

async function barDisplay(jobs: readonly JobHandle[]): Promise<Display> {
  const { MultiBar } = await import('cli-progress');
  const width = Math.max(...jobs.map((j) => j.id.length), 4);
  const multibar = new MultiBar({
    stream: process.stderr,
    format: ' {id} |{bar}| {pct} {status}',
    barsize: 30,
    hideCursor: process.stderr.isTTY,
    clearOnComplete: false,
    stopOnComplete: false,
    // Also draw when stderr is not a terminal (--progress bar in a pipe), a frame every 100 ms.
    noTTYOutput: !process.stderr.isTTY,
    notTTYSchedule: 100,
    fps: 10,
  });
  const bars = new Map<string, ReturnType<typeof multibar.create>>();
  const started = new Map<string, number>();
  const timer = setInterval(() => {
    for (const [id, bar] of bars) if (started.has(id)) bar.update({ status: `running ${seconds(Date.now() - started.get(id)!)}` });
  }, 250);
  return {
    start(id) {
      started.set(id, Date.now());
      bars.set(id, multibar.create(100, 0, { id: id.padEnd(width), pct: '  --', status: 'running' }));
    },
    line(id, text) {
      multibar.log(`[${id}] ${text}\n`);
    },
    stdoutLine(text) {
      multibar.log(`${text}\n`);
    },
    percent(id, value) {
      bars.get(id)?.update(Math.min(100, value), { pct: `${String(Math.floor(value)).padStart(3)}%` });
    },
    finish(id, c, ms) {
      started.delete(id);
      const ok = succeeded(c);
      const bar = bars.get(id);
      if (ok) bar?.update(100, { pct: '100%', status: `${resultWords(c)} in ${seconds(ms)}` });
      else bar?.update({ status: `${resultWords(c)} after ${seconds(ms)}` });
    },
    stop() {
      clearInterval(timer);
      multibar.stop();
    },
  };
}
