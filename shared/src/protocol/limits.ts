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
  /** Deepest JSON nesting accepted in a request (checked before parsing); hostadm's own requests need 4. */
  maxJsonDepth: 32,
  /** Field errors listed in one 400; the rest are counted in a last entry (a 1 MiB frame once gave 90,000). */
  maxFieldErrors: 100,
  /** Bytes queued for a peer that does not read before its connection is closed (1013). */
  maxSendBufferBytes: 8 * 1024 * 1024,
  /** Concurrent WebSocket connections from one address (loopback included); more are refused with HTTP 429. */
  maxConnectionsPerAddress: 256,
  /** Password checks running at once (each costs a hash or a PAM conversation), and waiting for a turn. */
  maxConcurrentPasswordChecks: 4,
  maxQueuedPasswordChecks: 32,
  /** Password sign-in attempts per address: a burst, then a steady rate per second (loopback included). */
  passwordAttemptBurst: 20,
  passwordAttemptsPerSecond: 5,
  /** Audit rows (changes, sign-ins, refusals; and hourly counts of read-only calls) kept this long… */
  auditRetentionDays: 90,
  /** …and at most this many rows in each of the two audit tables. */
  auditMaxRows: 200_000,
  /** Finished dispatcher jobs kept (with their logs) at most, and their logs' total size. */
  maxFinishedJobs: 5000,
  maxStoredJobLogBytes: 256 * 1024 * 1024,
} as const;
