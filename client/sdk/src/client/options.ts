/**
 * What `connect` accepts, and the same options resolved once into settings with every default filled
 * in, so the parts of the client read plain values instead of repeating `?? default` each time.
 */
import { HostadmClientError } from '../errors.ts';
import type { TransportFactory } from '../transport.ts';
import { webSocketTransport, type WebSocketConstructor } from '../websocket.ts';
import type { AuthMethod } from './session.ts';

export interface ReconnectOptions {
  /** First delay before reconnecting; doubles per attempt (with jitter). Default 250 ms. */
  initialDelayMs?: number;
  /** Longest delay between attempts. Default 10 s. */
  maxDelayMs?: number;
  /** Attempts before giving up (the client then fails with ConnectionError). Default: no limit. */
  maxAttempts?: number;
}

export interface ConnectOptions {
  /** `ws://host:port` or `wss://host:port` of an agent (direct connection). */
  url?: string;
  /** Another transport (a bridge, a test double); takes the place of `url`. */
  transport?: TransportFactory;
  /** The WebSocket constructor for `url`; default `globalThis.WebSocket`. The Node entry passes `ws`. */
  webSocket?: WebSocketConstructor;
  /**
   * How to sign in; a list is tried in order until one is accepted (a 401 moves on to the next).
   * Without it the client is not signed in (only `identify` works until `signIn`).
   */
  auth?: AuthMethod | readonly AuthMethod[];
  /** Time to wait for each reply. Default 30 s. */
  requestTimeoutMs?: number;
  /** Time to wait for the connection to open. Default 10 s. */
  connectTimeoutMs?: number;
  /** Reconnect after the connection drops, resuming the session with `auth_token`. Default true. */
  reconnect?: boolean | ReconnectOptions;
  /** Check arguments against the contract before sending (refused locally with a 400). Default true. */
  validateArgs?: boolean;
  /** Check replies against the contract (ReplyContractError when one does not match). Default false. */
  validateReplies?: boolean;
  /**
   * Keep the session alive while the client is open: a cheap request (`query`) when nothing was sent
   * for this long. `true` (default) picks half the token's validity, at most 2 minutes.
   */
  keepAlive?: boolean | number;
}

/** `ConnectOptions` with the defaults applied. */
export interface ClientSettings {
  readonly factory: TransportFactory;
  /** The configured sign-in methods, in the order they are tried; empty when none. */
  readonly authMethods: readonly AuthMethod[];
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** null when reconnecting is off. */
  readonly reconnect: Required<ReconnectOptions> | null;
  readonly validateArgs: boolean;
  readonly validateReplies: boolean;
  readonly keepAlive: boolean | number;
}

const DEFAULTS = { requestTimeoutMs: 30_000, connectTimeoutMs: 10_000, initialDelayMs: 250, maxDelayMs: 10_000 };

/** One method or a list of them, as a list (`auth` and `signIn` take either). */
export function authList(auth: AuthMethod | readonly AuthMethod[]): AuthMethod[] {
  return Array.isArray(auth) ? [...(auth as AuthMethod[])] : [auth as AuthMethod];
}

export function resolveSettings(options: ConnectOptions): ClientSettings {
  let factory: TransportFactory;
  if (options.transport) factory = options.transport;
  else if (options.url) factory = webSocketTransport({ url: options.url, ...(options.webSocket ? { webSocket: options.webSocket } : {}) });
  else throw new HostadmClientError('connect needs `url` (or a `transport`)');
  const rc = options.reconnect ?? true;
  return {
    factory,
    authMethods: options.auth === undefined ? [] : authList(options.auth),
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
    reconnect:
      rc === false
        ? null
        : {
            initialDelayMs: (rc === true ? undefined : rc.initialDelayMs) ?? DEFAULTS.initialDelayMs,
            maxDelayMs: (rc === true ? undefined : rc.maxDelayMs) ?? DEFAULTS.maxDelayMs,
            maxAttempts: (rc === true ? undefined : rc.maxAttempts) ?? Number.POSITIVE_INFINITY,
          },
    validateArgs: options.validateArgs ?? true,
    validateReplies: options.validateReplies ?? false,
    keepAlive: options.keepAlive ?? true,
  };
}
