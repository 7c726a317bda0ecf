/**
 * The sim platform's command runner: it never starts a process. Commands that reach it (today the
 * dispatcher's `run` jobs) are simulated, so a demo or a test on `--platform sim` cannot change the
 * machine it runs on, even as root. A few commands behave as they would for real (`true`, `false`,
 * `echo`, `sleep`); every other one succeeds and its log says it was simulated. The agent option
 * `--sim-host-commands` swaps in the real runner instead (documented as running real commands).
 */
import { abortableSleep } from '../../jobs/simulated-work.ts';
import type { CommandRunner, RunOptions, RunResult } from '../../runner/runner.ts';

/** The longest simulated `sleep`: a demo waits, a job queue does not stall for hours. */
const MAX_SLEEP_MS = 600_000;

export class SimulatedRunner implements CommandRunner {
  private nextPid = 90_000;

  async run(argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
    if (options.signal?.aborted) throw new Error('aborted before start');
    const started = Date.now();
    options.onSpawn?.(this.nextPid++);
    const [command = '', ...args] = argv;
    const out = (stdout: string, code: number, stderr = ''): RunResult => {
      if (stdout) options.onOutput?.(stdout, 'stdout');
      if (stderr) options.onOutput?.(stderr, 'stderr');
      return { argv: [...argv], code, signal: null, stdout, stderr, timedOut: false, truncated: false, durationMs: Date.now() - started };
    };
    switch (command) {
      case 'true':
        return out('', 0);
      case 'false':
        return out('', 1);
      case 'echo':
        return out(`${args.join(' ')}\n`, 0);
      case 'sleep': {
        const seconds = Number(args[0]);
        if (!Number.isFinite(seconds) || seconds < 0) return out('', 1, `sleep: invalid time interval '${args[0] ?? ''}'\n`);
        const finished = await abortableSleep(Math.min(seconds * 1000, MAX_SLEEP_MS), options.signal);
        if (finished) return out('', 0);
        return { argv: [...argv], code: null, signal: 'SIGTERM', stdout: '', stderr: '', timedOut: false, truncated: false, durationMs: Date.now() - started };
      }
      default:
        return out(`[sim] simulated, not run on this machine: ${argv.map(quoteForDisplay).join(' ')}\n`, 0);
    }
  }
}

function quoteForDisplay(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
