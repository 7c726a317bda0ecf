/**
 * @module One connection's state. The life of a peer:
 *
 *   identifying ──identify reply──▶ identified ──auth_ssl ok──▶ signed-in ──list_ssl_checksums──▶ matched
 *        │                              │  ▲                        │
 *        │                              └──┘ bridge_enroll          └─ bridge_keys updates md5Keys
 *        └── any state: closed (4001 no sign-in, 4003 revoked, 4009 replaced, 1009, 1013, 4000 silent, 1008)
 *
 * Kept small (a handful of fields, shared empty sets) because idle agents are most connections;
 * everything here is plain data, so a Durable Object can keep it in a socket attachment.
 */
import { eventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { BRIDGE_GREETING_EVENT } from '@hostadm/shared/protocol/bridge-requests.ts';
import { CLOSE, type RelayConfig } from './config.ts';
import type { PeerKind, PeerSocket } from './ports.ts';
import { randomAlnum } from './random.ts';
import type { RoomName } from './rooms.ts';

export type PeerState = 'identifying' | 'identified' | 'signed-in';

/** Shared by every peer that has none, so an idle peer allocates no sets. */
export const NO_IDS: ReadonlySet<string> = new Set<string>();

export interface SignedInKey {
  id: string;
  md5Key: string;
  nickname: string;
}

export class Peer {
  readonly socket: PeerSocket;
  readonly address: string;
  /** The room the socket landed in (rooms.ts): '' shared, `host/<fp>`, `directory`. */
  readonly room: RoomName;
  readonly connectedAt: number;
  /** `agent-<uuid>` / `client-<uuid>` once identified (new for every connection); '' before. */
  id = '';
  kind: PeerKind | null = null;
  state: PeerState = 'identifying';
  hostname = '';
  /** Agents: `SHA256:` fingerprint of the registered host key (computed by the bridge, not taken from identify). */
  hostKeyFingerprint: string | null = null;
  key: SignedInKey | null = null;
  /**
   * The outstanding `auth_ssl` test string (the greeting's, from connect, or stage 1's, which replaces
   * it: one at a time), when it was issued, and the md5_key it is pinned to ('' = any).
   */
  challenge: string | null = null;
  challengeAt = 0;
  challengeMd5 = '';
  /** md5_keys the peer listed (list_ssl_checksums / bridge_keys). */
  md5Keys: ReadonlySet<string> = NO_IDS;
  /** Agents: the entries the directory indexes it under (directory.ts), null until it listed its keys. */
  directoryEntries: ReadonlySet<string> | null = null;
  /** Ids last announced to this peer: the only destinations it may send to. */
  announced: ReadonlySet<string> = NO_IDS;
  /** How each of those was matched, when any only by host name ('' when all share a key). */
  announcedAccess = '';
  /** The sender header `rewrite` writes for byte frames (this peer's id), made at its first relayed frame. */
  header: Uint8Array | null = null;
  /** The destination of this peer's last byte frame, as bytes and as id (most frames go where the last went). */
  lastDestBytes: Uint8Array | null = null;
  lastDest = '';
  lastSeen: number;
  /** When the peer's send queue went over the bound (0 = not over). */
  overSince = 0;
  closed = false;
  /** API calls of one peer run one after another (identify reply before auth_ssl, and so on). */
  chain: Promise<void> | null = null;
  /** API calls received and not finished (bounded). */
  pendingApi = 0;

  constructor(socket: PeerSocket, address: string, now: number, room: RoomName = '') {
    this.socket = socket;
    this.address = address;
    this.room = room;
    this.connectedAt = now;
    this.lastSeen = now;
  }

  get countedAs(): PeerKind | 'pending' {
    return this.kind ?? 'pending';
  }
}

/**
 * What a runtime that loses its memory between events keeps of a peer (a Durable Object's socket
 * attachment, kept small: the md5_key list goes elsewhere and `announced` is recomputed, since the
 * offer is a function of every peer's keys). JSON-safe plain data.
 */
export interface SavedPeer {
  id: string;
  kind: PeerKind | null;
  state: PeerState;
  hostname: string;
  hostKeyFingerprint: string | null;
  key: SignedInKey | null;
  challenge: string | null;
  challengeAt: number;
  challengeMd5: string;
  address: string;
  connectedAt: number;
  /** Absent in attachments saved before rooms: the shared room. */
  room?: RoomName;
  /** Directory sockets: the tag of the last announcement (so a wake-up does not announce it again). */
  announcedAccess?: string;
}

export function savePeer(peer: Peer): SavedPeer {
  return {
    id: peer.id,
    kind: peer.kind,
    state: peer.state,
    hostname: peer.hostname,
    hostKeyFingerprint: peer.hostKeyFingerprint,
    key: peer.key,
    challenge: peer.challenge,
    challengeAt: peer.challengeAt,
    challengeMd5: peer.challengeMd5,
    address: peer.address,
    connectedAt: peer.connectedAt,
    room: peer.room,
    ...(peer.room === 'directory' ? { announcedAccess: peer.announcedAccess } : {}),
  };
}

/** The peer as it was saved; `lastSeen` restarts at `now` (what happened while asleep is unknown). */
export function revivePeer(socket: PeerSocket, saved: SavedPeer, now: number): Peer {
  const peer = new Peer(socket, saved.address, saved.connectedAt, saved.room ?? '');
  peer.announcedAccess = saved.announcedAccess ?? '';
  peer.id = saved.id;
  peer.kind = saved.kind;
  peer.state = saved.state;
  peer.hostname = saved.hostname;
  peer.hostKeyFingerprint = saved.hostKeyFingerprint;
  peer.key = saved.key;
  peer.challenge = saved.challenge;
  peer.challengeAt = saved.challengeAt;
  peer.challengeMd5 = saved.challengeMd5;
  peer.lastSeen = now;
  return peer;
}

/**
 * A fresh sign-in test string for `peer` (docs/bridge-protocol.md §2.3): 32 random letters and digits,
 * good for `sslWindowSeconds` from `now` and for one stage 2; it replaces any outstanding one.
 */
export function issueChallenge(peer: Peer, now: number, md5Key = ''): string {
  peer.challenge = randomAlnum(32);
  peer.challengeAt = now;
  peer.challengeMd5 = md5Key;
  return peer.challenge;
}

/**
 * The greeting (docs/bridge-protocol.md §2.3): stage 1's test string, issued unasked at connect, with
 * its window (`{test_string, expires_in}`), and `early_relay: true`: relay frames sent behind stage 2
 * wait for its verdict (held-frames.ts). The same random value, window and single use as stage 1's,
 * in the same field (an idle peer holds nothing more); a stage 1 replaces it.
 */
export function greetingFrame(peer: Peer, now: number, windowSeconds: number): string {
  const testString = issueChallenge(peer, now);
  return JSON.stringify(eventEnvelope(BRIDGE_GREETING_EVENT, { test_string: testString, expires_in: windowSeconds, early_relay: true }));
}

/**
 * Whether the sweep must close `peer` now, and with what: not signed in in time (4001), silent (4000),
 * or a send queue stuck over the bound (1013). A queue that drained meanwhile clears its mark.
 */
export function closeDue(peer: Peer, now: number, c: RelayConfig): { code: number; reason: string } | null {
  if (peer.state !== 'signed-in' && now - peer.connectedAt >= c.unauthenticatedCloseSeconds * 1000) {
    return { code: CLOSE.unauthenticated, reason: 'not signed in' };
  }
  if (now - peer.lastSeen >= c.silentCloseSeconds * 1000) return { code: CLOSE.silent, reason: 'no traffic or pong' };
  if (!peer.overSince) return null;
  if (peer.socket.bufferedAmount <= c.maxQueueBytes) {
    peer.overSince = 0;
    return null;
  }
  return now - peer.overSince >= c.queueStuckSeconds * 1000 ? { code: CLOSE.tryAgainLater, reason: 'send queue full' } : null;
}
