/** `hostadm login` / `hostadm logout`: sign in and cache the token; end the session and forget it. */
import type { ConnectionOptions } from '../client-commands.ts';
import { deleteToken, readToken } from '../lib/config.ts';
import { runCommand } from '../lib/exit.ts';
import { openClient, resolveTarget } from '../lib/session.ts';
import { connect } from '../../../sdk/src/node.ts';
import { HostadmRequestError } from '../../../sdk/src/errors.ts';

export async function runLogin(opts: ConnectionOptions): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const s = session.client.session!;
      const how = s.method === 'token' ? 'resumed the cached session' : `signed in with ${s.method === 'key' ? 'the key' : 'the password'}`;
      process.stdout.write(`${how} at ${session.target.url}${session.target.user ? ` as ${session.target.user}` : ''}; the token stays valid ${s.ttlSeconds} s after the last command\n`);
    } finally {
      await session.close();
    }
  });
}

export async function runLogout(opts: ConnectionOptions): Promise<void> {
  await runCommand(async () => {
    const target = resolveTarget(opts);
    const cached = readToken(target.tokenKey, target.url, target.user ?? '');
    deleteToken(target.tokenKey);
    if (!cached) {
      process.stdout.write('no cached session\n');
      return;
    }
    // Only the cached token: signing in some other way just to sign out would make no sense.
    let client;
    try {
      client = await connect({ url: target.url, auth: { token: cached.token }, reconnect: false, requestTimeoutMs: (opts.timeout ?? 30) * 1000 });
    } catch (err) {
      if (err instanceof HostadmRequestError && err.code === 401) {
        process.stdout.write('the cached session had already ended; token forgotten\n');
        return;
      }
      throw err;
    }
    try {
      await client.signOut();
    } finally {
      await client.close();
    }
    process.stdout.write(`signed out of ${target.url}\n`);
  });
}
