/**
 * @module The ports the relay core needs from its runtime. The core (everything in `relay/`) imports
 * no Node or Workers module: a runtime hands it sockets, storage, key crypto, a clock and a logger
 * through these types (Hono's conninfo pattern: one port here, one same-named file per runtime).
 *
 * What each runtime provides:
 * - Node (`runtime/node/`): `ws` sockets, node:sqlite through Drizzle, a 1-second interval that
 *   calls `Relay.sweep()`.
 * - Workers (`runtime/workers/`): the Durable Object's hibernatable WebSockets, D1 through Drizzle,
 *   an alarm that calls `Relay.sweep()` when it has work, and `persist`/`restore` across hibernation.
 * Both use the one KeyCrypto in `key-crypto.ts` (WebCrypto + forge's ASN.1 and MD5).
 */

import type { SignaturePurpose } from '@hostadm/shared/crypto/signed-messages.ts';
import type { RelayConfigOverrides } from './config.ts';
import type { Allocate } from './frames.ts';
import type { Peer } from './peer.ts';
import type { PruneMark } from './retention.ts';
import type { HostIndex, SessionIndex } from './rooms.ts';

export type PeerKind = 'agent' | 'client';
export type KeyAlgorithm = 'rsa' | 'ed25519';

/**
 * One peer's WebSocket as the relay sees it. `send` sends a **text** frame, whether it is given a
 * string or UTF-8 bytes (relay frames are forwarded as the bytes they arrived as), unless `binary`:
 * then the bytes go as a binary frame (a relay frame that arrived binary leaves binary).
 */
export interface PeerSocket {
  send(data: string | Uint8Array, binary?: boolean): void;
  /** Bytes accepted by `send` but not yet written to the network. */
  readonly bufferedAmount: number;
  /** Starts the closing handshake; the runtime reports the end with `Relay.closed`. */
  close(code: number, reason: string): void;
  /** Sends a protocol-level ping, where the runtime can (a Durable Object cannot; it relies on traffic). */
  ping?(): void;
  /**
   * Optional fast path for byte frames: sends `head` followed by `frame[from..]` as ONE text (or
   * `binary`) frame without joining them first (Node writes both parts with one writev). Returns false
   * when it cannot right now; the relay then joins the parts and uses `send`.
   */
  sendParts?(head: Uint8Array, frame: Uint8Array, from: number, binary?: boolean): boolean;
}

/** A registered key as stored. Times are milliseconds since the epoch. */
export interface KeyRecord {
  id: string;
  md5Key: string;
  spkiPem: string;
  algorithm: KeyAlgorithm;
  kind: PeerKind;
  nickname: string;
  createdBy: string;
  createdAt: number;
  lastSeenAt: number | null;
  revokedAt: number | null;
}

export type NewKey = Omit<KeyRecord, 'lastSeenAt' | 'revokedAt'>;

/**
 * `nickname-taken`: an agent key may not take a nickname a live (unrevoked) agent key holds: clients
 * reach hosts by nickname, so a second join token must not let a rogue agent claim a host's name.
 */
export type EnrollOutcome = { ok: true; key: KeyRecord } | { ok: false; reason: 'token-used' | 'key-exists' | 'key-revoked' | 'nickname-taken' };

export interface BlacklistRule {
  failures: number;
  windowMs: number;
  blockMs: number;
}

/** Rows a prune removed, per table. */
export interface PrunedRows {
  usedJoinTokens: number;
  blacklist: number;
  authFailures: number;
}

/**
 * Persistent state: registered keys, used join tokens, the blacklist. Every method is async so a
 * D1 implementation fits; every implementation must use bound parameters only.
 */
export interface KeyStore {
  /** The key with this md5_key, revoked or not. */
  getByMd5(md5Key: string): Promise<KeyRecord | null>;
  /** The key whose id or md5_key is `ref`. */
  find(ref: string): Promise<KeyRecord | null>;
  /** Every key that is not revoked, of one kind (sign-in without a pinned key tries each). */
  listActive(kind: PeerKind): Promise<KeyRecord[]>;
  list(): Promise<KeyRecord[]>;
  /**
   * Records the token's `jti` as used and inserts the key, atomically: a token already used, or a
   * key already registered (or revoked), changes nothing.
   */
  enroll(token: { jti: string; expiresAt: number }, key: NewKey, now: number): Promise<EnrollOutcome>;
  /** Sets `revoked_at` (first revocation wins); returns the key, or null when there is none. */
  revoke(ref: string, now: number): Promise<KeyRecord | null>;
  /** Keys revoked at or after `since` (the periodic re-read that catches revocations by other processes). */
  revokedSince(since: number): Promise<KeyRecord[]>;
  touch(keyId: string, now: number): Promise<void>;
  isBlocked(address: string, now: number): Promise<boolean>;
  /** Records a failure; returns true when this failure blocks the address. */
  recordFailure(address: string, now: number, rule: BlacklistRule): Promise<boolean>;
  /**
   * Deletes, oldest first and at most `limit` rows per table, what can no longer change a decision:
   * used join tokens past their expiry (a token is refused by its signature check once expired),
   * blocks that have been lifted, failures older than the counting window. Keys, revoked ones
   * included, are never pruned: the row is what refuses a revoked key.
   */
  prune(now: number, rule: BlacklistRule, limit: number): Promise<PrunedRows>;
}

export interface ParsedPublicKey {
  spkiPem: string;
  algorithm: KeyAlgorithm;
  md5Key: string;
}

/** Key parsing and proof checks (RSA PKCS#1 v1.5 "encrypted_string" needs more than WebCrypto). */
export interface KeyCrypto {
  /** base64 of a PEM public key or X.509 certificate → SPKI PEM; throws a HostadmError 400 when unusable. */
  parsePublicKey(pubKeyB64: string): ParsedPublicKey;
  /** Whether the proof covers `challenge` as signed for `purpose` (shared/src/crypto/signed-messages.ts). */
  verifyProof(key: KeyRecord, purpose: SignaturePurpose, challenge: string, proofB64: string, form: 'original' | 'signature'): boolean | Promise<boolean>;
}

/**
 * HMAC-SHA256 under raw key bytes (sign-in tickets, signin-tickets.ts). Optional: without it the core
 * uses WebCrypto, whose every call costs about 40 µs in Node; the Node runtime passes node:crypto's.
 */
export type HmacSha256 = (key: Uint8Array, data: Uint8Array) => Uint8Array;

export interface Clock {
  now(): number;
}

/** The pino subset the core logs through. */
export interface RelayLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** What a Relay is built from: its store, crypto, clock and logger, and the runtime's hooks. */
export interface RelayDeps {
  store: KeyStore;
  crypto: KeyCrypto;
  clock: Clock;
  logger: RelayLogger;
  /** HS256 secret for join tokens (and, through HKDF, the sign-in tickets' keys). */
  joinSecret: Uint8Array;
  /** A synchronous HMAC-SHA256 (Node: node:crypto); default WebCrypto's. */
  hmac?: HmacSha256;
  /** What `rpc/identify` on the bridge answers as `hostname`. */
  hostname: string;
  config?: RelayConfigOverrides;
  /** Allocates outgoing byte frames (default: a zeroed Uint8Array; Node passes Buffer.allocUnsafe, pooled). */
  allocate?: Allocate;
  /**
   * Called after each API call of a peer (identify reply, auth_ssl, list_ssl_checksums, bridge_keys,
   * bridge_enroll: the only things that change what `savePeer` keeps). A runtime that loses its
   * memory between events (a hibernating Durable Object) saves the peer here and `restore`s it later.
   */
  persist?: (peer: Peer) => void;
  /** Where the time of the last store prune is kept (default: memory; a Durable Object: its storage). */
  pruneMark?: PruneMark;
  /** Hosts in other objects, for directory sockets (Workers: D1). Node's rooms share one relay: none. */
  hostIndex?: HostIndex;
  /** Sockets signed in elsewhere, so a revocation reaches them (Workers: D1). Node: none. */
  sessions?: SessionIndex;
}
