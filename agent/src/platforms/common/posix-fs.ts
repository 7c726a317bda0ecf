/**
 * What the FreeBSD and Linux `fs` ports do alike: who an account is (`id -u`, `id -G`, the same on
 * both) and how a directory read ends (too large, refused by the kernel, failed), so both answer a
 * client in the same words.
 */
import { SIGNED_IN_ACCOUNT } from '@hostadm/shared/api/fields-accounts.ts';
import { forbidden, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner, RunResult } from '../../runner/runner.ts';
import type { Identity } from '../ports/fs.ts';

export const FS_TIMEOUT_MS = 30_000;
/** Beyond this much `find` output (a few hundred thousand entries) the listing is refused, not guessed. */
export const MAX_LISTING_BYTES = 64 * 1024 * 1024;

async function idOf(runner: CommandRunner, flag: '-u' | '-G', user: string): Promise<number[] | null> {
  const result = await runner.run(['id', flag, '--', user], { timeoutMs: FS_TIMEOUT_MS });
  if (result.code !== 0) return null;
  const ids = result.stdout.trim().split(/\s+/).filter(Boolean).map(Number);
  return ids.length > 0 && ids.every(Number.isInteger) ? ids : null;
}

/** The account's uid and groups, or null when there is no such account (or its name is no account name). */
export async function identityOf(runner: CommandRunner, user: string): Promise<Identity | null> {
  if (!SIGNED_IN_ACCOUNT.test(user)) return null;
  const uid = await idOf(runner, '-u', user);
  const gids = await idOf(runner, '-G', user);
  return uid && gids ? { uid: uid[0] as number, gids } : null;
}

/**
 * Throws when the `find` that read `dir` did not list it: too much output, or a failure that listed
 * nothing (find reports entries that vanish while it runs and still lists the rest). With `as`, the
 * kernel's refusal is the caller's FORBIDDEN.
 */
export function checkListing(dir: string, result: RunResult, listed: number, as: Identity | null): void {
  if (result.truncated) {
    throw new HostadmError('PAYLOAD_TOO_LARGE', `dir: ${dir} holds too many entries to list`, {
      fieldErrors: [{ field: 'dir', message: 'too many entries' }],
    });
  }
  if (result.code === 0 || listed > 0) return;
  if (as && /Permission denied/.test(result.stderr)) throw forbidden(`admin/fs dirlist: permission denied: ${dir}`);
  throw new HostadmError('HOST_ERROR', `find ${dir} failed: ${result.stderr.trim()}`);
}
