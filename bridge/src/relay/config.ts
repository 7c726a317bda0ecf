import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
/** @module Limits and policies of the relay (docs/bridge-protocol.md §2.7); tests shorten some. */

export interface RelayConfig {
  /** Largest frame accepted from a peer; a larger one closes the sender with 1009. */
  maxFrameBytes: number;
  /** Largest frame from a peer that has not signed in (identify, enroll, auth_ssl are small); larger closes it (1009) unparsed. */
  maxPreSignInFrameBytes: number;
  /** Deepest JSON nesting accepted in an API frame; deeper ones are refused before JSON.parse. */
  maxJsonDepth: number;
  /** Sockets one address may hold at once (loopback included); the next upgrade is refused with 429. */
  maxConnectionsPerAddress: number;
  /** Longest destination line of a relay frame (a connection id is 42–43 characters). */
  maxHeaderBytes: number;
  /** A frame for a peer whose unsent bytes would exceed this is dropped (`queue-full`). */
  maxQueueBytes: number;
  /** A peer over `maxQueueBytes` for this long is closed (1013). */
  queueStuckSeconds: number;
  /** Sign in within this long after connecting, or be closed (4001). */
  unauthenticatedCloseSeconds: number;
  /** Between `auth_ssl` stage 1 (or the greeting, at connect) and stage 2. */
  sslWindowSeconds: number;
  /**
   * Send each new socket the greeting (§2.3): its sign-in test string, before identify, so stage 2 can
   * be the peer's first call. Off only in tests, to pose as a bridge from before it.
   */
  signinGreeting: boolean;
  /** Seconds value of the `[token, seconds]` sign-in reply. */
  tokenTtlSeconds: number;
  /** How long a sign-in ticket (§2.3) is good for after the key sign-in that gave it; at most 8 h, 0 = none given. */
  signinTicketSeconds: number;
  heartbeatIntervalSeconds: number;
  /** A peer that sent nothing (not even a pong) for this long is closed (4000). */
  silentCloseSeconds: number;
  /**
   * Node: a signed-in socket with no frame in or out for this long is parked (runtime/node/parking.ts:
   * `ws`'s per-socket objects dropped until its next byte); 0 never parks. Workers hibernates instead.
   */
  parkQuietSeconds: number;
  /** How often the periodic sweep re-reads revocations made by other processes. */
  revocationPollSeconds: number;
  /** Most md5_keys one peer may list (an agent with more users' keys than this is cut at the bound). */
  maxKeysPerPeer: number;
  /**
   * How often the sweep prunes the store (spent join tokens, lifted blocks, old failures; see
   * `KeyStore.prune`). The first sweep prunes; while a batch comes back full, every sweep does.
   */
  pruneIntervalSeconds: number;
  /** Rows one prune deletes at most per table, so it never holds the database for long. */
  pruneBatchRows: number;
  /** Workers: how often a directory object re-reads the host index for its sockets (hosts coming and going). */
  directoryPollSeconds: number;
  /** Workers: how often an object whose counters changed writes them to D1 (`/metrics` sums the objects). */
  metricsFlushSeconds: number;
  blacklist: {
    failures: number;
    windowSeconds: number;
    blockSeconds: number;
    /** Loopback peers are never blocked; only tests turn this off to exercise the real path. */
    exemptLoopback: boolean;
  };
}

export type RelayConfigOverrides = Partial<Omit<RelayConfig, 'blacklist'>> & { blacklist?: Partial<RelayConfig['blacklist']> };

export const MIB = 1024 * 1024;

export function relayConfig(overrides: RelayConfigOverrides = {}): RelayConfig {
  return {
    // Sealed envelopes are base64 (4/3) plus framing: the shared limit carries ~3 MiB envelopes.
    maxFrameBytes: LIMITS.maxRelayFrameBytes,
    maxHeaderBytes: 128,
    maxPreSignInFrameBytes: 16 * 1024,
    maxJsonDepth: 16,
    maxConnectionsPerAddress: 256,
    maxQueueBytes: 8 * MIB,
    queueStuckSeconds: 30,
    unauthenticatedCloseSeconds: 30,
    sslWindowSeconds: 30,
    signinGreeting: true,
    tokenTtlSeconds: 300,
    signinTicketSeconds: 8 * 3600,
    heartbeatIntervalSeconds: 20,
    silentCloseSeconds: 60,
    parkQuietSeconds: 5,
    revocationPollSeconds: 5,
    maxKeysPerPeer: 10_000,
    pruneIntervalSeconds: 600,
    pruneBatchRows: 500,
    directoryPollSeconds: 5,
    metricsFlushSeconds: 10,
    ...overrides,
    blacklist: {
      failures: 5,
      windowSeconds: 600,
      blockSeconds: 3600,
      exemptLoopback: true,
      ...overrides.blacklist,
    },
  };
}

/** Close codes the relay sends. */
export const CLOSE = {
  shuttingDown: 1001,
  policy: 1008,
  tooBig: 1009,
  tryAgainLater: 1013,
  silent: 4000,
  unauthenticated: 4001,
  revoked: 4003,
  replaced: 4009,
} as const;

/** Why a relay frame was not forwarded; also the metric labels (docs/bridge-protocol.md §2.6). */
export const DROP_REASONS = ['unknown-destination', 'not-permitted', 'queue-full', 'too-large', 'malformed'] as const;
export type DropReason = (typeof DROP_REASONS)[number];
