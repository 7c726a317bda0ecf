/**
 * Exit codes (documented in client/cli/README.md) and the one place errors become messages.
 *   0 ok · 2 usage (bad flags or arguments, refused by the contract before sending) · 3 auth failure
 *   (a 401 from the host, or from the bridge while connecting) · 4 refused by the host (400/403/404/409/429)
 *   · 5 host error (5xx, a failed job) · 6 connection failure
 */
import { summarizeFieldErrors } from '@hostadm/shared/protocol/errors.ts';
import { ConnectionError, HostadmClientError, HostadmRequestError, ReplyContractError } from '../../../sdk/src/errors.ts';

export const EXIT = { ok: 0, output: 1, usage: 2, auth: 3, refused: 4, host: 5, connection: 6, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI raises itself, with its exit code. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;

  constructor(exitCode: ExitCode, message: string, hint?: string) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.hint = hint;
  }
}

export const usageError = (message: string, hint?: string) => new CliError(EXIT.usage, message, hint);

export function exitCodeFor(err: unknown): ExitCode {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof HostadmRequestError) {
    if (err.local) return EXIT.usage;
    if (err.code === 401) return EXIT.auth;
    if (err.code >= 500) return EXIT.host;
    return EXIT.refused;
  }
  if (err instanceof ConnectionError) {
    // A peer that answered and refused (the bridge or the host, while connecting) is not a connection failure.
    const refused = refusalBehind(err);
    return refused ? exitCodeFor(refused) : EXIT.connection;
  }
  if (err instanceof ReplyContractError) return EXIT.host;
  if (err instanceof HostadmClientError) return EXIT.usage;
  if (err instanceof Error && err.name === 'AbortError') return EXIT.interrupted;
  return EXIT.host;
}

/** The refusal (an error envelope) that made a connection fail, anywhere in its cause chain. */
function refusalBehind(err: Error): HostadmRequestError | undefined {
  for (let e: unknown = err.cause, i = 0; e instanceof Error && i < 5; e = e.cause, i++) {
    if (e instanceof HostadmRequestError) return e;
  }
  return undefined;
}

/** Prints the error on stderr (never a stack trace for expected failures) and returns the exit code. */
export function reportError(err: unknown, writeErr: (text: string) => void = (text) => process.stderr.write(text)): ExitCode {
  const code = exitCodeFor(err);
  const lines: string[] = [];
  if (err instanceof HostadmRequestError) {
    const who = err.local ? 'refused before sending' : `${err.code} ${err.codeName}`;
    // The message ends with every field problem on one line (for SDK users); here each gets its own line.
    const listed = `: ${summarizeFieldErrors(err.fieldErrors)}`;
    const head = err.fieldErrors.length > 0 && err.message.endsWith(listed) ? `${err.message.slice(0, -listed.length)}:` : err.message;
    lines.push(`hostadm: ${who}: ${err.code === 401 && !err.local ? 'sign-in failed or session expired (Unauthorized)' : head}`);
    for (const f of err.fieldErrors) lines.push(`  ${f.field}: ${f.message}`);
    if (err.local && err.fieldErrors.some((f) => /^must be a list/.test(f.message))) {
      lines.push('  (arrays: repeat key=value, or write key:=\'["a","b"]\')');
    }
  } else if (err instanceof CliError) {
    lines.push(`hostadm: ${err.message}`);
    if (err.hint) lines.push(err.hint);
  } else if (err instanceof Error) {
    lines.push(`hostadm: ${err.message}`);
    if (!(err instanceof HostadmClientError) && process.env.HOSTADM_DEBUG) lines.push(String(err.stack));
  } else {
    lines.push(`hostadm: ${String(err)}`);
  }
  writeErr(`${lines.join('\n')}\n`);
  return code;
}

/**
 * Runs a command body: errors become a message and an exit code. `exitWhenWritten` (a one-shot call):
 * the process ends as soon as its output is written rather than when its last socket has closed. By
 * then the reply is printed and the session state saved (tickets are saved when the channel opens,
 * tokens before the close), and the close frames went out with the close; waiting for the bridge's
 * answering close frame and the TCP teardown only delays the exit (a round trip, more on a loaded host).
 */
export async function runCommand(
  // biome-ignore lint/suspicious/noConfusingVoidType: a command body returns an exit code or nothing at all
  body: () => Promise<number | void>,
  options: { exitWhenWritten?: boolean } = {},
): Promise<void> {
  let code: number;
  try {
    code = (await body()) ?? EXIT.ok;
  } catch (err) {
    code = reportError(err);
  }
  process.exitCode = code;
  if (options.exitWhenWritten) exitWhenWritten(code);
  // Everything is closed by now; should a handle linger, it must not keep a finished command alive.
  setTimeout(() => process.exit(code), 1500).unref();
}

/**
 * Exits once what was written to stdout and stderr has been handed to the system: their writes are
 * synchronous on Linux, but not to a pipe on FreeBSD or macOS, where exiting at once could cut the output.
 * Output that could not be written (a full disk, a reader that went away) is exit 1, never success:
 * one line on stderr, none when stdout's reader left (a closed pipe), whose own exit says enough.
 */
function exitWhenWritten(code: number): void {
  // Recorded here, and handled: an unhandled stream error would end the process with a stack trace.
  let lost: NodeJS.ErrnoException | undefined;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => (lost ??= err));
  process.stderr.on('error', () => {});
  const decide = () => {
    lost ??= (process.stdout.errored as NodeJS.ErrnoException | null) ?? undefined;
    if (lost === undefined) process.exit(code);
    if (lost.code === 'EPIPE' || process.stderr.errored) process.exit(EXIT.output);
    process.stderr.write(`hostadm: the reply could not be written to standard output (${lost.message})\n`, () => process.exit(EXIT.output));
  };
  let pending = 2;
  // A failed write reports its error a few ticks later (a file's writes fail synchronously, then
  // report on the next ticks): decided once those have run.
  const written = () => {
    if (--pending === 0) setImmediate(decide);
  };
  // An empty write's callback comes once the writes before it are out; with nothing pending (always on
  // Linux) none is made: even an empty write fails on a full device.
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength > 0) stream.write('', written);
    else written();
  }
}
