/**
 * Session tokens. A token is bound to one connection at a time, slides on every successful request,
 * and expires after `ttlSeconds` without traffic. `auth_token` from a new connection moves it there
 * (resume after reconnect); the old connection then no longer holds it.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from './context.ts';

export type AccessLevel = 'full' | 'limited';

export interface Session {
  readonly token: string;
  readonly user: string;
  readonly level: AccessLevel;
  readonly groups: readonly string[];
  /** How the session began, for the audit log. */
  readonly method: 'password' | 'token' | 'ssl';
  /** For key sign-ins: the key used, so revoking it ends the session. */
  readonly keyMd5?: string;
  connectionId: string;
  expiresAt: number;
}

const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 40 characters of [A-Za-z0-9] (the original's alphabet, about 238 bits) without modulo bias. */
export function randomAlnum(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += TOKEN_ALPHABET[byte % 62];
    }
  }
  return out;
}

export class SessionStore {
  private readonly byToken = new Map<string, Session>();
  private readonly clock: Clock;
  private readonly ttlMs: number;

  constructor(clock: Clock, ttlSeconds: number) {
    this.clock = clock;
    this.ttlMs = ttlSeconds * 1000;
  }

  create(init: Omit<Session, 'token' | 'expiresAt'>): Session {
    this.sweep();
    const session: Session = { ...init, token: randomAlnum(40), expiresAt: this.clock.now() + this.ttlMs };
    this.byToken.set(session.token, session);
    return session;
  }

  /** The live session for a token, or null when unknown or expired (an expired one is dropped). */
  lookup(token: string): Session | null {
    const session = this.byToken.get(token);
    if (!session) return null;
    if (session.expiresAt <= this.clock.now()) {
      this.byToken.delete(token);
      return null;
    }
    return session;
  }

  /** Extends the validity after a successful request. */
  touch(session: Session): void {
    session.expiresAt = this.clock.now() + this.ttlMs;
  }

  secondsLeft(session: Session): number {
    return Math.max(0, Math.round((session.expiresAt - this.clock.now()) / 1000));
  }

  revoke(token: string): void {
    this.byToken.delete(token);
  }

  /** Ends every session of a user (account removal). */
  revokeUser(user: string): void {
    for (const [token, s] of this.byToken) if (s.user === user) this.byToken.delete(token);
  }

  /** Ends every session that signed in with a key (the key was revoked). */
  revokeKey(md5Key: string): void {
    for (const [token, s] of this.byToken) if (s.keyMd5 === md5Key) this.byToken.delete(token);
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [token, s] of this.byToken) if (s.expiresAt <= now) this.byToken.delete(token);
  }
}
