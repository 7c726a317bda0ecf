/**
 * `settings`: SSL key registration, served under both `admin/settings` (the spec) and
 * `rpc/settings` (the original code), with both action spellings (see the contract's aliases).
 */
import { adminSettings, rpcSettings } from '@hostadm/shared/api/settings.ts';
import { badRequest, forbidden } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import { parsePublicKey, verifyProof } from '../server/keys.ts';
import type { AuthedContext } from '../server/context.ts';

type CertDetails = { nickname: string; email: string; registered: string; md5_key: string; algorithm: 'rsa' | 'ed25519' };

async function listCerts(_args: Record<string, never>, ctx: AuthedContext) {
  const { session, services } = ctx;
  const keys = services.keys.list(session.level === 'full' ? undefined : session.user);
  const out: Record<string, Record<string, CertDetails>> = {};
  for (const k of keys) {
    (out[k.user] ??= {})[k.pubKey] = {
      nickname: k.nickname,
      email: k.email,
      registered: k.registeredAt.toISOString(),
      md5_key: k.md5Key,
      algorithm: k.algorithm,
    };
  }
  return out;
}

async function registerCert(args: { pub_key: string; nickname?: string; email?: string; proof?: string }, ctx: AuthedContext) {
  const pubKey = args.pub_key.replace(/\s+/g, '');
  const parsed = parsePublicKey(pubKey);
  // "Must match a certificate loaded in the current connection": the key is loaded when it is the
  // TLS client key, or when the caller signs this session's token with it (proof of possession).
  const loadedByTls = ctx.connection.tlsClientKey === parsed.spkiPem;
  const proven =
    args.proof !== undefined &&
    (verifyProof(parsed.key, 'register-proof', ctx.session.token, args.proof, 'original') ||
      verifyProof(parsed.key, 'register-proof', ctx.session.token, args.proof, 'signature'));
  if (!loadedByTls && !proven) {
    throw badRequest('pub_key: the key is not loaded on this connection; send `proof` (the session token signed with the key)', [
      { field: 'proof', message: 'required: the session token signed with the private key of pub_key' },
    ]);
  }
  ctx.services.keys.register(ctx.session.user, pubKey, parsed, { nickname: args.nickname, email: args.email });
  return {};
}

async function revokeCert(args: { pub_key: string; user?: string }, ctx: AuthedContext) {
  const owner = args.user ?? ctx.session.user;
  if (owner !== ctx.session.user && ctx.session.level !== 'full') {
    throw forbidden("revoking another user's key needs full access");
  }
  const md5 = ctx.services.keys.revoke(owner, args.pub_key);
  if (!md5) {
    throw badRequest(`pub_key: no such key registered for ${owner}`, [{ field: 'pub_key', message: 'not registered for that user' }]);
  }
  // A revoked key stops working at once, including sessions that signed in with it.
  ctx.services.sessions.revokeKey(md5);
  return {};
}

export const adminSettingsImpl = implementClass(adminSettings, () => ({
  list_ssl_certs: listCerts,
  register_ssl_cert: registerCert,
  revoke_ssl_cert: revokeCert,
}));

export const rpcSettingsImpl = implementClass(rpcSettings, (services) => ({
  list_ssl_certs: listCerts,
  register_ssl_cert: registerCert,
  revoke_ssl_cert: revokeCert,
  // Full access sees every key's checksum; a limited user only its own (the bridge link asks the store itself).
  list_ssl_checksums: async (_args, ctx) => ({ md5_keys: services.keys.checksums(ctx.session.level === 'full' ? undefined : ctx.session.user) }),
}));
