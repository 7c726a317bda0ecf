/**
 * Two commands joined as `producer | consumer` without a shell: both are spawned from argv arrays
 * (each in its own process group, with SAFE_ENV), and the bytes pass through the agent, which counts
 * them for progress and honours back-pressure (the producer is paused while the consumer's pipe is
 * full). If either side fails the other is stopped, so a dead `ssh` never leaves a `zfs send` blocked.
 * Used for `zfs send | ssh … zfs recv`; aborting the signal kills both groups.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { SAFE_ENV, validateArgv } from './runner.ts';

export interface PipeOptions {
  /** Merged over SAFE_ENV, for both commands. */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Told the running byte count as data passes (at most every `progressBytes`). */
  onBytes?: (bytes: number) => void;
  progressBytes?: number;
}

export interface PipeSide {
  argv: string[];
  code: number | null;
  signal: string | null;
  stderr: string;
}

export interface PipeResult {
  producer: PipeSide;
  consumer: PipeSide & { stdout: string };
  /** Bytes that went from the producer to the consumer. */
  bytes: number;
  aborted: boolean;
}

const KEEP = 64 * 1024;

function keepTail(current: string, chunk: Buffer): string {
  const next = current + chunk.toString('utf8');
  return next.length > KEEP ? next.slice(-KEEP) : next;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Runs `producer | consumer` (each argv already carrying any runner prefix). */
export function runPipeline(producer: readonly string[], consumer: readonly string[], options: PipeOptions = {}): Promise<PipeResult> {
  validateArgv(producer, 'producer');
  validateArgv(consumer, 'consumer');
  options.signal?.throwIfAborted();
  const env = { ...SAFE_ENV, ...options.env };
  const spawnSide = (argv: readonly string[]) =>
    spawn(argv[0] as string, argv.slice(1), { shell: false, detached: true, stdio: ['pipe', 'pipe', 'pipe'], env });
  return new Promise<PipeResult>((resolve) => {
    const from = spawnSide(producer);
    const to = spawnSide(consumer);
    const result: PipeResult = {
      producer: { argv: [...producer], code: null, signal: null, stderr: '' },
      consumer: { argv: [...consumer], code: null, signal: null, stderr: '', stdout: '' },
      bytes: 0,
      aborted: false,
    };
    let reported = 0;
    const step = options.progressBytes ?? 1024 * 1024;
    let open = 2;
    const stopBoth = () => {
      killGroup(from, 'SIGTERM');
      killGroup(to, 'SIGTERM');
    };
    const onAbort = () => {
      result.aborted = true;
      stopBoth();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (side: PipeSide, code: number | null, signal: string | null) => {
      side.code = code;
      side.signal = signal;
      // One side failing ends the other: a producer with nobody reading, or a consumer fed nothing more.
      if (code !== 0) stopBoth();
      if (--open === 0) {
        options.signal?.removeEventListener('abort', onAbort);
        options.onBytes?.(result.bytes);
        resolve(result);
      }
    };
    const failedToStart = (side: PipeSide, error: NodeJS.ErrnoException) => {
      side.stderr += error.code === 'ENOENT' ? `command not found: ${side.argv[0]}\n` : `cannot run ${side.argv[0]}: ${error.message}\n`;
    };
    from.on('error', (e: NodeJS.ErrnoException) => failedToStart(result.producer, e));
    to.on('error', (e: NodeJS.ErrnoException) => failedToStart(result.consumer, e));
    from.stdin.end();
    to.stdin.on('error', () => {
      // The consumer went away mid-stream (EPIPE); its exit status says why.
    });
    from.stdout.on('data', (chunk: Buffer) => {
      result.bytes += chunk.length;
      if (result.bytes - reported >= step) {
        reported = result.bytes;
        options.onBytes?.(result.bytes);
      }
      if (!to.stdin.write(chunk)) {
        from.stdout.pause();
        to.stdin.once('drain', () => from.stdout.resume());
      }
    });
    from.stdout.on('end', () => to.stdin.end());
    from.stderr.on('data', (c: Buffer) => (result.producer.stderr = keepTail(result.producer.stderr, c)));
    to.stdout.on('data', (c: Buffer) => (result.consumer.stdout = keepTail(result.consumer.stdout, c)));
    to.stderr.on('data', (c: Buffer) => (result.consumer.stderr = keepTail(result.consumer.stderr, c)));
    from.on('close', (code, signal) => done(result.producer, code ?? (signal ? null : 127), signal));
    to.on('close', (code, signal) => done(result.consumer, code ?? (signal ? null : 127), signal));
  });
}
