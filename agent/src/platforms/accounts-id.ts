/** Group lookup shared by Linux and FreeBSD: both ship `id -Gn <user>` with the same output. */
import type { CommandRunner } from '../runner/runner.ts';

const ACCOUNT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?$/;

export async function groupsFromId(runner: CommandRunner, user: string): Promise<string[] | null> {
  // The name was validated by the auth contract; checked again because it reaches argv.
  if (!ACCOUNT_NAME.test(user)) return null;
  const result = await runner.run(['id', '-Gn', user], { timeoutMs: 10_000 });
  if (result.code !== 0) return null;
  return result.stdout.trim().split(/\s+/).filter(Boolean);
}
