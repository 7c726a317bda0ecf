/**
 * The REST transport (a Hono app): `PUT /admin/<class>` (or the original's `/sysadm/<class>`) and `PUT /rpc/<name>` with the `args` as
 * the body, answered with `{"args": ...}` and the error code as the HTTP status. Each call
 * authenticates itself with HTTP Basic or `Authorization: Bearer <token>`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { HostadmError, toHostadmError } from '@hostadm/shared/protocol/errors.ts';
import { jsonNestingExceeds } from '@hostadm/shared/protocol/json-depth.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import type { ReplyEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { Connection } from './context.ts';
import type { Pipeline } from './pipeline.ts';
import { runAuthOperation } from './auth-ops.ts';
import { tlsClientKeyOf } from './tls-client-key.ts';

export function createRestApp(pipeline: Pipeline): Hono {
  const { services } = pipeline;
  const app = new Hono();

  const errorResponse = (c: Context, err: HostadmError) => c.json({ args: err.toArgs() }, err.status as ContentfulStatusCode);

  app.use(
    '*',
    bodyLimit({
      maxSize: services.config.maxFrameBytes,
      onError: (c) => errorResponse(c, new HostadmError('PAYLOAD_TOO_LARGE', `request body over ${services.config.maxFrameBytes} bytes`)),
    }),
  );

  const handle = async (c: Context, namespace: 'admin' | 'sysadm' | 'rpc') => {
    const address = getConnInfo(c).remote.address ?? '';
    if (services.blacklist.isBlocked(address)) {
      return errorResponse(c, new HostadmError('TOO_MANY_REQUESTS', 'Too many failed sign-ins from this address; try again later'));
    }
    let body: unknown = {};
    const text = await c.req.text();
    if (jsonNestingExceeds(text, LIMITS.maxJsonDepth)) {
      return errorResponse(c, new HostadmError('BAD_REQUEST', `the request body is nested deeper than ${LIMITS.maxJsonDepth} levels`));
    }
    if (text.trim() !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        return errorResponse(c, new HostadmError('BAD_REQUEST', 'the request body is not valid JSON'));
      }
    }
    // The original accepted a whole envelope as the body too; use its args then.
    if (body && typeof body === 'object' && !Array.isArray(body) && 'args' in body && 'name' in body) body = body.args;

    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    const connection: Connection = { id: randomUUID(), transport: 'rest', address, tlsClientKey: tlsClientKeyOf(incoming?.socket), token: null };
    const name = c.req.param('name') ?? '';
    let signedInForThisCall = false;
    // The auth operations authenticate themselves; a header on them would only mint a throwaway session.
    const isAuthCall = namespace === 'rpc' && (name === 'auth' || name === 'auth_token' || name === 'auth_ssl');
    try {
      if (!isAuthCall) signedInForThisCall = await authenticateHeader(c.req.header('authorization'), connection, pipeline);
    } catch (cause) {
      return errorResponse(c, toHostadmError(cause));
    }
    const reply = await pipeline.handle(connection, { id: 'rest', namespace, name, args: body });
    // A Basic sign-in lives for this call only; a Bearer token stays the caller's.
    if (signedInForThisCall && connection.token) services.sessions.revoke(connection.token);
    return restReply(c, reply);
  };

  app.on(['PUT', 'POST'], '/admin/:name', (c) => handle(c, 'admin'));
  app.on(['PUT', 'POST'], '/rpc/:name', (c) => handle(c, 'rpc'));
  // The original's namespace for the classes (docs/protocol.md, "The original's names").
  app.on(['PUT', 'POST'], '/sysadm/:name', (c) => handle(c, 'sysadm'));
  app.all('/admin/:name', (c) => methodNotAllowed(c));
  app.all('/sysadm/:name', (c) => methodNotAllowed(c));
  app.all('/rpc/:name', (c) => methodNotAllowed(c));
  app.notFound((c) => errorResponse(c, new HostadmError('NOT_FOUND', `no such endpoint ${c.req.path}; use PUT /admin/<class> or PUT /rpc/<name>`)));
  app.onError((err, c) => {
    services.logger.error({ err }, 'REST request failed');
    return errorResponse(c, toHostadmError(err));
  });
  return app;
}

function methodNotAllowed(c: Context) {
  c.header('Allow', 'PUT, POST');
  return c.json({ args: { code: 405, message: 'Method Not Allowed: use PUT' } }, 405);
}

function restReply(c: Context, reply: ReplyEnvelope) {
  if (reply.name === 'error') return c.json({ args: reply.args }, reply.args.code as ContentfulStatusCode);
  return c.json({ args: reply.args }, 200);
}

/**
 * Applies the Authorization header to the call's connection. Returns true when a Basic sign-in
 * created a session just for this call. A wrong Basic password is a failed sign-in like any other.
 */
async function authenticateHeader(header: string | undefined, connection: Connection, pipeline: Pipeline): Promise<boolean> {
  if (!header) return false;
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (/^bearer$/i.test(scheme ?? '')) {
    connection.token = value;
    return false;
  }
  if (/^basic$/i.test(scheme ?? '')) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new HostadmError('UNAUTHORIZED');
    await runAuthOperation(
      'auth',
      { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) },
      { services: pipeline.services, connection, session: null, audit: { detail: '' } },
    );
    return true;
  }
  throw new HostadmError('UNAUTHORIZED');
}
