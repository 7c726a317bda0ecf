/**
 * @module The relay on Cloudflare Workers: a Durable Object per room (relay/rooms.ts) holds that
 * room's WebSockets through the Hibernation API and runs the same relay core and Hono app as the
 * Node bridge: the shared room (`main`, which also serves /admin and /metrics), one object per host
 * (`host/<fp>`), one per directory socket. Objects share only D1 (indexes.ts), never a frame.
 * Design and limits: docs/bridge-protocol.md §2.9–§2.10.
 *
 * Hibernation: when no event runs, the runtime may drop this object's memory while the sockets stay
 * open. What must survive lives outside the heap:
 * - each socket's attachment: its id and `savePeer` (who it is, signed in with which key, the
 *   outstanding challenge), rewritten after each of its API calls;
 * - the object's SQLite-backed sync KV: each peer's md5_key list (can exceed the attachment's size
 *   limit), the metric counters (flushed a second after they change), the times of the last
 *   revocation re-read and of the last D1 prune, and in tests the clock offset and config overrides.
 * The constructor (every wake-up) revives the peers from both (hibernation.ts) and rebuilds the
 * matching index; each peer's permitted destinations are recomputed, which equals what it was last
 * announced.
 */
import { DurableObject } from 'cloudflare:workers';
import { createBridgeApp } from '../../app.ts';
import type { RelayConfigOverrides } from '../../relay/config.ts';
import { PortableKeyCrypto } from '../../relay/key-crypto.ts';
import type { SavedCounters } from '../../relay/metrics.ts';
import type { Peer } from '../../relay/peer.ts';
import type { Clock } from '../../relay/ports.ts';
import { Relay } from '../../relay/relay.ts';
import { MIN_SECRET_LENGTH, OBJECT_HEADER, SCOPE_HEADER, type BridgeEnv } from './env.ts';
import { D1HostIndex, D1MetricsStore, D1SessionIndex } from './indexes.ts';
import { D1KeyStore } from './key-store.ts';
import { ALARMS_ON, CLOCK_OFFSET, CONFIG_OVERRIDES, COUNTERS, OBJECT_NAME, REVOCATIONS_READ, SCOPE, STORE_PRUNED } from './hibernation.ts';
import { forgetPeerKeys, forgetPeerState, loadPeerState, savePeerState } from './hibernation.ts';
import { DIRECTORY_ROOM, type RoomName } from '../../relay/rooms.ts';
import { DurableObjectPeerSocket } from './socket.ts';
import { countFor, objectCounters, testRoutes, TEST_ADDRESS_HEADER } from './test-hooks.ts';
import { consoleLogger, TEST_CONFIG, WORKERS_CONFIG } from './settings.ts';

export class RelayHub extends DurableObject<BridgeEnv> {
  relay: Relay;
  readonly testHooks: boolean;
  private readonly bySocket = new WeakMap<WebSocket, Peer>();
  private readonly sids = new WeakMap<Peer, string>();
  private app: ReturnType<typeof createBridgeApp<BridgeEnv>>;
  private alarmAt: number | null = null;
  private countersTimer: ReturnType<typeof setTimeout> | null = null;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private objectName: string;
  private scope: string;
  sessions!: D1SessionIndex;
  private metricsStore!: D1MetricsStore;

  constructor(ctx: DurableObjectState, env: BridgeEnv) {
    super(ctx, env);
    this.testHooks = env.HOSTADM_TEST_HOOKS === '1';
    this.objectName = ctx.storage.kv.get<string>(OBJECT_NAME) ?? '';
    this.scope = ctx.storage.kv.get<string>(SCOPE) ?? '';
    if (this.testHooks) countFor(objectCounters.wakeUps, this.objectName);
    this.relay = this.makeRelay();
    this.app = this.makeApp();
    this.revive();
    // Memory of the stored alarm is gone after a wake-up: recompute it from every peer once.
    this.scheduleAlarm();
  }

  override async fetch(request: Request): Promise<Response> {
    const name = request.headers.get(OBJECT_HEADER);
    if (name && name !== this.objectName) this.named(name, request.headers.get(SCOPE_HEADER) ?? '');
    return this.app.fetch(request, this.env);
  }

  /** RPC from another object revoking a key (the session index named this one): closes its sockets here. */
  cutOffKey(keyId: string): number {
    if (this.testHooks) countFor(objectCounters.crossObjectCalls, this.objectName);
    const n = this.relay.cutOff(keyId);
    this.countersLater();
    return n;
  }

  /** RPC (test hooks; the alarm does the same): re-reads the host index for this object's directory sockets. */
  async pollDirectory(): Promise<number> {
    if (this.testHooks) countFor(objectCounters.crossObjectCalls, this.objectName);
    await this.relay.directory.poll();
    this.countersLater();
    return this.relay.directory.clients.size;
  }

  /** Writes this object's counters to D1 now (the periodic flush; `/metrics` sums the rows). */
  async flushMetrics(): Promise<void> {
    if (!this.objectName) return;
    await this.metricsStore.flush(this.objectName, this.relay.snapshot(), Date.now());
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const peer = this.peerOf(ws);
    if (!peer) return;
    if (typeof message === 'string') this.relay.receive(peer, message);
    else this.relay.receive(peer, new Uint8Array(message), true);
    // Per frame: nothing but the counters. Alarm deadlines change only on connect and in `alarm`.
    this.countersLater();
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.forget(ws);
    // Answer the peer's close frame at once: a client whose close is never answered waits for its
    // library's timeout (about 10 s for Node's ws) before its process can exit. 1005 and 1006 are
    // not codes one may send.
    try {
      ws.close(code === 1005 || code === 1006 || code === 1015 ? 1000 : code, 'closed');
    } catch {
      // already closed
    }
    // The last socket gone: flush the counters now, before the object is evicted with its timers.
    if (this.ctx.getWebSockets().length === 0)
      await this.flushMetrics().catch((err: unknown) => this.relay.logger.warn({ err }, 'could not flush the counters'));
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.forget(ws);
  }

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.relay.directory.watching) await this.relay.directory.poll();
    await this.rereadRevocations();
    await this.relay.sweep();
    this.countersLater();
    this.scheduleAlarm();
    // A prune batch came back full: the next one soon, whoever is connected.
    if (this.relay.retention.due()) this.scheduleBy(this.relay.clock.now() + 1000);
  }

  /**
   * Drops the in-memory relay and revives it from attachments and storage: what a wake-up does. Used
   * when a socket's peer is unknown, and by the test route that simulates hibernation.
   */
  reload(): void {
    this.saveCounters();
    this.relay = this.makeRelay();
    this.app = this.makeApp();
    this.revive();
  }

  // ---- used by the test routes (test-hooks.ts) ----

  advanceClock(seconds: number): void {
    const kv = this.ctx.storage.kv;
    kv.put(CLOCK_OFFSET, (kv.get<number>(CLOCK_OFFSET) ?? 0) + seconds * 1000);
  }

  /** Tests: lets alarms run the sweep on their own (off by default under test hooks). */
  setAlarms(on: boolean): void {
    this.ctx.storage.kv.put(ALARMS_ON, on);
    this.alarmAt = null;
    if (on) this.scheduleAlarm();
  }

  /** Applies test config overrides; only before any peer connected (the relay is rebuilt). */
  reconfigure(overrides: RelayConfigOverrides): boolean {
    if (this.ctx.getWebSockets().length > 0) return false;
    this.ctx.storage.kv.put(CONFIG_OVERRIDES, overrides);
    this.relay = this.makeRelay();
    this.app = this.makeApp();
    return true;
  }

  // ---- internals ----

  /** The first request names the object (the Worker sends its name and scope); the relay is rebuilt with them. */
  private named(name: string, scope: string): void {
    const kv = this.ctx.storage.kv;
    kv.put(OBJECT_NAME, name);
    kv.put(SCOPE, scope);
    this.objectName = name;
    this.scope = scope;
    if (this.ctx.getWebSockets().length > 0) return;
    this.relay = this.makeRelay();
    this.app = this.makeApp();
  }

  private makeRelay(): Relay {
    const env = this.env;
    const kv = this.ctx.storage.kv;
    const logger = consoleLogger(env.LOG_LEVEL === 'debug');
    this.sessions = new D1SessionIndex(env.DB, { scope: this.scope, object: this.objectName }, (object, keyId) => this.cutOffIn(object, keyId), logger);
    this.metricsStore = new D1MetricsStore(env.DB, this.scope);
    const clock: Clock = this.testHooks ? { now: () => Date.now() + (kv.get<number>(CLOCK_OFFSET) ?? 0) } : { now: () => Date.now() };
    const overrides = this.testHooks ? (kv.get<RelayConfigOverrides>(CONFIG_OVERRIDES) ?? {}) : {};
    const relay = new Relay({
      store: new D1KeyStore(env.DB),
      crypto: new PortableKeyCrypto(),
      clock,
      logger,
      joinSecret: new TextEncoder().encode(env.JOIN_SECRET ?? ''),
      hostname: env.BRIDGE_HOSTNAME || 'bridge',
      config: { ...WORKERS_CONFIG, ...(this.testHooks ? TEST_CONFIG : {}), ...overrides, blacklist: { ...overrides.blacklist } },
      persist: (peer) => this.save(peer),
      pruneMark: { get: () => kv.get<number>(STORE_PRUNED), set: (at) => kv.put(STORE_PRUNED, at) },
      hostIndex: new D1HostIndex(env.DB, this.scope),
      sessions: this.sessions,
    });
    const saved = kv.get<SavedCounters>(COUNTERS);
    if (saved) relay.metrics.restore(saved);
    return relay;
  }

  private makeApp(): ReturnType<typeof createBridgeApp<BridgeEnv>> {
    const app = createBridgeApp<BridgeEnv>({
      relay: this.relay,
      adminSecret: this.env.ADMIN_SECRET ?? '',
      runtime: {
        remoteAddress: (c) => (this.testHooks && c.req.header(TEST_ADDRESS_HEADER)) || c.req.header('cf-connecting-ip') || '',
        upgrade: (_c, address, room) => this.accept(address, room),
        metrics: async () => {
          await this.flushMetrics();
          return this.metricsStore.sum();
        },
      },
    });
    if (this.testHooks) testRoutes(app, this);
    return app;
  }

  private cutOffIn(object: string, keyId: string): Promise<number> {
    if (this.testHooks) countFor(objectCounters.crossObjectCalls, this.objectName);
    return this.env.RELAY_HUB.get(this.env.RELAY_HUB.idFromName(object)).cutOffKey(keyId);
  }

  private accept(address: string, room: RoomName): Response {
    if ((this.env.JOIN_SECRET ?? '').length < MIN_SECRET_LENGTH || (this.env.ADMIN_SECRET ?? '').length < MIN_SECRET_LENGTH) {
      return new Response(`bridge misconfigured: set JOIN_SECRET and ADMIN_SECRET (≥ ${MIN_SECRET_LENGTH} characters) with wrangler secret put\n`, {
        status: 500,
      });
    }
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server);
    const peer = this.relay.open(this.socketFor(server), address, room);
    const sid = crypto.randomUUID();
    this.bySocket.set(server, peer);
    this.sids.set(peer, sid);
    this.save(peer);
    const kv = this.ctx.storage.kv;
    const now = this.relay.clock.now();
    if (kv.get<number>(REVOCATIONS_READ) === undefined) kv.put(REVOCATIONS_READ, now);
    this.countersLater();
    // This peer's sign-in deadline, and the re-read now that someone is connected.
    this.scheduleBy(peer.connectedAt + this.relay.config.unauthenticatedCloseSeconds * 1000);
    this.scheduleBy((kv.get<number>(REVOCATIONS_READ) ?? now) + this.relay.config.revocationPollSeconds * 1000);
    return new Response(null, { status: 101, webSocket: client });
  }

  private revive(): void {
    for (const ws of this.ctx.getWebSockets()) {
      if (this.reviveSocket(ws)) continue;
      try {
        ws.close(1011, 'bridge state lost');
      } catch {
        // Already closing (the relay closed it and dropped its state).
      }
    }
    this.relay.restored();
  }

  private reviveSocket(ws: WebSocket): Peer | undefined {
    const saved = loadPeerState(this.ctx.storage.kv, ws);
    if (!saved) return undefined;
    const peer = this.relay.restore(this.socketFor(ws), saved.peer, saved.md5Keys);
    this.bySocket.set(ws, peer);
    this.sids.set(peer, saved.sid);
    return peer;
  }

  /**
   * A socket the relay closes (4003, 4009, 1009, ...) forgets its saved state at once: should the hub
   * sleep before the close completes, waking for it must not revive the peer (and re-announce).
   */
  private socketFor(ws: WebSocket): DurableObjectPeerSocket {
    return new DurableObjectPeerSocket(ws, () => {
      const peer = this.bySocket.get(ws);
      forgetPeerState(this.ctx.storage.kv, ws, peer && this.sids.get(peer));
    });
  }

  /** The peer of a socket, reviving the whole hub when this socket is unknown (should not happen). */
  private peerOf(ws: WebSocket): Peer | undefined {
    let peer = this.bySocket.get(ws);
    if (!peer) {
      this.reload();
      peer = this.bySocket.get(ws);
    }
    return peer;
  }

  private save(peer: Peer): void {
    const sid = this.sids.get(peer);
    if (!sid || peer.closed) return;
    savePeerState(this.ctx.storage.kv, (peer.socket as DurableObjectPeerSocket).ws, sid, peer);
    // A directory socket that listed its keys waits for hosts: the poll is due from now on.
    if (peer.room === DIRECTORY_ROOM && peer.state === 'signed-in') {
      this.scheduleBy(this.relay.clock.now() + this.relay.config.directoryPollSeconds * 1000);
    }
  }

  private forget(ws: WebSocket): void {
    let peer = this.bySocket.get(ws);
    if (!peer) {
      // A close that woke the hub: `getWebSockets()` no longer lists the closing socket, so the
      // constructor did not revive it. Revive it from its attachment, then let it go (its partners
      // are told, as when the hub is awake).
      peer = this.reviveSocket(ws);
      if (!peer) return;
      this.relay.restored();
    }
    this.relay.closed(peer);
    const sid = this.sids.get(peer);
    if (sid) forgetPeerKeys(this.ctx.storage.kv, sid);
    this.countersLater();
  }

  /**
   * The relay re-reads revocations written behind its back (`wrangler d1 execute`) every
   * `revocationPollSeconds` of its own uptime, which a hub that sleeps between alarms never reaches:
   * each alarm wakes a new instance. So the hub keeps the time of its last re-read in storage and
   * does it here, for the keys of connected peers.
   */
  private async rereadRevocations(): Promise<void> {
    const kv = this.ctx.storage.kv;
    const now = this.relay.clock.now();
    const last = kv.get<number>(REVOCATIONS_READ);
    if (last !== undefined && now - last < this.relay.config.revocationPollSeconds * 1000) return;
    kv.put(REVOCATIONS_READ, now);
    if (last === undefined) return;
    const signedIn = new Set<string>();
    for (const ws of this.ctx.getWebSockets()) {
      const key = this.bySocket.get(ws)?.key;
      if (key) signedIn.add(key.id);
    }
    if (signedIn.size === 0) return;
    // A second of overlap, as the relay's own re-read: a revocation committed meanwhile is not missed.
    for (const key of await this.relay.store.revokedSince(last - 1000)) {
      if (signedIn.has(key.id)) await this.relay.revoke(key.id);
    }
  }

  /**
   * Counters are saved a second after a change (not per frame), and flushed to D1 for `/metrics`
   * every `metricsFlushSeconds` while they change: one write per busy object per period.
   */
  private countersLater(): void {
    this.countersTimer ??= setTimeout(() => {
      this.countersTimer = null;
      this.saveCounters();
    }, 1000);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = null;
      this.flushMetrics().catch((err: unknown) => this.relay.logger.warn({ err }, 'could not flush the counters'));
    }, this.relay.config.metricsFlushSeconds * 1000);
  }

  private saveCounters(): void {
    this.ctx.storage.kv.put(COUNTERS, this.relay.metrics.save());
  }

  /**
   * The sweep runs only when it has work: the sign-in deadline of a peer not yet signed in, and
   * the revocation re-read while anyone is connected. An idle hub sleeps between re-reads. A full
   * pass over the peers, so only at wake-up and after each alarm; a new peer uses `scheduleBy`.
   */
  private scheduleAlarm(): void {
    this.alarmAt = null;
    const c = this.relay.config;
    const now = this.relay.clock.now();
    let next = Number.POSITIVE_INFINITY;
    let connected = false;
    for (const ws of this.ctx.getWebSockets()) {
      const peer = this.bySocket.get(ws);
      if (!peer || peer.closed) continue;
      connected = true;
      if (peer.state !== 'signed-in') next = Math.min(next, peer.connectedAt + c.unauthenticatedCloseSeconds * 1000);
    }
    // From the last re-read (kept in storage), not from now: a hub woken more often than that
    // would otherwise push the re-read back at each wake-up.
    if (connected) next = Math.min(next, (this.ctx.storage.kv.get<number>(REVOCATIONS_READ) ?? now) + c.revocationPollSeconds * 1000);
    // Directory sockets learn of hosts coming and going by this poll of the host index.
    if (this.relay.directory.watching) next = Math.min(next, now + c.directoryPollSeconds * 1000);
    if (Number.isFinite(next)) this.scheduleBy(next);
  }

  /** Makes sure an alarm fires by `due` (relay clock), keeping an earlier one. */
  private scheduleBy(due: number): void {
    // Tests drive the sweep themselves (as on Node), unless they turned alarms on.
    if (this.testHooks && !this.ctx.storage.kv.get<boolean>(ALARMS_ON)) return;
    // The test clock may run ahead of the real one; alarms use real time.
    const at = Date.now() + Math.max(0, due - this.relay.clock.now()) + 50;
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }
}
