/** Numbers the spec states or leaves open; every choice is recorded in docs/protocol.md "Limits". */
export const LIMITS = {
  /** Largest accepted WebSocket frame or REST body, in bytes. Bigger frames are refused unread. */
  maxFrameBytes: 1024 * 1024,
  /** Seconds between the `auth_ssl` stage-1 reply and stage 2 (spec: 30). */
  sslWindowSeconds: 30,
  /** Sliding token validity in seconds (spec example: 300). */
  tokenTtlSeconds: 300,
  /** A WebSocket connection with no traffic for this long is closed (spec: 10 minutes). */
  idleCloseSeconds: 600,
  /** A connection that has not authenticated by then is closed. */
  unauthenticatedCloseSeconds: 60,
  /** Failed logins from one address within `blacklistWindowSeconds` before it is refused. */
  blacklistFailures: 5,
  blacklistWindowSeconds: 600,
  blacklistBlockSeconds: 3600,
  /**
   * Largest relay frame a bridge forwards (destination line included). Bigger than the agent's own
   * frame limit because a sealed envelope is base64 (4/3 of its size) plus framing: a reply of up to
   * about 3 MiB still crosses the bridge.
   */
  maxRelayFrameBytes: 4 * 1024 * 1024 + 128,
  /** Requests one connection may have in flight; more are refused with 429. */
  maxInFlightPerConnection: 64,
} as const;
