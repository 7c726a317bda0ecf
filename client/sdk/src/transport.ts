/**
 * The transport port. The client speaks envelopes as JSON text over a `Transport`; how the text
 * travels is the transport's business. `webSocketTransport` (direct to an agent) is the one
 * implemented now; a bridge transport (relayed, end-to-end encrypted, host chosen by key) plugs in here
 * with the same three operations: it does its own handshake inside `open` and hands back a connection
 * that carries plain envelope text.
 *
 * A transport may also hand back a connection that is already signed in: the bridge channel's
 * handshake proves the client's key to the host, and the host answers with a session (`[token, ttl]`,
 * like every sign-in). Such a transport sets `session` on the `Transport` it resolves with; the client
 * installs it as it is (no `auth_token` round trip: the connection is already the session's) instead of
 * running its configured sign-in (`auth`), on the first connection and after every reconnect, since
 * each new channel brings its own proof.
 */

/** How a connection ended. */
export interface CloseInfo {
  /** WebSocket close code (1006 when the connection dropped without a close frame). */
  code: number;
  reason: string;
  /** A transport error that came before the close, when there was one. */
  error?: string;
}

export interface TransportHandlers {
  /** One text frame: a reply or an event envelope as JSON. */
  onMessage(text: string): void;
  /** Called once when the connection ends, whoever ended it. */
  onClose(info: CloseInfo): void;
  /**
   * The connection takes requests before `open` resolves: a bridge channel resumed with a ticket
   * whose host serves what is sealed after the proof (RC) only once RC has signed the channel in
   * (docs/bridge-protocol.md §3 step 9). Called at most once, in the tick RC was sealed in, with the
   * transport `open` will resolve with, so that what is sent now leaves in RC's flight (hsc3: in its
   * record). If the opening then fails, what was sent fails with it, like a request on a dropped
   * connection (the host ran it only if it accepted RC).
   */
  onEarlySend?(transport: Transport): void;
}

/** A session a transport opened while connecting: the host's `[token, ttl]` reply to the key proof. */
export interface SignedInSession {
  token: string;
  /** Validity in seconds at sign-in. */
  ttlSeconds: number;
}

/** One open connection. */
export interface Transport {
  /**
   * Set when opening the connection already signed in (the bridge channel's key proof yields a session):
   * the client takes this session as its own and skips its configured `auth` methods.
   */
  readonly session?: SignedInSession;
  /**
   * Set by a bridge channel whose host proved the key but does not know it: the configured password
   * (or token) methods sign in on the channel; with none, the sign-in fails with this text.
   */
  readonly keyNotRegistered?: string;
  send(text: string): void;
  /** Ends the connection; `onClose` follows. */
  close(code?: number, reason?: string): void;
}

/** Opens connections; the client calls `open` again to reconnect. */
export interface TransportFactory {
  /** For messages: where this transport goes (`ws://host:port`, `bridge ... host ...`). */
  readonly description: string;
  /** Resolves once the connection can carry envelopes; rejects with a ConnectionError otherwise. */
  open(handlers: TransportHandlers, options: { signal?: AbortSignal; timeoutMs: number }): Promise<Transport>;
}
