/** Group lookup shared by Linux and FreeBSD: both ship `id -Gn <user>` with the same output. */
import { SIGNED_IN_ACCOUNT } from '@hostadm/shared/api/fields-accounts.ts';
import type { CommandRunner } from '../../runner/runner.ts';

export async function groupsFromId(runner: CommandRunner, user: string): Promise<string[] | null> {
  // Sign-in takes any name; one that is no account name is no account, and never reaches argv.
  if (!SIGNED_IN_ACCOUNT.test(user)) return null;
  const result = await runner.run(['id', '-Gn', user], { timeoutMs: 10_000 });
  if (result.code !== 0) return null;
  return result.stdout.trim().split(/\s+/).filter(Boolean);
}
