/** `hostadm login` / `hostadm logout`: sign in and cache the token; end the session and forget it. */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '../client-commands.ts';
import { certPathFor, deleteToken, loadConfig, PROFILE_NAME, readToken, saveConfig } from '../lib/config.ts';
import { usageError } from '../lib/exit.ts';
import { runCommand } from '../lib/exit.ts';
import { openClient, resolveTarget } from '../lib/session.ts';
import { connect } from '../../../sdk/src/node.ts';
import { HostadmRequestError } from '../../../sdk/src/errors.ts';

export async function runLogin(opts: ConnectionOptions & { saveProfile?: string }): Promise<void> {
  if (opts.bridge ?? process.env.HOSTADM_BRIDGE) {
    await runCommand(() => bridgeLogin(opts));
    return;
  }
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const s = session.client.session!;
      const how = s.method === 'token' ? 'resumed the cached session' : `signed in with ${s.method === 'key' ? 'the key' : 'the password'}`;
      process.stdout.write(
        `${how} at ${session.target.url}${session.target.user ? ` as ${session.target.user}` : ''}; the token stays valid ${s.ttlSeconds} s after the last command\n`,
      );
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
    let client: Awaited<ReturnType<typeof connect>>;
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

/**
 * The first contact with a host behind a bridge, in one command: enroll the key at the bridge (a join
 * token, once), confirm and pin the host key, sign in by key, or by password inside the channel when
 * the host does not know the key yet and then register it there, and save a profile so that later
 * commands need only `--profile NAME` (or nothing, when it is the default).
 */
async function bridgeLogin(opts: ConnectionOptions & { saveProfile?: string }): Promise<void> {
  const config = loadConfig();
  // `--profile NAME` for a profile that does not exist yet names the one to save.
  const creating = opts.profile !== undefined && config.profiles[opts.profile] === undefined;
  const flags = creating ? { ...opts, profile: undefined } : opts;
  const session = await openClient(flags);
  const { target, client } = session;
  const bridge = target.bridge!;
  try {
    const s = client.session;
    if (!s) throw usageError(`signed in to nothing at ${target.url}`);
    if (s.method === 'password') {
      const keyPath = target.keyPath!;
      await client.registerKey({ privatePem: readFileSync(keyPath, 'utf8'), certPem: readFileSync(certPathFor(keyPath), 'utf8'), nickname: 'hostadm login' });
      process.stdout.write(
        `signed in as ${target.user} with the password (checked by the host inside the channel) and registered the key ${keyPath} there: from now on it signs in\n`,
      );
    } else {
      process.stdout.write(`signed in with the key ${target.keyPath} at ${target.url}${target.user ? ` (as ${target.user})` : ''}\n`);
    }
  } finally {
    await session.close();
  }
  const name = opts.saveProfile ?? (creating ? opts.profile : undefined) ?? target.profile ?? bridge.host;
  if (!PROFILE_NAME.test(name)) throw usageError(`cannot save a profile named ${name}: use letters, digits, _ . - (give --save-profile NAME)`);
  const fresh = loadConfig();
  fresh.profiles[name] = { bridge: bridge.url, host: bridge.host, key: target.keyPath!, ...(target.user ? { user: target.user } : {}) };
  if (!fresh.default || !fresh.profiles[fresh.default]) fresh.default = name;
  saveConfig(fresh);
  process.stdout.write(`profile ${name} saved${fresh.default === name ? ' (the default)' : ''}: hostadm ps --profile ${name}\n`);
}
