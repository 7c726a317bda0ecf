/**
 * @module The relay core (docs/bridge-protocol.md §2), runtime-independent: it owns the peers, the
 * matching index, relay forwarding (forwarding.ts), the drop and close policies and the metrics. It
 * has no timers and no I/O of its own; a runtime feeds it (Tailscale derp's shape: forward by header,
 * never read a body, bounded queues, every drop counted by reason).
 *
 * What a runtime does:
 * 1. On an upgrade request: `await relay.admit(address)` (a reason → refuse with 429), accept the socket,
 *    `const peer = relay.open(socket, address)`.
 * 2. Each frame: `relay.receive(peer, data, isBinary)`: text as bytes (Node) or string (Workers).
 *    Each ping: answer it when `relay.pinged(peer)`; each pong: `relay.pong(peer)`. On close: `relay.closed(peer)`.
 * 3. About once a second: `relay.sweep()` (timeouts, heartbeat, stuck queues, revocations by others,
 *    and the store's prune when due).
 * 4. `POST /admin/revoke` → `relay.revoke(ref)`; `GET /metrics` → `relay.snapshot()`.
 */
import { eventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { BRIDGE_IDENT_REQUEST } from '@hostadm/shared/protocol/bridge-requests.ts';
import { BridgeApi, type ApiHost, type KeyList } from './api.ts';
import { CLOSE, relayConfig, type DropReason, type RelayConfig } from './config.ts';
import { allocateZeroed, frameText, isApiFrame, type Frame } from './frames.ts';
import { Forwarder, markOverBound, wireSize } from './forwarding.ts';
import { sendOffer } from './announcement.ts';
import { hostEntry, Matcher } from './matching.ts';
import { RelayMetrics, type MetricsSnapshot } from './metrics.ts';
import { closeDue, greetingFrame, NO_IDS, Peer, revivePeer, type SavedPeer } from './peer.ts';
import { SignedInIndex } from './signed-in.ts';
import { LastSeenThrottle } from './last-seen.ts';
import { StoreRetention } from './retention.ts';
import type { Clock, HmacSha256, KeyCrypto, KeyRecord, KeyStore, PeerKind, PeerSocket, RelayDeps, RelayLogger } from './ports.ts';
import { AddressCounts, isLoopback } from './addresses.ts';
import { Directory } from './directory.ts';
import { DIRECTORY_ROOM, SHARED_ROOM, type RoomName, type SessionIndex } from './rooms.ts';

export type { RelayDeps } from './ports.ts';
export { isLoopback } from './addresses.ts';

export class Relay implements ApiHost {
  readonly config: RelayConfig;
  readonly metrics: RelayMetrics;
  readonly store: KeyStore;
  readonly crypto: KeyCrypto;
  readonly clock: Clock;
  readonly logger: RelayLogger;
  readonly joinSecret: Uint8Array;
  readonly hmac: HmacSha256 | undefined;
  readonly hostname: string;
  readonly retention: StoreRetention;
  /** Directory sockets and the hosts they are announced (directory.ts). */
  readonly directory: Directory;
  private readonly sessions: SessionIndex | null;
  /**
   * Every open peer is in one of these two: not identified yet (no id), or by its id. One table entry
   * per peer, not two (idle agents are most peers).
   */
  private readonly unidentified = new Set<Peer>();
  private readonly byId = new Map<string, Peer>();
  /** Open sockets per remote address (admit refuses past `maxConnectionsPerAddress`). */
  private readonly openByAddress = new AddressCounts();
  private readonly signedInByKey = new SignedInIndex();
  private readonly lastSeen = new LastSeenThrottle();
  private readonly matcher = new Matcher();
  private readonly api: BridgeApi;
  private readonly forwarder: Forwarder;
  private readonly persist: ((peer: Peer) => void) | null;
  private readonly afterApiCall = (peer: Peer): void => {
    if (peer.closed) return;
    this.persist?.(peer);
    if (peer.pendingApi === 0) this.forwarder.release(peer, this.clock.now());
  };
  private lastPing: number;
  private lastRevocationPoll: number;
  private sweeping = false;

  constructor(deps: RelayDeps) {
    this.config = relayConfig(deps.config);
    this.store = deps.store;
    this.crypto = deps.crypto;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.joinSecret = deps.joinSecret;
    this.hmac = deps.hmac;
    this.hostname = deps.hostname;
    this.persist = deps.persist ?? null;
    const now = this.clock.now();
    this.metrics = new RelayMetrics(now);
    const peerById = (id: string) => this.byId.get(id);
    const drop = (peer: Peer, destination: string, reason: DropReason) => this.drop(peer, destination, reason);
    this.forwarder = new Forwarder({ config: this.config, metrics: this.metrics, allocate: deps.allocate ?? allocateZeroed, peerById, drop });
    this.lastPing = now;
    this.lastRevocationPoll = now;
    this.api = new BridgeApi(this);
    this.sessions = deps.sessions ?? null;
    this.directory = new Directory({ index: deps.hostIndex ?? null, metrics: this.metrics, logger: this.logger, persist: this.afterApiCall });
    this.retention = new StoreRetention({ store: this.store, config: this.config, clock: this.clock, logger: this.logger, mark: deps.pruneMark });
  }

  // ---- runtime entry points ----

  /**
   * Whether a new connection from `address` may be accepted: `null`, or why not (the runtime refuses
   * the upgrade with 429 and this text): the address holds too many sockets, or it is blacklisted.
   */
  async admit(address: string): Promise<string | null> {
    if (this.openByAddress.count(address) >= this.config.maxConnectionsPerAddress) {
      this.metrics.refusedTooManyConnections++;
      return `Too many connections from this address (${this.config.maxConnectionsPerAddress}); close some first`;
    }
    if (this.isExempt(address)) return null;
    const blocked = await this.store.isBlocked(address, this.clock.now());
    if (!blocked) return null;
    this.metrics.refusedBlacklisted++;
    return 'Too many failed sign-ins from this address; try again later';
  }

  /**
   * Re-creates a peer saved with `savePeer` on a socket that stayed open while the runtime slept,
   * with the md5_keys it had listed. Call `restored()` after the last one.
   */
  restore(socket: PeerSocket, saved: SavedPeer, md5Keys: readonly string[]): Peer {
    const peer = revivePeer(socket, saved, this.clock.now());
    this.addPeer(peer);
    this.metrics.open[peer.countedAs]++;
    if (peer.id) this.byId.set(peer.id, peer);
    if (peer.state === 'signed-in' && peer.key) {
      // A replaced agent connection dropped its saved state when it was closed, so none comes back here.
      this.signedInByKey.add(peer);
      const keys = new Set(md5Keys.slice(0, this.config.maxKeysPerPeer));
      if (peer.room === DIRECTORY_ROOM) void this.directory.clientListed(peer, keys, false);
      else if (md5Keys.length > 0) this.matcher.setKeys(peer, keys);
      // Indexed when it listed them: only this relay's own view comes back.
      if (peer.kind === 'agent' && md5Keys.length > 0) this.directory.hostListed(peer, keys, false);
    }
    return peer;
  }

  /**
   * After the last `restore`: each peer's permitted destinations become its offer, which is what it
   * was last told (announcements are sent synchronously with every matching change), so nothing is
   * re-announced.
   */
  restored(): void {
    for (const peer of this.allPeers()) {
      const offer = this.matcher.offer(peer);
      peer.announced = offer.length === 0 ? NO_IDS : new Set(offer.map((q) => q.id));
    }
  }

  /** A socket was accepted in `room` (rooms.ts): greeted with its sign-in test string (§2.3), asked to identify. */
  open(socket: PeerSocket, address: string, room: RoomName = SHARED_ROOM): Peer {
    const now = this.clock.now();
    const peer = new Peer(socket, address, now, room);
    this.addPeer(peer);
    this.metrics.opened();
    if (this.config.signinGreeting) socket.send(greetingFrame(peer, now, this.config.sslWindowSeconds));
    socket.send(IDENTIFY_REQUEST);
    return peer;
  }

  receive(peer: Peer, data: Frame, isBinary = false): void {
    if (peer.closed) return;
    const now = this.clock.now();
    peer.lastSeen = now;
    const size = wireSize(data, this.config.maxFrameBytes);
    if (size > this.config.maxFrameBytes) return this.oversize(peer);
    // Before sign-in a peer only identifies, enrolls and signs in: small frames, never parsed when big.
    if (peer.state !== 'signed-in' && size > this.config.maxPreSignInFrameBytes) return this.oversize(peer);
    // A binary frame is a relay frame (hsc2, §3.9), never an API call: forwarded by its first line alone.
    if (isBinary) return typeof data === 'string' ? this.drop(peer, '', 'malformed') : this.forwarder.accept(peer, data, size, now, true);
    if (isApiFrame(data)) return this.api.enqueue(peer, frameText(data), this.afterApiCall);
    this.forwarder.accept(peer, data, size, now);
  }

  /**
   * A frame over `maxFrameBytes` arrived: counted as a `too-large` drop, the sender closed (1009).
   * Runtimes whose socket refuses such frames itself (ws `maxPayload`) report them here.
   */
  oversize(peer: Peer): void {
    if (peer.closed) return;
    this.metrics.drops['too-large']++;
    this.closePeer(peer, CLOSE.tooBig, 'frame too large');
  }

  /**
   * The peer pinged: whether the runtime answers. Not while the peer's send queue is over the bound
   * (marked, as a suppressed reply is): a peer that pings and never reads cannot grow it with pongs.
   */
  pinged(peer: Peer): boolean {
    if (peer.closed) return false;
    if (peer.socket.bufferedAmount <= this.config.maxQueueBytes) return true;
    markOverBound(peer, this.clock.now());
    this.metrics.repliesSuppressed++;
    return false;
  }

  pong(peer: Peer): void {
    this.metrics.pongs++;
    peer.lastSeen = this.clock.now();
  }

  /** The runtime saw the socket close (either side); idempotent. */
  closed(peer: Peer): void {
    if (!peer.closed) this.detach(peer);
  }

  /**
   * Periodic upkeep: unauthenticated timeout (4001), heartbeat pings and silent peers (4000), send
   * queues stuck over the bound (1013), revocations written by another process (4003), and the
   * store's prune when due (retention.ts).
   */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = this.clock.now();
      const c = this.config;
      const ping = now - this.lastPing >= c.heartbeatIntervalSeconds * 1000;
      if (ping) this.lastPing = now;
      for (const peer of this.allPeers()) {
        const overdue = closeDue(peer, now, c);
        if (overdue) this.closePeer(peer, overdue.code, overdue.reason);
        if (ping && !peer.closed) peer.socket.ping?.();
      }
      if (now - this.lastRevocationPoll >= c.revocationPollSeconds * 1000) {
        // A second of overlap: a revocation committed while the last poll ran is not missed.
        const since = this.lastRevocationPoll - 1000;
        this.lastRevocationPoll = now;
        for (const key of await this.store.revokedSince(since)) this.cutOff(key.id);
      }
      await this.retention.pruneIfDue();
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * Revokes a key (by id or md5_key) and closes its connections at once (4003): here, and wherever
   * else the session index says sockets signed in with it live.
   */
  async revoke(ref: string): Promise<{ key: KeyRecord; disconnected: number } | null> {
    const key = await this.store.revoke(ref, this.clock.now());
    if (!key) return null;
    const here = this.cutOff(key.id);
    const elsewhere = this.sessions ? await this.sessions.cutOffElsewhere(key.id) : 0;
    return { key, disconnected: here + elsewhere };
  }

  /** Closes every connection (1001) and forgets them. */
  shutdown(): void {
    for (const peer of this.allPeers()) this.closePeer(peer, CLOSE.shuttingDown, 'bridge shutting down');
  }

  snapshot(): MetricsSnapshot {
    return this.metrics.snapshot(this.clock.now());
  }

  // ---- ApiHost: what the API handlers call back into ----

  /**
   * Replies and drop notices. A peer whose own send queue is over the bound does not get them
   * (counted): it could otherwise grow its queue without limit by calling and not reading.
   */
  send(peer: Peer, envelope: unknown): void {
    if (peer.closed) return;
    if (peer.socket.bufferedAmount > this.config.maxQueueBytes) {
      markOverBound(peer, this.clock.now());
      this.metrics.repliesSuppressed++;
      return;
    }
    peer.socket.send(JSON.stringify(envelope));
  }

  identified(peer: Peer, kind: PeerKind, hostname: string): void {
    peer.kind = kind;
    peer.hostname = hostname;
    // One flat string: randomUUID() comes back as a tree of 16 pieces (it joins hex pairs with `+`),
    // and a template literal would keep that tree and add to it: ~500 bytes per idle peer instead of ~60.
    peer.id = [kind, crypto.randomUUID()].join('-');
    peer.state = 'identified';
    this.unidentified.delete(peer);
    this.byId.set(peer.id, peer);
    this.metrics.moved('pending', kind);
  }

  signedIn(peer: Peer, key: KeyRecord, fingerprint: string | null): void {
    peer.state = 'signed-in';
    // The nickname is usually the host name the peer identified with: one string kept instead of two.
    peer.key = { id: key.id, md5Key: key.md5Key, nickname: key.nickname === peer.hostname ? peer.hostname : key.nickname };
    peer.hostKeyFingerprint = fingerprint;
    const replaced = this.signedInByKey.add(peer);
    if (replaced) this.closePeer(replaced, CLOSE.replaced, 'replaced by a newer connection with the same key');
    this.sessions
      ?.opened({ connectionId: peer.id, keyId: key.id })
      .then((revoked) => revoked && this.cutOff(key.id))
      .catch((err: unknown) => this.logger.warn({ err }, 'could not record the session'));
    this.metrics.signins++;
    this.touch(key.id);
  }

  /**
   * The peer listed its md5_keys: re-match it and everyone sharing a key with it. An agent that accepts
   * password sign-in is also matched under its bound nickname, and a client under each nickname it asks
   * to reach (docs/bridge-protocol.md §2.4): so a client whose key a host does not know yet can open the
   * channel and sign in there with a password, which the bridge never sees.
   */
  setKeys(peer: Peer, list: KeyList): void {
    if (peer.closed || peer.state !== 'signed-in') return;
    // Filled by add(): a Set made from an array starts with a larger table (~200 bytes for one key, kept by every idle agent).
    let keys = new Set<string>();
    for (const md5 of list.md5_keys.slice(0, this.config.maxKeysPerPeer)) keys.add(md5);
    // A client matches by its own key only (it signed in with it); other md5_keys would let it probe
    // which agents accept someone else's key.
    if (peer.kind === 'client') {
      keys = keys.has(peer.key!.md5Key) ? new Set([peer.key!.md5Key]) : new Set();
      for (const name of list.reach ?? []) keys.add(hostEntry(name));
    } else if (list.password_signin && peer.key!.nickname) keys.add(hostEntry(peer.key!.nickname));
    const entries = keys.size === 0 ? NO_IDS : keys;
    if (peer.room === DIRECTORY_ROOM) {
      void this.directory.clientListed(peer, entries);
      return;
    }
    const affected = this.matcher.setKeys(peer, entries);
    for (const p of affected) this.announce(p, p === peer);
    if (peer.kind === 'agent') this.directory.hostListed(peer, entries);
  }

  closePeer(peer: Peer, code: number, reason: string): void {
    if (peer.closed) return;
    this.metrics.closedBy(code);
    this.logger.debug({ peer: peer.id || '(unidentified)', address: peer.address, code, reason }, 'closing peer');
    this.detach(peer);
    try {
      peer.socket.close(code, reason);
    } catch (err) {
      this.logger.debug({ err }, 'socket close failed');
    }
  }

  isExempt(address: string): boolean {
    return this.config.blacklist.exemptLoopback && isLoopback(address);
  }

  // ---- internals ----

  /** Counts a drop and tells the sender (unless its own queue is over the bound: see `send`). */
  private drop(peer: Peer, destination: string, reason: DropReason): void {
    this.metrics.drops[reason]++;
    this.send(peer, eventEnvelope('bridge', { dropped: { destination, reason } }));
  }

  /** Sends `peer` its offer when it changed (or always when `force`: right after it listed its keys). */
  private announce(peer: Peer, force: boolean): void {
    if (sendOffer(this.matcher, peer, force, this.config.maxQueueBytes, this.clock.now())) this.metrics.announcements++;
  }

  /** A copy: callers close peers while they go through it. */
  private allPeers(): Peer[] {
    return [...this.unidentified, ...this.byId.values()];
  }

  private addPeer(peer: Peer): void {
    if (!peer.id) this.unidentified.add(peer);
    this.openByAddress.add(peer.address);
  }

  private detach(peer: Peer): void {
    peer.closed = true;
    peer.chain = null;
    this.forwarder.forget(peer);
    this.unidentified.delete(peer);
    this.openByAddress.remove(peer.address);
    this.metrics.moved(peer.countedAs, null);
    if (peer.id) this.byId.delete(peer.id);
    if (!peer.key) return;
    this.signedInByKey.remove(peer);
    this.sessions?.closed(peer.id);
    this.touch(peer.key.id);
    if (peer.room === DIRECTORY_ROOM) return this.directory.clientLeft(peer);
    for (const p of this.matcher.remove(peer)) this.announce(p, false);
    if (peer.kind === 'agent') this.directory.hostLeft(peer);
  }

  /** Closes every connection signed in with the key here (4003); returns how many. */
  cutOff(keyId: string): number {
    const peers = this.signedInByKey.connections(keyId);
    for (const p of peers) this.closePeer(p, CLOSE.revoked, 'key revoked');
    this.metrics.revocationCutoffs += peers.length;
    if (peers.length > 0) this.logger.info({ keyId, disconnected: peers.length }, 'revoked key cut off');
    return peers.length;
  }

  private touch(keyId: string): void {
    if (!this.lastSeen.due(keyId, this.clock.now())) return;
    this.store.touch(keyId, this.clock.now()).catch((err: unknown) => this.logger.warn({ err, keyId }, 'could not record last_seen_at'));
  }
}

const IDENTIFY_REQUEST = JSON.stringify(BRIDGE_IDENT_REQUEST);
