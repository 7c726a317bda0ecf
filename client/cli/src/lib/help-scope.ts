/**
 * Which classes `hostadm call --help` lists: with a connection configured and a way to sign in that
 * needs no prompt, the ones the host serves (`rpc/query`); otherwise every class in the contracts,
 * saying why. Help never asks for a password and gives up on a slow host after a few seconds.
 */
import { existsSync } from 'node:fs';
import type { ConnectionFlags } from './session.ts';
import { readToken } from './config.ts';

export type HelpScope =
  /** `served` maps `<namespace>/<class>` to the signed-in user's access, as rpc/query answers. */
  { kind: 'served'; where: string; served: Record<string, string> } | { kind: 'all'; why: string };

const HELP_TIMEOUT_SECONDS = 5;

export async function helpScope(flags: ConnectionFlags): Promise<HelpScope> {
  const { openClient, resolveTarget } = await import('./session.ts');
  let target: ReturnType<typeof resolveTarget>;
  try {
    target = resolveTarget(flags);
  } catch {
    return { kind: 'all', why: 'no connection configured (--url, --profile or HOSTADM_URL); a host may serve fewer' };
  }
  const env = process.env;
  const canSignIn = target.bridge
    ? target.keyPath !== undefined && existsSync(target.keyPath)
    : env.HOSTADM_TOKEN !== undefined ||
      env.HOSTADM_PASSWORD !== undefined ||
      (target.keyPath !== undefined && existsSync(target.keyPath)) ||
      readToken(target.tokenKey, target.url, target.user ?? '') !== undefined;
  if (!canSignIn) return { kind: 'all', why: `not signed in to ${target.url} (hostadm login, or HOSTADM_PASSWORD); a host may serve fewer` };
  try {
    const session = await openClient({ ...flags, timeout: Math.min(flags.timeout ?? HELP_TIMEOUT_SECONDS, HELP_TIMEOUT_SECONDS) });
    try {
      const served = (await session.client.request('rpc', 'query', {})) as Record<string, string>;
      return { kind: 'served', where: target.url, served };
    } finally {
      await session.close();
    }
  } catch (err) {
    return { kind: 'all', why: `could not ask ${target.url} which it serves (${err instanceof Error ? err.message : String(err)})` };
  }
}
