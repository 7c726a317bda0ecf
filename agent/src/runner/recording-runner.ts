import { validateArgv } from './runner.ts';
import type { CommandRunner, RunnerConfig, RunOptions, RunResult } from './runner.ts';

export interface CannedReply {
  /** An exact argv (prefix included, as recorded in `calls`), or a predicate over it. */
  match: readonly string[] | ((argv: readonly string[]) => boolean);
  stdout?: string;
  stderr?: string;
  /** Default 0. */
  code?: number;
  /** Answer only the first matching call, letting a later reply answer the next (e.g. before/after a change). */
  once?: boolean;
}

/**
 * A CommandRunner for tests: answers from canned replies and records every argv. A command without a
 * reply rejects, so a test can never pass by quietly running nothing.
 */
export class RecordingRunner implements CommandRunner {
  /** Every argv asked for, prefix included, in order, including the unanswered ones. */
  readonly calls: string[][] = [];
  /** The options each call came with (same order as `calls`), to check e.g. that a password went via stdin. */
  readonly options: RunOptions[] = [];
  readonly #replies: CannedReply[];
  readonly #used = new Set<CannedReply>();
  readonly #prefix: string[];

  constructor(replies: readonly CannedReply[] = [], config: RunnerConfig = {}) {
    this.#replies = [...replies];
    this.#prefix = [...(config.prefix ?? [])];
    if (this.#prefix.length > 0) validateArgv(this.#prefix, 'prefix');
  }

  /** Adds replies after construction, for tests that build up a scenario step by step. */
  reply(...replies: CannedReply[]): this {
    this.#replies.push(...replies);
    return this;
  }

  async run(argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
    validateArgv(argv);
    options.signal?.throwIfAborted();
    const full = [...this.#prefix, ...argv];
    this.calls.push(full);
    this.options.push(options);
    const reply = this.#replies.find((r) => !this.#used.has(r) && matches(r.match, full));
    if (reply === undefined) {
      throw new Error(
        `RecordingRunner: no canned reply for ${JSON.stringify(full)}\n` + `calls so far:\n${this.calls.map((c) => `  ${JSON.stringify(c)}`).join('\n')}`,
      );
    }
    if (reply.once) this.#used.add(reply);
    if (reply.stdout) options.onOutput?.(reply.stdout, 'stdout');
    if (reply.stderr) options.onOutput?.(reply.stderr, 'stderr');
    return {
      argv: full,
      code: reply.code ?? 0,
      signal: null,
      stdout: reply.stdout ?? '',
      stderr: reply.stderr ?? '',
      timedOut: false,
      truncated: false,
      durationMs: 0,
    };
  }
}

function matches(match: CannedReply['match'], argv: readonly string[]): boolean {
  if (typeof match === 'function') return match(argv);
  return match.length === argv.length && match.every((arg, i) => arg === argv[i]);
}
