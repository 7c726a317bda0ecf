/**
 * The bridge transport (docs/bridge-protocol.md §2–§3), three units in a row: the bridge session
 * (bridge-session.ts: sign-in with the client's RSA key, the hosts it may reach), the channel
 * handshake with one host (bridge-handshake.ts), and the channel's framing (bridge-framing.ts), which
 * the connection handed back wraps: `send` seals and relays, frames from the host are opened in order.
 * The channel's key proof (C2) signs the client in on the host, so the transport resolves with that
 * session (`[token, ttl]`), which the client installs as it is, with no further request; a host that
 * does not know the key yet answers C2 with an invitation to sign in with a password on the channel
 * instead (`keyNotRegistered`), after which the key can be registered there (`registerKey`).
 *
 * Runtime-neutral (WebCrypto only); the WebSocket constructor is passed in or taken from globalThis.
 */
import {
  BINARY_CHANNEL_VERSIONS,
  HandshakeError,
  hostKeyFingerprint as fingerprintOf,
  RESUMABLE_CHANNELS,
  startClientResumption,
  type ClientTicket,
} from '@hostadm/shared/crypto/index.ts';
import { nextTurn } from '@hostadm/shared/net/next-turn.ts';
import { ROOM_HOST_DESTINATION } from '@hostadm/shared/protocol/bridge-requests.ts';
import { ConnectionError } from './errors.ts';
import type { CloseInfo, Transport, TransportFactory, TransportHandlers } from './transport.ts';
import { chooseHost, describeHost, DIRECTORY_ROOM, hostList, hostRoom, relayUrl, type BridgeHostSelector } from './bridge-hosts.ts';
import { ChannelHandshake, r1Body, startFullHandshake, type EarlyOpening } from './bridge-handshake.ts';
import { BridgeSession, clientKeyIds } from './bridge-session.ts';
import { messageOf } from './bridge-replies.ts';
import type { WebSocketConstructor } from './websocket.ts';
import { privateKeyOf, type PrivateKeyMaterial } from './key-auth.ts';
import { memoryBridgeTicketStore, type BridgeTicketStore } from './bridge-signin.ts';
import { memoized } from './memo.ts';
import { memoryKeeper, type TicketKeeper } from './ticket-keeper.ts';

export type { BridgeHostSelector } from './bridge-hosts.ts';
export type { ClientTicket } from '@hostadm/shared/crypto/index.ts';
export { memoryBridgeTicketStore, type BridgeSignInTicket, type BridgeTicketStore } from './bridge-signin.ts';

/** Where the resumption ticket for this host is kept between channels (the CLI: a 0600 file per profile). */
export type TicketStore = TicketKeeper<ClientTicket>;

/** A ticket kept in memory: this factory's later connections (a reconnect) resume. */
export const memoryTicketStore: () => TicketStore = memoryKeeper;
export { describeHost, relayUrl } from './bridge-hosts.ts';

export interface BridgeTransportOptions {
  /** `ws(s)://bridge:port` (the `/relay` path is added when missing). */
  bridgeUrl: string;
  host: BridgeHostSelector;
  /** The client's RSA key: PKCS#8 (or PKCS#1) private key PEM (or WebCrypto keys: `cryptoKeys`) and its certificate or SPKI public key PEM. */
  key: PrivateKeyMaterial & { certPem?: string; publicPem?: string };
  /** The host key pinned for this host (base64 raw Ed25519 public key). */
  pinnedHostKey?: string;
  /**
   * First use (nothing pinned): called with the presented fingerprint and key; true accepts it (the
   * caller should pin `hostKeyB64`). Without a pin and without this callback the connection is refused.
   * An accepted key stays pinned for this factory's later reconnects.
   */
  onHostKey?: (fingerprint: string, hostKeyB64: string) => boolean | Promise<boolean>;
  /** A client join token: enroll the key at the bridge before the first sign-in (once per factory). */
  joinToken?: string;
  /** Nickname to enroll with. */
  nickname?: string;
  /** Called once the bridge has enrolled the key with the join token (a caller may remember it). */
  onEnrolled?: () => void;
  /** The hostname reported to the bridge's identify. Default `hostadm-sdk`. */
  clientHostname?: string;
  webSocket?: WebSocketConstructor;
  /**
   * Resumption tickets: a store to keep them in (across processes), or `false` for none. By default
   * they are kept in memory, so this factory's reconnects resume without RSA.
   */
  tickets?: TicketStore | false;
  /**
   * Bridge sign-in tickets (docs/bridge-protocol.md §2.3): a store to keep them in (across processes),
   * or `false` for none. By default in memory, so this factory's later sessions with the bridge (the
   * directory, a reconnect) sign in without RSA.
   */
  signInTickets?: BridgeTicketStore | false;
  /** The bridge refused a kept sign-in ticket; the key sign-in follows (for logs and debug output). */
  onSignInTicketRefused?: (message: string) => void;
}

/** The pinned key's fingerprint, needed twice per opening (its room, then the host among those announced). */
const hostKeyFingerprint = memoized(fingerprintOf);

export function bridgeTransport(options: BridgeTransportOptions): TransportFactory {
  const url = relayUrl(options.bridgeUrl);
  const hostLabel = describeHost(options.host);
  const description = `bridge ${url} host ${hostLabel}`;
  // A host named by nickname may not know this key yet: ask the bridge to reach it for a password sign-in.
  const reachName = options.host.name ?? options.host.nickname;
  let pinned = options.pinnedHostKey;
  let enrolled = options.joinToken === undefined;
  const tickets = options.tickets === false ? null : (options.tickets ?? memoryTicketStore());
  const signInTickets = options.signInTickets === false ? undefined : (options.signInTickets ?? memoryBridgeTicketStore());

  return {
    description,
    async open(handlers: TransportHandlers, { signal, timeoutMs }) {
      const deadline = Date.now() + timeoutMs;
      const pinnedFingerprint = pinned !== undefined ? await hostKeyFingerprint(pinned) : undefined;
      const join = (room: string, behindSignIn?: () => Promise<string | undefined>) => joinRoom(room, { signal, deadline, behindSignIn });
      // The key's ids, the ticket and the opening (a ticket's resumption, else the full handshake with a
      // pinned host) are made while the bridge answers the upgrade (the request is written first), so
      // that in the host's room R1 or C1 can leave right behind the bridge sign-in
      // (docs/bridge-protocol.md §2.3) with no work between.
      const prepared = afterThisTurn(async () => {
        const ids = await clientKeyIds(options.key);
        const ticket = storedTicket(ids.md5);
        let opening: EarlyOpening | undefined;
        if (ticket) opening = { kind: 'resume', started: await startClientResumption(ticket) };
        else if (pinnedFingerprint) opening = await startFullHandshake(keyFor(ids), { channels: BINARY_CHANNEL_VERSIONS, wantTicket: tickets !== null });
        return { ids, ticket, opening };
      });
      prepared.catch(() => undefined); // awaited below; a failure before then is not unhandled
      const earlyFirst = async () => {
        const { ticket, opening } = await prepared;
        if (ticket) spendTicket(ticket); // R1 leaves now: the ticket is spent whatever follows
        return opening && (opening.kind === 'resume' ? r1Body(opening.started) : opening.body);
      };
      // The host's own room (docs/bridge-protocol.md §2.10): straight there when its key is pinned,
      // else (or when it is not there: an agent of an older version sits in the shared room) where
      // the directory says it is.
      let session: BridgeSession | null = null;
      try {
        session = pinnedFingerprint ? await join(hostRoom(pinnedFingerprint), earlyFirst) : null;
        if (session && !announces(session, pinnedFingerprint)) {
          session.close({ code: 1000, reason: 'host not in its room' });
          session = null;
        }
        // What went behind the sign-in of a room left (no host there) reached no host: sent again from the host's room.
        const sentEarly = session?.earlyRelaySent === true;
        session ??= await join(await roomFromDirectory(join, pinnedFingerprint));
        const { ids, ticket, opening } = await prepared;
        if (ticket) spendTicket(ticket);
        return await openChannel(session, handlers, { signal, deadline, ids, ticket, early: opening && { opening, sentEarly } });
      } catch (err) {
        session?.close({ code: 4000, reason: messageOf(err) });
        if (err instanceof ConnectionError) throw err;
        if (err instanceof HandshakeError) {
          const fp = err.fingerprints ? ` (pinned ${err.fingerprints.pinned}, presented ${err.fingerprints.presented})` : '';
          throw new ConnectionError(`the channel handshake with ${hostLabel} failed (${err.reason}): ${err.message}${fp}`, { cause: err });
        }
        throw new ConnectionError(`cannot connect through ${url}: ${messageOf(err)}`, { cause: err });
      }
    },
  };

  /**
   * The stored ticket when it is for this very host (its pinned key: a ticket never goes to another
   * host), this key, a channel this client speaks, and not expired. It stays stored until its R1
   * leaves (`spendTicket`): a bridge that cannot be reached does not cost the next call its ticket.
   */
  function storedTicket(md5: string): ClientTicket | undefined {
    const ticket = tickets?.load();
    if (!ticket || pinned === undefined) return undefined;
    const fits = ticket.hostKey === pinned && ticket.md5Key === md5 && ticket.expiresAt > Date.now() && RESUMABLE_CHANNELS.includes(ticket.channel);
    return fits ? ticket : undefined;
  }

  /** The client key as the channel handshake takes it. */
  function keyFor(ids: { publicPem: string; spkiPem: string }) {
    return { private: privateKeyOf(options.key), publicPem: ids.publicPem, spkiPem: ids.spkiPem };
  }

  /**
   * A ticket is used once: forgotten as its R1 leaves (unless the store holds another by then), at the
   * next turn, so the store's read and removal (a file, for the CLI) are not in R1's way. Nothing uses
   * the ticket again meanwhile (one per opening).
   */
  function spendTicket(ticket: ClientTicket): void {
    afterThisTurn(async () => forgetTicket(ticket)).catch(() => undefined);
  }

  function forgetTicket(ticket: ClientTicket): void {
    if (tickets?.load()?.ticket === ticket.ticket) tickets.save(undefined);
  }

  /** Whether the session announces the host (a pinned key that differs counts: the channel refuses it loudly). */
  function announces(session: BridgeSession, pinnedFingerprint: string | undefined): boolean {
    try {
      return chooseHost(options.host, session.peers, pinnedFingerprint) !== undefined;
    } catch {
      return true;
    }
  }

  /** Asks the directory where the host is; a host it does not list is not online for this key. */
  async function roomFromDirectory(join: (room: string) => Promise<BridgeSession>, pinnedFingerprint: string | undefined): Promise<string> {
    const directory = await join(DIRECTORY_ROOM);
    try {
      const peer = chooseHost(options.host, directory.peers, pinnedFingerprint);
      if (!peer) {
        throw new ConnectionError(
          `host ${hostLabel} is not online at ${url} for this key (hosts this key may reach: ${hostList(directory.peers)}); check the name with hostadm hosts`,
          { closeCode: 4404 },
        );
      }
      return peer.room ?? '';
    } finally {
      directory.close({ code: 1000, reason: 'found the room' });
    }
  }

  /** Signs in on one room of the bridge (enrolling the key first, once, when given a join token). */
  function joinRoom(
    room: string,
    { signal, deadline, behindSignIn }: { signal: AbortSignal | undefined; deadline: number; behindSignIn: (() => Promise<string | undefined>) | undefined },
  ): Promise<BridgeSession> {
    return BridgeSession.open(
      {
        bridgeUrl: options.bridgeUrl,
        room,
        key: options.key,
        ...(enrolled ? {} : { joinToken: options.joinToken }),
        ...(options.nickname ? { nickname: options.nickname } : {}),
        onEnrolled: () => {
          enrolled = true;
          options.onEnrolled?.();
        },
        ...(reachName ? { reach: [reachName] } : {}),
        ...(options.clientHostname ? { clientHostname: options.clientHostname } : {}),
        ...(options.webSocket ? { webSocket: options.webSocket } : {}),
        ...(signInTickets ? { signInTickets } : {}),
        ...(options.onSignInTicketRefused ? { onSignInTicketRefused: options.onSignInTicketRefused } : {}),
        ...(behindSignIn ? { behindSignIn } : {}),
      },
      { timeoutMs: Math.max(1, deadline - Date.now()), ...(signal ? { signal } : {}) },
    );
  }

  /**
   * One channel to the chosen host over `session`: the handshake (bridge-handshake.ts), then the
   * framing (bridge-framing.ts) as the Transport. States: handshake → open → closed. Until the
   * transport is handed over, a close, the deadline or a cancel fails the opening; after, `onClose`.
   */
  async function openChannel(
    session: BridgeSession,
    handlers: TransportHandlers,
    {
      signal,
      deadline,
      ids,
      ticket,
      early,
    }: {
      signal: AbortSignal | undefined;
      deadline: number;
      ids: { publicPem: string; spkiPem: string; md5: string };
      ticket: ClientTicket | undefined;
      early: { opening: EarlyOpening; sentEarly: boolean } | undefined;
    },
  ): Promise<Transport> {
    // A pinned host is chosen by its key, the name being only a label: a rogue agent announcing the
    // same name is never picked (docs/security.md). A host not announced now is not coming: say so.
    const pinnedFingerprint = pinned !== undefined ? await hostKeyFingerprint(pinned) : undefined;
    const peer = chooseHost(options.host, session.peers, pinnedFingerprint);
    if (!peer) {
      throw new ConnectionError(
        `host ${hostLabel} is not online at ${url} for this key (hosts this key may reach: ${hostList(session.peers)}); check the name with hostadm hosts`,
        { closeCode: 4404 },
      );
    }
    const agentId = peer.id;
    let state: 'handshake' | 'open' | 'closed' = 'handshake';
    let failOpen: ((err: ConnectionError) => void) | null = null;
    const end = (info: CloseInfo) => {
      if (state === 'closed') return;
      const wasOpen = state === 'open';
      state = 'closed';
      handshake.framing?.close(info);
      session.close(info);
      if (wasOpen) handlers.onClose(info);
      else failOpen?.(new ConnectionError(`${description}: ${info.reason}`, { closeCode: info.code }));
    };
    session.onClose = (info) => end(info);
    session.onPeers = () => {
      if (!session.peers.some((p) => p.id === agentId)) end({ code: 4100, reason: `host ${hostLabel} left the bridge` });
    };
    // The host will never see that frame; the channel's sequence is broken either way. An R1 sent
    // behind the sign-in that found no host yet (it came meanwhile) goes again, to the host's id.
    session.onDropped = (destination, reason) => {
      if (destination === agentId) end({ code: 4101, reason: `the bridge dropped a frame to ${hostLabel} (${reason})` });
      else if (destination === ROOM_HOST_DESTINATION) handshake.earlyFirstDropped();
    };
    // The connection handed back; it exists before the handshake ends so that requests pipelined
    // behind a resumption's proof (onEarlySend) are sent on, and later failed with, this very object.
    const transport: Transport = {
      send: (text) => {
        if (!handshake.framing || state === 'closed') throw new ConnectionError(`the channel to ${hostLabel} is not open`);
        handshake.framing.send(text);
      },
      close: (code, reason) => end({ code: code ?? 1000, reason: reason ?? 'closed by the client' }),
    };
    const handshake = new ChannelHandshake({
      session,
      agentId,
      hostLabel,
      key: keyFor(ids),
      ticket,
      early,
      wantTicket: tickets !== null,
      pinnedHostKey: pinned,
      onHostKey: options.onHostKey,
      onChannelClose: (info) => end(info),
      ...(handlers.onEarlySend ? { onProofSent: () => handlers.onEarlySend?.(transport) } : {}),
    });
    session.onRelay = (from, body) => {
      if (from !== agentId || state === 'closed') return;
      handshake.receive(body);
    };
    session.onRelayBinary = (from, body) => {
      if (from !== agentId || state === 'closed') return;
      handshake.receiveBinary(body);
    };
    for (const [from, body] of session.takeUnclaimed()) session.onRelay(from, body);

    const opening = new Promise<never>((_, reject) => (failOpen = reject));
    opening.catch(() => undefined); // observed through race(); a failure with nothing racing is not unhandled
    const timer = setTimeout(() => end({ code: 4000, reason: `the host did not finish the channel handshake in time` }), Math.max(0, deadline - Date.now()));
    const onAbort = () => end({ code: 4000, reason: 'connecting was cancelled' });
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const race = <T>(p: Promise<T>) => Promise.race([p, opening]);
      const result = await race(handshake.run(race));
      pinned = result.hostKey;
      // Saved before any reply is handed on: a one-shot caller may exit as soon as its reply is in.
      if (result.ticket) tickets?.save(result.ticket);
      Object.assign(transport, result.outcome);
      result.framing.onPlain = (text) => handlers.onMessage(text);
      state = 'open';
      failOpen = null;
      for (const text of result.following) if (state === 'open') handlers.onMessage(text);
      return transport;
    } catch (err) {
      end({ code: 4000, reason: messageOf(err) });
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** `work`'s result, the work begun at the next turn of the event loop (after this turn's writes). */
function afterThisTurn<T>(work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => nextTurn(() => work().then(resolve, reject)));
}
