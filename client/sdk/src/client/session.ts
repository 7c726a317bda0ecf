/**
 * Sign-in and the session it yields: password (`auth`), token (`auth_token`) or key (`auth_ssl`, two
 * stages), methods tried in order; which methods to use on a fresh connection (a resume with the
 * current token first, or the token an already signed-in transport brought); and the keep-alive that
 * stops an idle client's token from expiring.
 *
 * Sign-in requests go out on a given transport (`via`) rather than "the" connection, because they run
 * before the connection counts as open: other requests wait until the session is in place.
 */
import { isObject } from '../contracts.ts';
import { HostadmClientError, HostadmRequestError, KeyNotRegisteredError } from '../errors.ts';
import { privateKeyOf, signChallenge, type PrivateKeyMaterial } from '../key-auth.ts';
import type { Transport } from '../transport.ts';
import type { CallOptions } from '../types.ts';
import type { ClientState } from './connection.ts';
import type { SendRequest } from './requests.ts';

export interface PasswordAuth {
  username: string;
  /** The password, or a function that supplies it when it is needed (a prompt). */
  password: string | (() => string | Promise<string>);
}
export interface TokenAuth {
  token: string;
}
export interface KeyAuth {
  /**
   * `privatePem`: PEM private key (PKCS#8 or PKCS#1 RSA; Ed25519 in PKCS#8); or `cryptoKeys`: an RSA key as
   * WebCrypto keys (a browser's non-extractable key). `certPem`: needed only to register the key.
   */
  key: PrivateKeyMaterial & { certPem?: string };
}
export type AuthMethod = PasswordAuth | TokenAuth | KeyAuth;

export interface Session {
  token: string;
  /** Validity in seconds at sign-in; it slides with every successful request. */
  ttlSeconds: number;
  method: 'password' | 'token' | 'key';
  /** Client clock time of the last successful request (for token caches). */
  lastUsedAt: number;
}

/** What the session keeper needs from the rest of the client. */
export interface SessionHost {
  send: SendRequest;
  state(): ClientState;
  /** When the last request went out (the keep-alive stays quiet while the client is busy). */
  lastSentAt(): number;
  /** A new session is in place (the `session` client event). */
  sessionStarted(session: Session): void;
}

export class SessionKeeper {
  private readonly host: SessionHost;
  /** The `auth` option: tried on the first connection, and after a drop when the token no longer works. */
  private readonly configured: readonly AuthMethod[];
  private readonly keepAliveSetting: boolean | number;
  private currentSession: Session | null = null;
  private keepAliveTimer: ReturnType<typeof setInterval> | null = null;

  constructor(host: SessionHost, configured: readonly AuthMethod[], keepAlive: boolean | number) {
    this.host = host;
    this.configured = configured;
    this.keepAliveSetting = keepAlive;
  }

  /** The live session object (callers that hand it out copy it), or null when not signed in. */
  get current(): Session | null {
    return this.currentSession;
  }

  /**
   * Signs in on a fresh transport. A transport that arrived signed in (`session`, from the bridge
   * channel's key proof) brings its session, installed as it is with no request: the connection is
   * already that session's, and the configured methods are for transports that prove nothing. Otherwise the current session's token comes first, so a reconnect
   * keeps the same session, then the configured methods (a 401 moves on to the next). With no method
   * at all the connection stays signed out.
   */
  async establish(transport: Transport, signal?: AbortSignal): Promise<void> {
    if (transport.session !== undefined) {
      this.install({ ...transport.session, method: 'key', lastUsedAt: Date.now() });
      return;
    }
    const methods: AuthMethod[] = [];
    if (this.currentSession) methods.push({ token: this.currentSession.token });
    methods.push(...this.configured);
    if (transport.keyNotRegistered !== undefined && !methods.some((m) => 'username' in m || 'token' in m)) {
      throw new KeyNotRegisteredError(transport.keyNotRegistered);
    }
    if (methods.length > 0) await this.authenticate(transport, methods, signal);
  }

  /** Tries `methods` in order on `transport`; a 401 moves on to the next, anything else stops. */
  async authenticate(transport: Transport, methods: readonly AuthMethod[], signal?: AbortSignal): Promise<Session> {
    let lastError: unknown = new HostadmClientError('no sign-in method given');
    for (const method of methods) {
      try {
        const session = await this.signInWith(transport, method, signal);
        this.install(session);
        return session;
      } catch (err) {
        lastError = err;
        if (err instanceof HostadmRequestError && err.code === 401) continue;
        throw err;
      }
    }
    throw lastError;
  }

  private install(session: Session): void {
    this.currentSession = session;
    this.host.sessionStarted({ ...session });
    this.startKeepAlive();
  }

  /** A successful reply: the host's token validity slid, so note when. */
  touch(): void {
    if (this.currentSession) this.currentSession.lastUsedAt = Date.now();
  }

  /** `auth_clear`: ends the session on the host (the token stops working everywhere). */
  async signOut(options: CallOptions): Promise<void> {
    await this.host.send({ namespace: 'rpc', name: 'auth_clear' }, {}, options);
    this.currentSession = null;
    this.stopKeepAlive();
  }

  private async signInWith(transport: Transport, method: AuthMethod, signal?: AbortSignal): Promise<Session> {
    const send = this.host.send;
    const opts: CallOptions = signal ? { signal } : {};
    let reply: unknown;
    let kind: Session['method'];
    if ('token' in method) {
      kind = 'token';
      reply = await send({ namespace: 'rpc', name: 'auth_token' }, { token: method.token }, opts, transport);
    } else if ('username' in method) {
      kind = 'password';
      // Asked only now, so a prompt appears only when an earlier method (a cached token) failed.
      const password = typeof method.password === 'function' ? await method.password() : method.password;
      reply = await send({ namespace: 'rpc', name: 'auth' }, { username: method.username, password }, opts, transport);
    } else {
      kind = 'key';
      const stage1 = await send({ namespace: 'rpc', name: 'auth_ssl' }, '', opts, transport);
      const testString = isObject(stage1) && typeof stage1.test_string === 'string' ? stage1.test_string : undefined;
      if (testString === undefined) throw new HostadmClientError(`auth_ssl stage 1 gave no test_string: ${JSON.stringify(stage1)}`);
      const signature = await signChallenge(privateKeyOf(method.key), 'agent-signin', testString);
      reply = await send({ namespace: 'rpc', name: 'auth_ssl' }, { signature }, opts, transport);
    }
    // Every sign-in answers `[token, ttlSeconds]`.
    if (!Array.isArray(reply) || typeof reply[0] !== 'string' || typeof reply[1] !== 'number') {
      throw new HostadmClientError(`unexpected sign-in reply: ${JSON.stringify(reply)}`);
    }
    return { token: reply[0], ttlSeconds: reply[1], method: kind, lastUsedAt: Date.now() };
  }

  // ---------------------------------------------------------------- keep-alive

  /**
   * A `query` whenever nothing was sent for a while: the host's token validity slides only with
   * requests, so a client that only listens to events would otherwise be signed out under its feet.
   */
  startKeepAlive(): void {
    this.stopKeepAlive();
    if (this.keepAliveSetting === false || !this.currentSession || this.host.state() === 'closed') return;
    const ms =
      typeof this.keepAliveSetting === 'number' ? this.keepAliveSetting : Math.max(1000, Math.min(120_000, (this.currentSession.ttlSeconds * 1000) / 2));
    this.keepAliveTimer = setInterval(() => {
      if (this.host.state() !== 'open' || !this.currentSession) return;
      if (Date.now() - this.host.lastSentAt() < ms * 0.9) return;
      this.host.send({ namespace: 'rpc', name: 'query' }, {}, {}).catch(() => undefined);
    }, ms);
  }

  stopKeepAlive(): void {
    if (this.keepAliveTimer !== null) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }
}
