/**
 * rc.conf variables through sysrc(8), as an administrator sets them: sysrc also reads
 * /etc/defaults/rc.conf, so a variable only set there reads as its default.
 */
import type { CommandRunner } from '../../runner/runner.ts';
import { commandFailed } from '../common/host-command.ts';

const QUICK = { timeoutMs: 30_000 };

/** A variable's value, or null when it is set nowhere (sysrc: "unknown variable", exit 1). */
export async function sysrcLookup(runner: CommandRunner, name: string): Promise<string | null> {
  const result = await runner.run(['sysrc', '-n', '--', name], QUICK);
  if (result.code === 0) return result.stdout.replace(/\n$/, '');
  if (/unknown variable/.test(result.stderr)) return null;
  throw commandFailed(`sysrc -n ${name}`, result);
}

/** A variable's value; one set nowhere is empty. */
export async function sysrcGet(runner: CommandRunner, name: string): Promise<string> {
  return (await sysrcLookup(runner, name)) ?? '';
}

export async function sysrcSet(runner: CommandRunner, name: string, value: string): Promise<void> {
  const result = await runner.run(['sysrc', '--', `${name}=${value}`], QUICK);
  if (result.code !== 0) throw commandFailed(`sysrc ${name}=${value}`, result);
}
