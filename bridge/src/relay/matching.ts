/**
 * @module Who may talk to whom: a signed-in peer is offered every peer of the opposite kind that
 * listed at least one md5_key it also listed (docs/bridge-protocol.md §2.5). The index maps each
 * md5_key to the peers of each kind that listed it; a change touches only the peers that share a key
 * with the changed peer.
 *
 * A first sign-in by password (§2.4) matches through a second kind of entry in the same index,
 * `host:<nickname>`: an agent that accepts password sign-in is indexed under its bound nickname, and a
 * client under each nickname it asked to reach. An md5_key is base64 and never contains `:`.
 */
export function hostEntry(nickname: string): string {
  return `host:${nickname}`;
}

export const isHostEntry = (entry: string) => entry.startsWith('host:');

/** Index slots are per room (rooms.ts): peers of two rooms never match, whatever keys they share. */
const slot = (peer: Peer, entry: string) => (peer.room === '' ? entry : `${peer.room}\n${entry}`);
import type { Peer } from './peer.ts';
import type { PeerKind } from './ports.ts';

const opposite = (kind: PeerKind): PeerKind => (kind === 'agent' ? 'client' : 'agent');

export class Matcher {
  private readonly index: Record<PeerKind, Map<string, Set<Peer>>> = { agent: new Map(), client: new Map() };

  /**
   * Replaces the md5_keys of a signed-in peer and returns the peers whose offer may have changed
   * (the peer itself and every opposite peer that shares an old or new key).
   */
  setKeys(peer: Peer, keys: ReadonlySet<string>): Set<Peer> {
    const kind = peer.kind!;
    const affected = new Set<Peer>([peer]);
    this.collect(peer, peer.md5Keys, affected);
    this.unindex(peer);
    peer.md5Keys = keys;
    const own = this.index[kind];
    for (const md5 of keys) {
      let set = own.get(slot(peer, md5));
      if (!set) own.set(slot(peer, md5), (set = new Set()));
      set.add(peer);
    }
    this.collect(peer, keys, affected);
    return affected;
  }

  /** Takes a peer out of the index; returns the opposite peers whose offer loses it. */
  remove(peer: Peer): Set<Peer> {
    const affected = new Set<Peer>();
    if (!peer.kind) return affected;
    this.unindex(peer);
    this.collect(peer, peer.md5Keys, affected);
    return affected;
  }

  /** The peers offered to `peer` now, in a stable order (connection time, then id). */
  offer(peer: Peer): Peer[] {
    if (!peer.kind || peer.state !== 'signed-in') return [];
    const found = new Set<Peer>();
    const other = this.index[opposite(peer.kind)];
    for (const md5 of peer.md5Keys) for (const q of other.get(slot(peer, md5)) ?? []) if (!q.closed) found.add(q);
    return [...found].sort((a, b) => a.connectedAt - b.connectedAt || (a.id < b.id ? -1 : 1));
  }

  /** How `peer` reaches `other` (both in each other's offer): by a key both list, or only by host name. */
  access(peer: Peer, other: Peer): 'key' | 'password' {
    for (const entry of peer.md5Keys) if (!isHostEntry(entry) && other.md5Keys.has(entry)) return 'key';
    return 'password';
  }

  private unindex(peer: Peer): void {
    const own = this.index[peer.kind!];
    for (const md5 of peer.md5Keys) {
      const set = own.get(slot(peer, md5));
      if (!set) continue;
      set.delete(peer);
      if (set.size === 0) own.delete(slot(peer, md5));
    }
  }

  private collect(peer: Peer, keys: ReadonlySet<string>, into: Set<Peer>): void {
    const other = this.index[opposite(peer.kind!)];
    for (const md5 of keys) for (const q of other.get(slot(peer, md5)) ?? []) into.add(q);
  }
}
