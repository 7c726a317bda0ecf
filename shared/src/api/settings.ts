/**
 * SSL key registration. The spec puts it under `admin/settings` with `_certificate` spellings;
 * the original code served `rpc/settings` with `_cert` spellings. Both are accepted.
 */
import { z } from 'zod';
import { action, defineClass, lazy } from '../protocol/define.ts';
import { keyedBy, safeName, str, text } from './fields.ts';

const base64 = lazy(() =>
  z
    .string()
    .regex(/^[A-Za-z0-9+/=\s]+$/, 'must be base64')
    .max(16384, 'must be at most 16384 characters'),
);

export const certificateDetails = lazy(() =>
  z
    .object({
      nickname: str('Nickname given at registration (may be empty)'),
      email: str('E-mail address given at registration (may be empty)'),
      registered: str('Registration time, ISO 8601'),
      md5_key: str('base64 MD5 of the key, as listed by list_ssl_checksums'),
      algorithm: z.enum(['rsa', 'ed25519']).describe('Key algorithm'),
    })
    .describe('Details of one registered key'),
);

const certActions = {
  list_ssl_certs: action({
    description: 'List registered keys by user (full access: all users; others: their own)',
    args: () => z.strictObject({}),
    reply: () =>
      keyedBy(
        'User name',
        keyedBy('base64 of the PEM public key', certificateDetails(), "That user's keys"),
        'Registered keys keyed by user, then by base64 public key',
      ),
    access: 'read',
  }),
  register_ssl_cert: action({
    description: 'Register a key for the caller so they can sign in with auth_ssl',
    args: () =>
      z.strictObject({
        pub_key: base64().describe('base64 of the PEM public key or X.509 certificate'),
        nickname: text('A name for the key', 128).optional(),
        email: text('Contact address for the key', 256).optional(),
        proof: base64()
          .describe(
            'Proof that the key is loaded on this connection: the session token signed with the key (original RSA private-encrypt form, RSA-SHA256 or Ed25519), base64. Not needed when the key is the TLS client certificate',
          )
          .optional(),
      }),
    reply: () => z.strictObject({}).describe('Empty on success'),
    access: 'write',
  }),
  revoke_ssl_cert: action({
    description: "Revoke a registered key (another user's only with full access)",
    args: () =>
      z.strictObject({
        pub_key: base64().describe('base64 public key exactly as listed by list_ssl_certs'),
        user: safeName('Owner of the key; default the caller').optional(),
      }),
    reply: () => z.strictObject({}).describe('Empty on success'),
    access: 'write',
  }),
};

const certAliases = {
  list_ssl_certificates: 'list_ssl_certs',
  register_ssl_certificate: 'register_ssl_cert',
  revoke_ssl_certificate: 'revoke_ssl_cert',
} as const;

export const adminSettings = defineClass({
  namespace: 'admin',
  name: 'settings',
  description: 'SSL key registration for key-based sign-in',
  limitedAccess: 'read/write',
  actions: certActions,
  actionAliases: certAliases,
});

export const rpcSettings = defineClass({
  namespace: 'rpc',
  name: 'settings',
  description: "Server information and SSL key registration (the original code's home for the key actions)",
  limitedAccess: 'read/write',
  actions: {
    ...certActions,
    list_ssl_checksums: action({
      description: 'base64 MD5 of every registered key (a bridge uses it to match clients to hosts)',
      args: () => z.strictObject({}),
      reply: () => z.object({ md5_keys: z.array(z.string()).describe('base64 MD5 of each registered PEM public key') }),
      access: 'authenticated',
    }),
  },
  actionAliases: certAliases,
});
