/** rpc operations without an `action`: the auth family, identify and query. */
import { z } from 'zod';
import { defineOperation, lazy } from '../protocol/define.ts';
import { str } from './fields.ts';

/** `[token, secondsLeft]`: the success reply of every auth method. */
export const tokenReply = lazy(() =>
  z
    .tuple([
      z.string().describe('Session token; present it again with auth_token after reconnecting'),
      z.number().int().describe('Seconds the token stays valid without traffic (slides on every successful request)'),
    ])
    .describe('The session token and its remaining validity'),
);

export const auth = defineOperation({
  namespace: 'rpc',
  name: 'auth',
  description: 'Sign in with a user name and password (server only)',
  args: () =>
    z.strictObject({
      username: z.string().min(1).max(255).describe('Account name on the host'),
      password: z.string().max(1024).describe('The account password'),
    }),
  reply: tokenReply,
  access: 'none',
});

export const authToken = defineOperation({
  namespace: 'rpc',
  name: 'auth_token',
  description: 'Resume a session with a token from an earlier sign-in (for example after reconnecting)',
  args: () => z.strictObject({ token: z.string().min(1).max(256).describe('A token from an earlier successful sign-in') }),
  reply: tokenReply,
  access: 'none',
});

/** Stage 1 (`args` = empty string), stage 2 (`encrypted_string` or `signature`), or the bridge's md5_key stage 1. */
export const authSslArgs = lazy(() =>
  z.union([
    z.literal('').describe('Stage 1: ask for a test string'),
    z
      .strictObject({
        encrypted_string: z.string().min(1).max(4096).describe('Stage 2, original form: base64 of the RSA PKCS#1 v1.5 private-key encryption of test_string'),
      })
      .describe('Stage 2, original form'),
    z
      .strictObject({
        signature: z.string().min(1).max(4096).describe('Stage 2, modern form: base64 RSASSA-PKCS1-v1_5/SHA-256 or Ed25519 signature of test_string'),
      })
      .describe('Stage 2, modern form'),
    z
      .strictObject({
        action: z.literal('auth_ssl').describe('Always `auth_ssl`'),
        md5_key: z.string().min(1).max(64).describe('base64 MD5 of the registered key to authenticate as'),
        channel: z.literal('hsc1').describe('The secure channel asked for (docs/bridge-protocol.md §3)').optional(),
        client_eph: z.string().max(64).describe("base64 of the client's 32-byte X25519 ephemeral public key").optional(),
        client_nonce: z.string().max(64).describe('base64 of 32 random bytes').optional(),
        pub_key: z
          .string()
          .max(8192)
          .describe(
            'base64 PEM certificate or public key of md5_key, for a host that does not know the key yet (password sign-in or a key authorized on the host)',
          )
          .optional(),
      })
      .describe('Stage 1 through a bridge (C1 of the hsc1 channel)'),
  ]),
);

export const authSsl = defineOperation({
  namespace: 'rpc',
  name: 'auth_ssl',
  description: 'Sign in with a registered key: stage 1 returns a test string, stage 2 proves the private key',
  args: authSslArgs,
  reply: () =>
    z.union([
      z.object({ test_string: str('Random letters and digits to sign within 30 seconds') }).describe('Stage 1 reply'),
      z
        .object({
          test_string: str('The test string, encrypted to the key matching md5_key, base64'),
          new_ssl_key: z.array(z.string()).describe('Pieces of the session key material, encrypted to the same key'),
        })
        .describe('Stage 1 reply through a bridge'),
      tokenReply(),
      z
        .object({
          signed_in: z.literal(false).describe('The key is proven but not registered on this host'),
          sign_in: z.array(z.literal('password')).describe('How the channel may still be signed in'),
          message: str('What to do next'),
        })
        .describe('C2 reply through a bridge for a key this host does not know: sign in with rpc/auth on the channel, then register the key'),
    ]),
  access: 'none',
});

export const authClear = defineOperation({
  namespace: 'rpc',
  name: 'auth_clear',
  description: "Sign out: the connection's token is invalidated everywhere",
  args: () => z.unknown().describe('Ignored'),
  // spec: not shown — chosen: {result: "success"}, so a client can await sign-out like any request.
  reply: () => z.object({ result: z.literal('success').describe('Always `success`') }),
  access: 'none',
});

export const identify = defineOperation({
  namespace: 'rpc',
  name: 'identify',
  description: 'Say what this system is (server, bridge or client); needs no authentication',
  args: () => z.unknown().describe('Ignored (the spec sends an empty object)'),
  reply: () =>
    z.object({
      type: z.enum(['server', 'bridge', 'client']).describe('The role of the answering system'),
      hostname: str('Short host name'),
      host_key: str('Agents only: base64 of the raw Ed25519 host public key (docs/bridge-protocol.md)').optional(),
      host_key_fingerprint: str('Agents only: `SHA256:<base64url>` of the host key, for pinning').optional(),
    }),
  access: 'none',
});

export const query = defineOperation({
  namespace: 'rpc',
  name: 'query',
  description: 'List the subsystems available to the caller on this host, with read or read/write access',
  args: () => z.unknown().describe('Ignored (any data)'),
  reply: () =>
    z
      .record(
        z.string().describe('`<namespace>/<class>`, for example `admin/users`'),
        z.enum(['read', 'read/write']).describe("The caller's access to that subsystem"),
      )
      .describe('Subsystems available to the caller'),
  access: 'authenticated',
});
