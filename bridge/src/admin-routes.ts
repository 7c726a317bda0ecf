/**
 * @module The bridge's admin API (docs/bridge-protocol.md §2.8), shared by every runtime: what
 * `hostadm bridge token|keys list|keys revoke --url` call, so an operator who knows only the bridge's
 * URL and its admin secret (Node: `<data>/admin-secret`; Workers: `wrangler secret put ADMIN_SECRET`)
 * can run them. Every route needs `Authorization: Bearer <admin secret>`; errors are `{error}` JSON.
 *
 * - `GET /admin/keys` → `{keys: [{key_id, md5_key, kind, nickname, algorithm, created_by, created_at,
 *   last_seen_at, revoked_at}]}` (ISO times or null)
 * - `POST /admin/tokens` `{kind, nickname?, ttl_seconds?, created_by?}` → `{token, expires_at, jti, kind, nickname}`
 * - `POST /admin/revoke` `{key: "<key id or md5_key>"}` → `{revoked: {key_id, md5_key, kind, nickname,
 *   revoked_at}, disconnected}`; 404 for an unknown key
 *
 * No runtime imports: this compiles under tsconfig.core.json with the relay core.
 */
import { Hono } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { z } from 'zod';
import { issueJoinToken } from './relay/join-token.ts';
import type { KeyRecord } from './relay/ports.ts';
import type { Relay } from './relay/relay.ts';

/**
 * A key's nickname (and a token's `created_by`): 1–64 letters, digits and `. _ @ + -`, starting with a
 * letter or digit. It is shown to peers and typed as `--host NAME`, so no spaces or shell characters.
 * bridge_enroll itself accepts any string up to 64 characters; tokens are held to this stricter rule.
 */
export const NICKNAME_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N}._@+-]{0,63}$/u;
export const NICKNAME_RULE = '1-64 letters, digits and . _ @ + -, starting with a letter or digit';
/** Join token validity bounds (the CLI's `--ttl`): one second to a year; one hour by default. */
export const MAX_TOKEN_TTL_SECONDS = 365 * 86400;
export const DEFAULT_TOKEN_TTL_SECONDS = 3600;
/** `created_by` of tokens issued through the API when the caller does not say who it is. */
export const ADMIN_API_CREATOR = 'admin-api';

export const tokenRequest = z.strictObject({
  kind: z.enum(['agent', 'client']).describe('What the token enrolls'),
  nickname: z.string().regex(NICKNAME_PATTERN, `nickname: ${NICKNAME_RULE}`).optional().describe('Recorded for the key, shown to matched peers'),
  ttl_seconds: z
    .number()
    .int('ttl_seconds: a whole number of seconds')
    .min(1, 'ttl_seconds: at least 1')
    .max(MAX_TOKEN_TTL_SECONDS, `ttl_seconds: at most ${MAX_TOKEN_TTL_SECONDS} (a year)`)
    .default(DEFAULT_TOKEN_TTL_SECONDS),
  created_by: z.string().regex(NICKNAME_PATTERN, `created_by: ${NICKNAME_RULE}`).optional().describe('Who issues it (recorded on the key)'),
});
export type TokenRequest = z.input<typeof tokenRequest>;

const revokeRequest = z.object({ key: z.string().trim().min(1).max(128) });

/** The JSON shape of a key, as GET /admin/keys and `hostadm bridge keys list --json` print it. */
export function keyJson(k: KeyRecord) {
  return {
    key_id: k.id,
    md5_key: k.md5Key,
    kind: k.kind,
    nickname: k.nickname,
    algorithm: k.algorithm,
    created_by: k.createdBy,
    created_at: iso(k.createdAt),
    last_seen_at: iso(k.lastSeenAt),
    revoked_at: iso(k.revokedAt),
  };
}
export type KeyJson = ReturnType<typeof keyJson>;

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** One line per problem, `field: message`, for the 400 reply. */
function describe(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const field = i.path.join('.');
      if (i.code === 'unrecognized_keys') return `unknown field(s): ${i.keys.join(', ')}`;
      if (i.code === 'invalid_value' && field === 'kind') return 'kind: expected "agent" or "client"';
      return i.message.startsWith(`${field}:`) || !field ? i.message : `${field}: ${i.message}`;
    })
    .join('; ');
}

async function jsonBody(req: { json(): Promise<unknown> }): Promise<unknown> {
  try {
    return await req.json();
  } catch {
    return undefined;
  }
}

/** The /admin routes, to mount at `/admin`. An empty admin secret turns them off (503). */
export function adminRoutes(relay: Relay, adminSecret: string): Hono {
  const admin = new Hono();
  admin.use('*', async (c, next) => {
    if (!adminSecret) return c.json({ error: 'the admin API is off: this bridge has no admin secret (Workers: wrangler secret put ADMIN_SECRET)' }, 503);
    await next();
  });
  admin.use(
    '*',
    bearerAuth({
      token: adminSecret,
      noAuthenticationHeader: { message: { error: 'Unauthorized: send Authorization: Bearer <admin secret>' } },
      invalidAuthenticationHeader: { message: { error: 'expected Authorization: Bearer <admin secret>' } },
      invalidToken: { message: { error: 'Unauthorized: wrong admin secret' } },
    }),
  );

  admin.get('/keys', async (c) => c.json({ keys: (await relay.store.list()).map(keyJson) }));

  admin.post('/tokens', async function adminToken(c) {
    const body = await jsonBody(c.req);
    if (body === undefined) return c.json({ error: 'expected a JSON body {"kind": "agent"|"client", "nickname"?, "ttl_seconds"?}' }, 400);
    const parsed = tokenRequest.safeParse(body);
    if (!parsed.success) return c.json({ error: describe(parsed.error) }, 400);
    if (relay.joinSecret.length === 0) return c.json({ error: 'this bridge has no join secret (Workers: wrangler secret put JOIN_SECRET)' }, 503);
    const { kind, nickname, ttl_seconds: ttlSeconds, created_by: createdBy } = parsed.data;
    const { token, claims } = await issueJoinToken(
      relay.joinSecret,
      { kind, nickname, ttlSeconds, createdBy: createdBy ?? ADMIN_API_CREATOR },
      relay.clock.now(),
    );
    relay.logger.info({ kind, nickname, jti: claims.jti, createdBy: claims.createdBy, expiresAt: claims.expiresAt }, 'join token issued through the admin API');
    return c.json({ token, expires_at: new Date(claims.expiresAt).toISOString(), jti: claims.jti, kind, nickname: nickname ?? null });
  });

  admin.post('/revoke', async function adminRevoke(c) {
    const parsed = revokeRequest.safeParse(await jsonBody(c.req));
    if (!parsed.success) return c.json({ error: 'expected a JSON body {"key": "<key id or md5_key>"}' }, 400);
    const ref = parsed.data.key;
    const result = await relay.revoke(ref);
    if (!result) return c.json({ error: `no key ${ref}` }, 404);
    const { key, disconnected } = result;
    return c.json({
      revoked: { key_id: key.id, md5_key: key.md5Key, kind: key.kind, nickname: key.nickname, revoked_at: new Date(key.revokedAt ?? 0).toISOString() },
      disconnected,
    });
  });

  return admin;
}
