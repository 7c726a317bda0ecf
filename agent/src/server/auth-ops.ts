/**
 * The rpc auth family. Every failure answers the spec's 401 and counts toward the address's
 * blacklist; a failed attempt leaves an existing session on the connection untouched (the
 * original dropped it). Success binds a fresh token to the connection.
 */
import { auth, authSsl, authToken } from '@hostadm/shared/api/rpc.ts';
import { badRequest, HostadmError, unauthorized } from '@hostadm/shared/protocol/errors.ts';
import { accessLevelFor } from './access.ts';
import { verifyProof } from './keys.ts';
import type { RequestContext } from './context.ts';
import type { Session } from './sessions.ts';
import { parseOrThrow } from './validate.ts';

export type AuthOperation = 'auth' | 'auth_token' | 'auth_ssl' | 'auth_clear';

export function isAuthOperation(name: string): name is AuthOperation {
  return name === 'auth' || name === 'auth_token' || name === 'auth_ssl' || name === 'auth_clear';
}

type TokenReply = [string, number];

export async function runAuthOperation(name: AuthOperation, rawArgs: unknown, ctx: RequestContext): Promise<unknown> {
  const { services, connection } = ctx;
  if (name === 'auth_clear') {
    // Only the holder signs out: a connection whose token has moved elsewhere must not end it there.
    const held = connection.token ? services.sessions.lookup(connection.token) : null;
    if (held && (connection.transport === 'rest' || held.connectionId === connection.id)) services.sessions.revoke(held.token);
    connection.token = null;
    services.events.drop(connection.id);
    services.sslChallenges.forget(connection.id);
    return { result: 'success' };
  }
  if (services.blacklist.isBlocked(connection.address)) throw blocked();
  try {
    switch (name) {
      case 'auth':
        return await passwordSignIn(parseOrThrow(auth.args, rawArgs, 'rpc/auth'), ctx);
      case 'auth_token':
        return tokenResume(parseOrThrow(authToken.args, rawArgs, 'rpc/auth_token').token, ctx);
      case 'auth_ssl':
        return await sslSignIn(rawArgs, ctx);
    }
  } catch (err) {
    if (err instanceof HostadmError && err.code === 'UNAUTHORIZED') {
      services.audit.record({ user: '', address: connection.address, transport: connection.transport, namespace: 'rpc', name, action: '', code: 401 });
      if (services.blacklist.recordFailure(connection.address)) {
        services.logger.warn({ address: connection.address }, 'address blacklisted after repeated failed sign-ins');
        // The 401 goes out first; the transport closes the connection after sending it.
        connection.closeAfterReply = { code: 1008, reason: 'Too many failed sign-ins' };
      }
    }
    throw err;
  }
}

function blocked(): HostadmError {
  return new HostadmError('TOO_MANY_REQUESTS', 'Too many failed sign-ins from this address; try again later');
}

async function passwordSignIn(args: { username: string; password: string }, ctx: RequestContext): Promise<TokenReply> {
  const { services, connection } = ctx;
  if (!services.config.allowPasswordAuth) throw unauthorized();
  let ok = false;
  try {
    ok = await services.passwordChecks.run(connection.address, () => services.platform.accounts.verifyPassword(args.username, args.password));
  } catch (err) {
    if (err instanceof HostadmError && err.code === 'TOO_MANY_REQUESTS') throw err;
    // A platform that cannot check passwords is not a wrong password: log it, answer 401, count nothing.
    services.logger.error({ err, user: args.username }, 'password check failed');
    throw new HostadmError('UNAUTHORIZED', 'Unauthorized', { cause: err });
  }
  if (!ok) throw unauthorized();
  return startSession(args.username, 'password', ctx);
}

/**
 * Signs a connection in as the owner of a verified key (direct auth_ssl, a bridge channel's C2, or a
 * bridge channel resumed with a ticket: `resumed`, which the audit line says).
 */
export function startKeySession(user: string, keyMd5: string, ctx: RequestContext, how: 'handshake' | 'resumed' = 'handshake'): Promise<TokenReply> {
  return startSession(user, 'ssl', ctx, keyMd5, how === 'resumed' ? ' (resumed with a ticket)' : '');
}

async function startSession(user: string, method: Session['method'], ctx: RequestContext, keyMd5?: string, detailSuffix = ''): Promise<TokenReply> {
  const { services, connection } = ctx;
  const groups = (await services.platform.accounts.groupsOf(user)) ?? [];
  const level = accessLevelFor(user, groups, services.platform);
  if (!level) throw unauthorized();
  if (connection.token) services.sessions.revoke(connection.token);
  const session = services.sessions.create({ user, level, groups, method, connectionId: connection.id, keyMd5 });
  connection.token = session.token;
  // Every sign-in is kept for the auditor (token resumes continue one and are not new sign-ins).
  services.audit.record({
    user,
    address: connection.address,
    transport: connection.transport,
    namespace: 'rpc',
    name: method === 'ssl' ? 'auth_ssl' : 'auth',
    action: '',
    code: 200,
    detail: method === 'ssl' ? `key ${keyMd5 ?? ''}${detailSuffix}` : 'password',
  });
  return [session.token, services.sessions.secondsLeft(session)];
}

function tokenResume(token: string, ctx: RequestContext): TokenReply {
  const { services, connection } = ctx;
  const session = services.sessions.lookup(token);
  if (!session) throw unauthorized();
  // Resuming moves the token to this connection; the one that held it loses it.
  if (connection.token && connection.token !== token) services.sessions.revoke(connection.token);
  if (session.connectionId !== connection.id) services.events.drop(session.connectionId);
  session.connectionId = connection.id;
  connection.token = session.token;
  services.sessions.touch(session);
  return [session.token, services.sessions.secondsLeft(session)];
}

async function sslSignIn(rawArgs: unknown, ctx: RequestContext): Promise<unknown> {
  const { services, connection } = ctx;
  // The original treated any non-object as stage 1; keep that (null, "", "junk").
  if (connection.transport === 'rest') {
    // The challenge is bound to a connection; a REST call is one, so stage 2 could never follow.
    throw badRequest('auth_ssl needs a WebSocket connection (the test string is bound to it); over REST use Basic or Bearer', [
      { field: '(args)', message: 'not available over REST' },
    ]);
  }
  if (rawArgs === undefined || rawArgs === null || typeof rawArgs !== 'object') {
    return { test_string: services.sslChallenges.issue(connection.id) };
  }
  const args = parseOrThrow(authSsl.args, rawArgs, 'rpc/auth_ssl');
  if (typeof args === 'string') return { test_string: services.sslChallenges.issue(connection.id) };
  if ('md5_key' in args) {
    // The md5_key form sets up the bulk-encrypted channel of a bridge-relayed client; a direct
    // connection has no relay to protect, so it must use the plain two stages.
    throw badRequest('md5_key: the md5_key stage 1 is only accepted on connections relayed by a bridge', [
      { field: 'md5_key', message: 'only on bridge-relayed connections' },
    ]);
  }
  const testString = services.sslChallenges.take(connection.id);
  if (!testString) throw unauthorized();
  const [proof, form] = 'signature' in args ? [args.signature, 'signature' as const] : [args.encrypted_string, 'original' as const];
  const match = services.keys.list().find((k) => verifyProof(k.key, 'agent-signin', testString, proof, form));
  if (!match) throw unauthorized();
  return startKeySession(match.user, match.md5Key, ctx);
}
