/**
 * @module What a relay hub (relay-hub.ts) keeps outside its heap, so that a wake-up after hibernation
 * revives it: each socket's attachment (its id and `savePeer`), each peer's md5_key list in the
 * object's sync KV (it can exceed the attachment's size limit), and the object's own records under
 * the keys below.
 */
import { savePeer, type Peer, type SavedPeer } from '../../relay/peer.ts';

/** The metric counters (`RelayMetrics.save`), saved a second after they change. */
export const COUNTERS = 'counters';
/** When the hub last re-read revocations written behind its back. */
export const REVOCATIONS_READ = 'revocations-read';
/** When the relay last pruned D1 (retention.ts); kept here so each wake-up does not prune again. */
export const STORE_PRUNED = 'store-pruned';
export const CLOCK_OFFSET = 'test:clock-offset';
export const CONFIG_OVERRIDES = 'test:config';
export const ALARMS_ON = 'test:alarms';
/** This object's name and scope, as the Worker named it (kept for wake-ups that start with an alarm). */
export const OBJECT_NAME = 'object';
export const SCOPE = 'scope';

const KEYS_PREFIX = 'keys:';

interface Attachment {
  sid: string;
  peer: SavedPeer;
}

/** Writes the peer's state under its socket id `sid`: its attachment, and its md5_key list (or none). */
export function savePeerState(kv: SyncKvStorage, ws: WebSocket, sid: string, peer: Peer): void {
  const attachment: Attachment = { sid, peer: savePeer(peer) };
  ws.serializeAttachment(attachment);
  if (peer.md5Keys.size > 0) kv.put(KEYS_PREFIX + sid, [...peer.md5Keys]);
  else kv.delete(KEYS_PREFIX + sid);
}

/** The state saved for a socket's peer, or null when there is none (never saved, or forgotten). */
export function loadPeerState(kv: SyncKvStorage, ws: WebSocket): { sid: string; peer: SavedPeer; md5Keys: string[] } | null {
  const attachment = ws.deserializeAttachment() as Attachment | null;
  if (!attachment) return null;
  return { sid: attachment.sid, peer: attachment.peer, md5Keys: kv.get<string[]>(KEYS_PREFIX + attachment.sid) ?? [] };
}

/** Drops the md5_key list saved under socket id `sid`. */
export function forgetPeerKeys(kv: SyncKvStorage, sid: string): void {
  kv.delete(KEYS_PREFIX + sid);
}

/** Drops all the state saved for a socket: its md5_key list (when it had a socket id) and its attachment. */
export function forgetPeerState(kv: SyncKvStorage, ws: WebSocket, sid: string | undefined): void {
  if (sid) forgetPeerKeys(kv, sid);
  try {
    ws.serializeAttachment(null);
  } catch {
    // Closed already.
  }
}
