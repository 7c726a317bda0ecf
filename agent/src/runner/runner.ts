import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { runPipeline, type PipeOptions, type PipeResult } from './pipeline.ts';

/**
 * The one way the agent runs host commands. Argv arrays only, never a shell string: arguments come
 * from clients, and `shell: false` is what makes `a; rm -rf /` an ordinary argument.
 */

export interface RunOptions {
  /** Default 60 000. On expiry the whole process group gets SIGTERM, then SIGKILL after graceMs. */
  timeoutMs?: number;
  /** Default 2000. */
  graceMs?: number;
  /** Written to stdin, which is then closed. Secrets go here, never in argv (argv is world-readable in /proc). */
  input?: string | Uint8Array;
  /** Merged over SAFE_ENV; the agent's own environment is never passed on. */
  env?: Record<string, string>;
  cwd?: string;
  /** Default 16 MiB per stream. Beyond it output is dropped and `truncated` set; the process runs on. */
  maxOutputBytes?: number;
  /** Aborting kills the process group as a timeout does. Already aborted: rejects without spawning. */
  signal?: AbortSignal;
  /** Streams output as it arrives (job logs, progress), in addition to the captured result. */
  onOutput?: (text: string, stream: 'stdout' | 'stderr') => void;
  /** Told the process id once the command has started. */
  onSpawn?: (pid: number) => void;
}

export interface RunResult {
  /** What was actually executed, prefix included. */
  argv: string[];
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

export interface CommandRunner {
  run(argv: readonly string[], options?: RunOptions): Promise<RunResult>;
  /**
   * `producer | consumer` as two processes joined by the agent (pipeline.ts), both under the runner's
   * prefix. Runners that replay canned output (tests) leave it out.
   */
  pipe?(producer: readonly string[], consumer: readonly string[], options?: PipeOptions): Promise<PipeResult>;
}

export interface RunnerConfig {
  /** Prepended to every argv, e.g. ['chroot', '/tmp/root'] or ['ip', 'netns', 'exec', 'ns1']. */
  prefix?: readonly string[];
}

/** The agent may run with anything in its environment (tokens, LD_PRELOAD, ...); children see only this. */
export const SAFE_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/sbin:/bin:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin',
  LANG: 'C.UTF-8',
});

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_GRACE_MS = 2_000;
const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
const STDERR_IN_MESSAGE = 500;

/** How a finished command ended: `exited with code 1`, `timed out`, `was killed by SIGKILL`. */
export function howItEnded(result: RunResult): string {
  if (result.timedOut) return 'timed out';
  return result.code !== null ? `exited with code ${result.code}` : `was killed by ${result.signal ?? 'a signal'}`;
}

/** `<command> <how it ended>: <what it printed>` (stderr, or stdout when stderr is empty), capped. */
export function failureText(command: string, result: RunResult): string {
  const said = (result.stderr.trim() || result.stdout.trim()).slice(0, STDERR_IN_MESSAGE);
  return `${command} ${howItEnded(result)}${said === '' ? '' : `: ${said}`}`;
}

export class CommandError extends Error {
  readonly result: RunResult;

  constructor(command: string, result: RunResult) {
    super(failureText(command, result));
    this.name = 'CommandError';
    this.result = result;
  }
}

/** Runs argv and returns the result only if it exited 0; anything else throws CommandError. */
export async function runChecked(runner: CommandRunner, argv: readonly string[], options?: RunOptions): Promise<RunResult> {
  const result = await runner.run(argv, options);
  // Named after the requested command, not the prefix: "useradd exited with code 9" is the useful part.
  if (result.code !== 0) throw new CommandError(argv[0] ?? '', result);
  return result;
}

/**
 * Rejects anything that is not a plain non-empty argv. The Array check matters for untyped callers:
 * a single string would otherwise be spread into characters or, worse, tempt someone to add a shell.
 */
export function validateArgv(argv: unknown, what = 'argv'): asserts argv is readonly string[] {
  if (!Array.isArray(argv)) throw new TypeError(`${what} must be an array of strings, not ${typeof argv}`);
  if (argv.length === 0) throw new TypeError(`${what} must not be empty`);
  for (const [i, arg] of argv.entries()) {
    if (typeof arg !== 'string') throw new TypeError(`${what}[${i}] must be a string, not ${typeof arg}`);
    // exec() would cut the argument at the NUL, silently running something other than what was asked.
    if (arg.includes('\0')) throw new TypeError(`${what}[${i}] contains a NUL byte`);
  }
  if (argv[0] === '') throw new TypeError(`${what}[0] must not be empty`);
}

export function createRunner(config: RunnerConfig = {}): CommandRunner {
  const prefix = [...(config.prefix ?? [])];
  if (prefix.length > 0) validateArgv(prefix, 'prefix');
  return {
    async run(argv, options = {}) {
      validateArgv(argv);
      options.signal?.throwIfAborted();
      return execute([...prefix, ...argv], options);
    },
    async pipe(producer, consumer, options = {}) {
      return runPipeline([...prefix, ...producer], [...prefix, ...consumer], options);
    },
  };
}

/** Collects a stream up to a byte cap, then keeps reading (so the writer never blocks) but discards. */
function capture(limit: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  return {
    push(chunk: Buffer) {
      const room = limit - size;
      if (chunk.length > room) {
        truncated = true;
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = limit;
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
    get truncated() {
      return truncated;
    },
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    // Negative pid: the whole group, so `sh -c 'a & b'` does not leave a and b behind.
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: everyone in the group has already gone.
  }
}

function execute(argv: string[], options: RunOptions): Promise<RunResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const maxBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const command = argv[0] as string;
  const started = performance.now();

  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(command, argv.slice(1), {
      shell: false,
      // Own process group, so a timeout can kill everything the command started.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...SAFE_ENV, ...options.env },
      cwd: options.cwd,
    });
    const out = capture(maxBytes);
    const err = capture(maxBytes);
    let code: number | null = null;
    let signal: string | null = null;
    let timedOut = false;
    let terminating = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      for (const t of timers) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      // Whatever of a killed group is still here has had its grace period (see the exit handler).
      if (terminating) killGroup(child, 'SIGKILL');
      child.stdout.destroy();
      child.stderr.destroy();
      return true;
    };

    const finish = (failed?: { code: number; stderr: string }): void => {
      if (!settle()) return;
      // A command that never started still owes its stream listeners the explanation.
      if (failed) options.onOutput?.(failed.stderr, 'stderr');
      resolve({
        argv,
        code: failed ? failed.code : code,
        signal: failed ? null : signal,
        stdout: out.text(),
        stderr: failed ? failed.stderr : err.text(),
        timedOut,
        truncated: out.truncated || err.truncated,
        durationMs: performance.now() - started,
      });
    };

    const terminate = (): void => {
      if (settled || terminating) return;
      terminating = true;
      killGroup(child, 'SIGTERM');
      timers.push(
        setTimeout(() => {
          killGroup(child, 'SIGKILL');
          // A process stuck in uninterruptible sleep survives even SIGKILL; don't hang the caller on it.
          timers.push(
            setTimeout(() => {
              child.unref();
              finish();
            }, graceMs),
          );
        }, graceMs),
      );
    };

    const onAbort = (): void => terminate();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          terminate();
        }, timeoutMs),
      );
    }

    const onOutput = options.onOutput;
    // A chunk may end inside a multi-byte character: the decoders keep the partial bytes for the next one.
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    child.stdout.on('data', (chunk: Buffer) => {
      out.push(chunk);
      onOutput?.(decoders.stdout.write(chunk), 'stdout');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err.push(chunk);
      onOutput?.(decoders.stderr.write(chunk), 'stderr');
    });
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    // A command that exits without reading its input makes our write fail with EPIPE; that is its
    // business, and the exit status says what happened.
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');

    child.on('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // only spawn failures matter; we never use child.kill()
      if (error.code === 'ENOENT' && options.cwd !== undefined && !existsSync(options.cwd)) {
        // Same errno as a missing binary; say which it was rather than blame the command.
        if (settle()) reject(new Error(`working directory does not exist: ${options.cwd}`, { cause: error }));
      } else if (error.code === 'ENOENT') {
        finish({ code: 127, stderr: `command not found: ${command}\n` });
      } else {
        finish({ code: 126, stderr: `cannot run ${command}: ${error.message}\n` });
      }
    });

    child.on('exit', (exitCode, exitSignal) => {
      code = exitCode;
      signal = exitSignal;
      // Normally 'close' follows at once. If it doesn't, something the command started (a daemon
      // that never closed its stdout) holds our pipes; it is not ours to wait for. After a kill this
      // also ends the group's grace period: it fires no earlier than the SIGKILL timer would.
      timers.push(setTimeout(() => finish(), graceMs));
    });
    child.on('close', () => finish());
  });
}
