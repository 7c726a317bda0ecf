/**
 * From flags, environment and profiles to a signed-in SDK client, with the token cache:
 *   url   --url, HOSTADM_URL, or the profile's
 *   user  --user, HOSTADM_USER, or the profile's
 *   key   --key, HOSTADM_KEY, or the profile's
 *   profile  --profile, HOSTADM_PROFILE, or the default profile when no URL was given
 * Sign-in tries, in order: HOSTADM_TOKEN, the cached token (auth_token), the key, the password
 * (HOSTADM_PASSWORD, or a prompt when standard input is a terminal). A successful sign-in is cached for the next command.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HandshakeError } from '@hostadm/shared/crypto/index.ts';
import { bridgeTransport, HostadmClient, NodeWebSocket, type AuthMethod, type BridgeTicketStore, type TransportFactory } from '../../../sdk/src/node.ts';
import { HostadmRequestError, KeyNotRegisteredError } from '../../../sdk/src/errors.ts';
import { clientKeyIds } from '../../../sdk/src/bridge-session.ts';
import { createHash, createPublicKey } from 'node:crypto';
import { type BridgeSignInTicket, primeBridgeTicketProof } from '@hostadm/shared/crypto/bridge-ticket.ts';
import { CliError, EXIT, usageError } from './exit.ts';
import {
  certPathFor,
  configDir,
  deleteBridgeTicket,
  deleteTicket,
  deleteToken,
  isEnrolled,
  keyPaths,
  knownHostEntry,
  markEnrolled,
  loadConfig,
  normalizeBridgeUrl,
  loadKnownHosts,
  pinHostKey,
  readBridgeTicket,
  readTicket,
  readToken,
  tokenKey,
  writeBridgeTicket,
  writeTicket,
  writeToken,
  type Prefetching,
  type Profile,
  ticketFile,
} from './config.ts';
import { canPrompt, promptHidden } from './prompt.ts';

export interface ConnectionFlags {
  profile?: string;
  url?: string;
  /** Through a bridge: its address, the host (nickname, hostname or fingerprint), the expected host key. */
  bridge?: string;
  host?: string;
  hostKey?: string;
  user?: string;
  key?: string;
  /** A client join token for the bridge (enrolls the key on the first connection), or a file holding it. */
  join?: string;
  joinFile?: string;
  /** Seconds. */
  timeout?: number;
}

export interface Target {
  profile: string | undefined;
  /** The agent's address, or `bridge <url> host <host>` for a bridge target (messages, token cache). */
  url: string;
  /** Set for a connection through a bridge. */
  bridge?: { url: string; host: string };
  user: string | undefined;
  keyPath: string | undefined;
  tokenKey: string;
}

export function resolveTarget(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Target {
  const explicitUrl = flags.url ?? env.HOSTADM_URL;
  const config = loadConfig();
  const profileName = flags.profile ?? env.HOSTADM_PROFILE ?? (explicitUrl ? undefined : config.default);
  let profile: Profile | undefined;
  if (profileName !== undefined) {
    profile = config.profiles[profileName];
    if (!profile) {
      const known = Object.keys(config.profiles);
      throw usageError(
        `no profile named ${profileName}`,
        known.length ? `profiles: ${known.join(', ')}` : 'add one: hostadm profile add NAME --url URL --user USER',
      );
    }
  }
  const bridgeUrl = flags.bridge ?? env.HOSTADM_BRIDGE ?? (explicitUrl ? undefined : profile?.bridge);
  if (bridgeUrl !== undefined) {
    const host = flags.host ?? env.HOSTADM_HOST ?? profile?.host;
    if (!host) throw usageError('--bridge needs --host NAME|SHA256:FINGERPRINT (the host behind the bridge)');
    if (!/^wss?:\/\/[^\s/]+/.test(bridgeUrl)) throw usageError(`not a WebSocket URL: ${bridgeUrl} (expected ws://HOST:PORT or wss://HOST:PORT)`);
    // The default key (hostadm keys new) when none is named: a bridge always signs in with a key.
    const keyPath = flags.key ?? env.HOSTADM_KEY ?? profile?.key ?? (existsSync(keyPaths('default').key) ? keyPaths('default').key : undefined);
    if (!keyPath) throw usageError('a connection through a bridge signs in with a key: make one with hostadm keys new, or give --key FILE');
    const user = flags.user ?? env.HOSTADM_USER ?? profile?.user;
    const normalized = normalizeBridgeUrl(bridgeUrl);
    const url = `bridge ${normalized} host ${host}`;
    return { profile: profileName, url, bridge: { url: normalized, host }, user, keyPath, tokenKey: tokenKey(profileName, url, user ?? '') };
  }
  const url = explicitUrl ?? profile?.url;
  if (!url) {
    throw usageError('no agent to talk to', 'give --url ws://HOST:PORT (or HOSTADM_URL), or add a profile: hostadm profile add NAME --url URL --user USER');
  }
  if (!/^wss?:\/\/[^\s/]+/.test(url)) throw usageError(`not a WebSocket URL: ${url} (expected ws://HOST:PORT or wss://HOST:PORT)`);
  const user = flags.user ?? env.HOSTADM_USER ?? profile?.user;
  const keyPath = flags.key ?? env.HOSTADM_KEY ?? profile?.key;
  return { profile: profileName, url, user, keyPath, tokenKey: tokenKey(profileName, url, user ?? '') };
}

export interface OpenOptions {
  /** `none`: do not sign in (identify). */
  auth?: 'required' | 'none';
  /** Long-running commands (events, waiting for jobs) reconnect; one-shot calls fail fast. */
  reconnect?: boolean;
  /**
   * The command's first request, made while the connection opens: a resumed bridge channel sends it
   * in its proof's flight, one round trip sooner than after the opening (OpenClient.first).
   */
  first?: (client: HostadmClient) => Promise<unknown>;
}

export interface OpenClient {
  client: HostadmClient;
  target: Target;
  /** Closes the client and refreshes the token cache. */
  close(): Promise<void>;
  /** The reply to OpenOptions.first (only when it was given and the connection opened). */
  first?: Promise<unknown>;
}

export async function openClient(flags: ConnectionFlags, options: OpenOptions = {}): Promise<OpenClient> {
  const target = resolveTarget(flags);
  const timeoutMs = (flags.timeout ?? 30) * 1000;
  // Through a bridge the channel proves the key; a password is for a host that does not know it yet.
  const auth = options.auth === 'none' ? [] : target.bridge ? channelPasswordMethods(target) : authMethods(target);
  let client: HostadmClient;
  let first: Promise<unknown> | undefined;
  try {
    const bridge = target.bridge ? await bridgeFactory(target, flags) : undefined;
    client = new HostadmClient({
      webSocket: NodeWebSocket,
      ...(bridge ? { transport: bridge.factory } : { url: target.url }),
      auth,
      requestTimeoutMs: timeoutMs,
      connectTimeoutMs: Math.min(timeoutMs, 10_000),
      // Long-running commands ride out a restart of the agent (about a minute of attempts).
      reconnect: options.reconnect ? { maxAttempts: 12 } : false,
    });
    const opening = client.open();
    // From the first turn after the connection's first write (the poll that sends the upgrade request).
    if (bridge) setImmediate(bridge.prime);
    first = options.first?.(client);
    // A failed opening fails the first request too; the opening's error is the one reported.
    first?.catch(() => undefined);
    await opening;
  } catch (err) {
    if (err instanceof Error && err.cause instanceof CliError) throw err.cause;
    const mismatch = hostKeyMismatch(err);
    if (mismatch) {
      throw new CliError(
        EXIT.auth,
        `host key mismatch for ${target.url}: pinned ${mismatch.pinned}, presented ${mismatch.presented}; possible interception, not connecting`,
        `if the host key really changed, remove its entry from ${join(configDir(), 'known_hosts.json')}`,
      );
    }
    if (err instanceof KeyNotRegisteredError) {
      throw new CliError(
        EXIT.auth,
        err.message,
        `sign in once with a password and register the key: hostadm login --bridge ${target.bridge?.url ?? 'URL'} --host ${target.bridge?.host ?? 'NAME'} --user NAME\n` +
          `(or have an administrator run on the host: hostadm agent keys authorize ${md5OfKeyFile(target.keyPath)} --user NAME)`,
      );
    }
    if (err instanceof HostadmRequestError && err.code === 401) {
      deleteToken(target.tokenKey);
      throw new CliError(EXIT.auth, `sign-in to ${target.url}${target.user ? ` as ${target.user}` : ''} failed (401 Unauthorized)`);
    }
    throw err;
  }
  const save = () => {
    const session = client.session;
    if (!session || options.auth === 'none') return;
    writeToken(target.tokenKey, {
      url: target.url,
      user: target.user ?? '',
      token: session.token,
      ttlSeconds: session.ttlSeconds,
      expiresAt: session.lastUsedAt + session.ttlSeconds * 1000,
    });
  };
  if (!target.bridge) save();
  if (options.reconnect) {
    client.on('disconnect', (info) => process.stderr.write(`hostadm: connection to ${target.url} lost (code ${info.code}); reconnecting\n`));
    client.on('reconnect', () => process.stderr.write('hostadm: reconnected; session resumed\n'));
  }
  return {
    client,
    target,
    ...(first ? { first } : {}),
    async close() {
      if (!target.bridge) save();
      await client.close();
    },
  };
}

function authMethods(target: Target): AuthMethod[] {
  const methods: AuthMethod[] = [];
  // A token handed over by a script (a session opened elsewhere), then the cached one.
  if (process.env.HOSTADM_TOKEN) methods.push({ token: process.env.HOSTADM_TOKEN });
  const cached = readToken(target.tokenKey, target.url, target.user ?? '');
  if (cached) methods.push({ token: cached.token });
  if (target.keyPath) {
    if (!existsSync(target.keyPath)) throw usageError(`key file not found: ${target.keyPath}`);
    methods.push({ key: { privatePem: readFileSync(target.keyPath, 'utf8') } });
  }
  if (target.user) {
    const fromEnv = process.env.HOSTADM_PASSWORD;
    if (fromEnv !== undefined) methods.push({ username: target.user, password: fromEnv });
    else if (canPrompt()) {
      const user = target.user;
      methods.push({ username: user, password: () => promptHidden(`Password for ${user} at ${target.url}: `) });
    }
  }
  if (methods.length === 0) {
    throw new CliError(
      EXIT.auth,
      `no way to sign in to ${target.url}${target.user ? ` as ${target.user}` : ''}`,
      target.user
        ? 'set HOSTADM_PASSWORD, use --key FILE, or run on a terminal to be asked for the password'
        : 'give --user (or HOSTADM_USER, or a profile with a user), or --key FILE',
    );
  }
  return methods;
}

/** The password to sign in with on a bridge channel whose host does not know the key (asked only then). */
function channelPasswordMethods(target: Target): AuthMethod[] {
  if (!target.user) return [];
  const fromEnv = process.env.HOSTADM_PASSWORD;
  if (fromEnv !== undefined) return [{ username: target.user, password: fromEnv }];
  if (!canPrompt()) return [];
  const user = target.user;
  return [{ username: user, password: () => promptHidden(`Password for ${user} at ${target.url} (checked by the host; the bridge sees none of it): `) }];
}

/** The md5_key of a key file's certificate, for hints ('MD5' when it cannot be read). */
function md5OfKeyFile(keyPath: string | undefined): string {
  try {
    const spki = createPublicKey(readFileSync(certPathFor(keyPath ?? ''), 'utf8'))
      .export({ type: 'spki', format: 'pem' })
      .toString();
    return createHash('md5').update(spki, 'utf8').digest('base64');
  } catch {
    return 'MD5';
  }
}

/** A join token from --join, --join-file or HOSTADM_JOIN_TOKEN (one way only), or undefined. */
export function joinTokenFrom(flags: { join?: string; joinFile?: string }): string | undefined {
  const given = [flags.join !== undefined, flags.joinFile !== undefined, process.env.HOSTADM_JOIN_TOKEN !== undefined].filter(Boolean).length;
  if (given > 1) throw usageError('give the join token one way: --join, --join-file or HOSTADM_JOIN_TOKEN');
  if (flags.joinFile !== undefined) {
    if (!existsSync(flags.joinFile)) throw usageError(`join token file not found: ${flags.joinFile}`);
    const token = readFileSync(flags.joinFile, 'utf8').split(/\r?\n/)[0]?.trim() ?? '';
    if (!token) throw usageError(`the join token file ${flags.joinFile} is empty`);
    return token;
  }
  return flags.join ?? process.env.HOSTADM_JOIN_TOKEN;
}

/**
 * The bridge's own sign-in (docs/bridge-protocol.md §2.3): the ticket a key sign-in left in a 0600
 * file is presented by the next command instead of an RSA signature; a refused one is said on stderr
 * and the key sign-in follows.
 */
export function bridgeSignInTickets(
  bridgeUrl: string,
  md5: string,
): { signInTickets: BridgeTicketStore & Prefetching<BridgeSignInTicket>; onSignInTicketRefused: (message: string) => void } {
  return {
    signInTickets: ticketFile({
      read: () => readBridgeTicket(bridgeUrl, md5),
      write: (ticket) => writeBridgeTicket(bridgeUrl, md5, ticket),
      remove: () => deleteBridgeTicket(bridgeUrl, md5),
    }),
    onSignInTicketRefused: (message) => process.stderr.write(`hostadm: ${message}\n`),
  };
}

/** The HandshakeError behind a host-key mismatch, anywhere in the cause chain. */
function hostKeyMismatch(err: unknown): { pinned: string; presented: string } | null {
  for (let e: unknown = err, i = 0; e instanceof Error && i < 5; e = e.cause, i++) {
    if (e instanceof HandshakeError && e.reason === 'host-key-mismatch' && e.fingerprints) return e.fingerprints;
  }
  return null;
}

/**
 * The bridge transport for a bridge target: the profile's key, the host key pinned in known_hosts.json;
 * on first use the fingerprint is shown and confirmed on a terminal (y/N), or must match --host-key /
 * HOSTADM_ACCEPT_HOST_KEY when not interactive. An accepted key is pinned.
 */
async function bridgeFactory(target: Target, flags: ConnectionFlags): Promise<{ factory: TransportFactory; prime: () => void }> {
  const bridge = target.bridge!;
  const keyPath = target.keyPath!;
  if (!existsSync(keyPath)) throw usageError(`key file not found: ${keyPath}`);
  const certPath = certPathFor(keyPath);
  if (!existsSync(certPath)) throw usageError(`certificate not found next to the key: ${certPath} (hostadm keys new makes both)`);
  const entry = loadKnownHosts()[knownHostEntry(bridge.url, bridge.host)];
  const expected = flags.hostKey ?? process.env.HOSTADM_ACCEPT_HOST_KEY;
  const key = { privatePem: readFileSync(keyPath, 'utf8'), certPem: readFileSync(certPath, 'utf8') };
  // The SDK's own computation, which it memoizes for the sign-in: the certificate is parsed once, without OpenSSL's X.509 (~1 ms).
  const keyMd5 = (await clientKeyIds(key)).md5;
  // A key this machine already enrolled there needs no token: a spent one would only be refused.
  const joinToken = isEnrolled(bridge.url, keyMd5) ? undefined : joinTokenFrom(flags);
  const tickets = ticketFile({
    read: () => readTicket(target.tokenKey),
    write: (ticket) => writeTicket(target.tokenKey, ticket),
    remove: () => deleteTicket(target.tokenKey),
  });
  const signIn = bridgeSignInTickets(bridge.url, keyMd5);
  // Work the connection needs later, done in its waits, one step per turn of the event loop and after
  // any input that arrived meanwhile (setImmediate runs after the poll): the sign-in ticket read and
  // its secret imported (needed at the bridge's identify), then stdout, where the reply is printed
  // (Node makes it on first use, ~0.3 ms). The SDK starts a resumption itself once the upgrade request
  // has left (bridge-transport.ts).
  const steps = [
    () => {
      const signInTicket = signIn.signInTickets.prefetch();
      if (signInTicket) primeBridgeTicketProof(signInTicket);
    },
    () => process.stdout.writable,
  ];
  const prime = () => {
    try {
      steps.shift()?.();
    } catch {
      // Only work done ahead: the SDK reads and makes what it needs itself.
    }
    if (steps.length > 0) setImmediate(prime);
  };
  const factory = bridgeTransport({
    onEnrolled: () => markEnrolled(bridge.url, keyMd5),
    bridgeUrl: bridge.url,
    ...(joinToken !== undefined ? { joinToken } : {}),
    host: bridge.host.startsWith('SHA256:') ? { fingerprint: bridge.host } : { name: bridge.host },
    key,
    ...(entry ? { pinnedHostKey: entry.hostKey } : {}),
    // The next command resumes the channel with this ticket (no RSA); a used one is deleted at once.
    tickets,
    ...signIn,
    onHostKey: async (fingerprint, hostKey) => {
      let accepted = false;
      if (expected !== undefined) {
        if (expected !== fingerprint) {
          throw new CliError(EXIT.auth, `host key mismatch for ${target.url}: expected ${expected}, presented ${fingerprint}; not connecting`);
        }
        accepted = true;
      } else if (canPrompt()) {
        process.stderr.write(
          `The host ${bridge.host} behind ${bridge.url} presents the host key\n  ${fingerprint}\nCompare it with the fingerprint the agent printed at start.\n`,
        );
        // Loaded here, on a terminal's first contact only: readline is five modules every command would load.
        const { createInterface } = await import('node:readline/promises');
        const rl = createInterface({ input: process.stdin, output: process.stderr });
        try {
          accepted = /^y(es)?$/i.test((await rl.question('Trust this host key and pin it? (y/N) ')).trim());
        } finally {
          rl.close();
        }
        if (!accepted) throw new CliError(EXIT.auth, `host key ${fingerprint} not accepted`);
      } else {
        throw new CliError(
          EXIT.auth,
          `the host key of ${bridge.host} behind ${bridge.url} is not pinned yet (it presents ${fingerprint})`,
          'check it against the fingerprint the agent printed, then pass --host-key SHA256:... or set HOSTADM_ACCEPT_HOST_KEY',
        );
      }
      pinHostKey(bridge.url, bridge.host, hostKey, fingerprint);
      return accepted;
    },
    webSocket: NodeWebSocket,
  });
  return { factory, prime };
}
