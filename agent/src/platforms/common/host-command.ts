/**
 * The one way a platform turns a host command into a result or a HOST_ERROR. Two wordings, for the
 * two ways a failure is told:
 * - `hostError(what, result)`: `<what>: <stderr>` (`creating account bob failed: pw: ...`), for a
 *   step whose purpose says what failed;
 * - `commandFailed(command, result)`: `<command> <how it ended>: <output>` (`service nginx start
 *   exited with code 1: ...`), for commands whose own name says it (rc.d and init scripts print
 *   their reasons on either stream).
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, howItEnded, type CommandRunner, type RunOptions, type RunResult } from '../../runner/runner.ts';

/** `<what>: <stderr>`, or how `command` ended when it said nothing on stderr. */
export function hostError(what: string, result: RunResult, command = result.argv[0] ?? 'the command'): HostadmError {
  const detail = result.stderr.trim() || (result.code === 0 ? `${command} printed nothing` : `${command} ${howItEnded(result)}`);
  return new HostadmError('HOST_ERROR', `${what}: ${detail}`);
}

/** `<command> <how it ended>: <what it printed>`, the words of CommandError, as the client's error. */
export function commandFailed(command: string, result: RunResult): HostadmError {
  return new HostadmError('HOST_ERROR', failureText(command, result));
}

/** Runs argv and returns its standard output; any exit but 0 is `hostError(what, ...)`. */
export async function runOrHostError(runner: CommandRunner, argv: readonly string[], what: string, options: RunOptions = {}): Promise<string> {
  const result = await runner.run(argv, options);
  if (result.code !== 0) throw hostError(what, result, argv[0]);
  return result.stdout;
}
