/**
 * What the bridge announces to a signed-in peer (docs/bridge-protocol.md §2.5): the peers of the other
 * kind it may reach, how it reaches each (a shared key, or only a host name asked for, for a password
 * sign-in) and since when; and whether that differs from what the peer was last told.
 */
import { eventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { markOverBound } from './forwarding.ts';
import type { Matcher } from './matching.ts';
import { NO_IDS, type Peer } from './peer.ts';
import type { PeerKind } from './ports.ts';

/** The announcement entry for one peer. */
export interface PeerInfo {
  id: string;
  kind: PeerKind;
  nickname: string;
  hostname: string;
  /** Agents: the fingerprint of the host key they signed in with; clients: null. */
  host_key_fingerprint: string | null;
  /** `key`: the two share a key; `password`: matched by host name only, for a password sign-in. */
  access: 'key' | 'password';
  /** When this connection of the peer was made (ISO 8601). */
  online_since: string;
}

export interface Offer {
  ids: ReadonlySet<string>;
  /** How the offered peers are reached, when any only by host name ('' when all share a key). */
  accessKey: string;
  /** The `bridge` event to send, built only when it is sent. */
  event(): ReturnType<typeof eventEnvelope>;
  /** Whether this differs from what `peer` was last announced (a change of access alone counts). */
  changedFor(peer: Peer): boolean;
}

export function offerOf(matcher: Matcher, peer: Peer): Offer {
  const offer = matcher.offer(peer);
  const access = offer.map((q) => matcher.access(peer, q));
  // A host that registers a client's key after its password sign-in changes how they match, not who.
  const accessKey = access.includes('password') ? access.join(',') : '';
  const ids = new Set(offer.map((q) => q.id));
  return {
    ids,
    accessKey,
    event: () =>
      eventEnvelope('bridge', {
        available_connections: offer.map((q) => q.id),
        // This bridge relays binary frames as binary (docs/bridge-protocol.md §2.6): clients may offer hsc2.
        binary_frames: true,
        peers: offer.map(
          (q, i): PeerInfo => ({
            id: q.id,
            kind: q.kind!,
            nickname: q.key!.nickname,
            hostname: q.hostname,
            host_key_fingerprint: q.hostKeyFingerprint,
            access: access[i]!,
            online_since: new Date(q.connectedAt).toISOString(),
          }),
        ),
      }),
    changedFor: (p) => ids.size !== p.announced.size || offer.some((q) => !p.announced.has(q.id)) || accessKey !== p.announcedAccess,
  };
}

/**
 * Sends `peer` its offer when it changed (or always when `force`: right after it listed its keys);
 * whether one was sent. Always sent, even to a peer over its bound (it must know whom it may reach):
 * the stuck-queue close (1013) bounds what a peer that does not read can hold.
 */
export function sendOffer(matcher: Matcher, peer: Peer, force: boolean, maxQueueBytes: number, now: number): boolean {
  if (peer.closed || peer.state !== 'signed-in') return false;
  const offer = offerOf(matcher, peer);
  if (!force && !offer.changedFor(peer)) return false;
  peer.announced = offer.ids.size === 0 ? NO_IDS : offer.ids;
  peer.announcedAccess = offer.accessKey;
  if (peer.socket.bufferedAmount > maxQueueBytes) markOverBound(peer, now);
  peer.socket.send(JSON.stringify(offer.event()));
  return true;
}
