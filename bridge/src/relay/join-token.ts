/**
 * @module One-time enrollment tokens (docs/bridge-protocol.md §2.2): HS256 JWTs signed with the
 * bridge's join secret, `sub: "hostadm-join"`, `kind`, optional `nickname`, `jti`, `exp`, and
 * `created_by` (who issued it, recorded on the key). Single use is enforced by the KeyStore, which
 * stores the `jti` when the token is used. jose runs on WebCrypto, so this works in every runtime.
 */
import { SignJWT, jwtVerify } from 'jose';
import type { PeerKind } from './ports.ts';

export const JOIN_SUBJECT = 'hostadm-join';

export interface JoinClaims {
  kind: PeerKind;
  nickname?: string;
  createdBy: string;
  jti: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export interface IssueOptions {
  kind: PeerKind;
  nickname?: string;
  ttlSeconds: number;
  createdBy?: string;
}

export async function issueJoinToken(secret: Uint8Array, options: IssueOptions, now: number): Promise<{ token: string; claims: JoinClaims }> {
  const jti = crypto.randomUUID();
  const iat = Math.floor(now / 1000);
  const exp = iat + options.ttlSeconds;
  const payload: Record<string, string> = { kind: options.kind };
  if (options.nickname) payload.nickname = options.nickname;
  if (options.createdBy) payload.created_by = options.createdBy;
  const token = await new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(JOIN_SUBJECT)
    .setJti(jti)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(secret);
  return {
    token,
    claims: { kind: options.kind, nickname: options.nickname, createdBy: options.createdBy ?? '', jti, expiresAt: exp * 1000 },
  };
}

/** The claims of a valid, unexpired join token; null for anything else (forged, expired, malformed). */
export async function verifyJoinToken(secret: Uint8Array, token: string, now: number): Promise<JoinClaims | null> {
  try {
    const { payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      subject: JOIN_SUBJECT,
      requiredClaims: ['jti', 'exp'],
      currentDate: new Date(now),
      clockTolerance: 0,
    });
    const { kind, nickname, created_by: createdBy, jti, exp } = payload;
    if (kind !== 'agent' && kind !== 'client') return null;
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 128 || typeof exp !== 'number') return null;
    if (nickname !== undefined && typeof nickname !== 'string') return null;
    return {
      kind,
      nickname: typeof nickname === 'string' ? nickname : undefined,
      createdBy: typeof createdBy === 'string' ? createdBy : '',
      jti,
      expiresAt: exp * 1000,
    };
  } catch {
    return null;
  }
}
