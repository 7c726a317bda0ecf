/**
 * @module Who is signed in with which key: the one connection per agent key (a newer one replaces
 * it, 4009) and every connection per client key (clients may hold several). Revocation cuts off
 * what this index lists.
 */
import type { Peer } from './peer.ts';

export class SignedInIndex {
  private readonly agentByKey = new Map<string, Peer>();
  private readonly clientsByKey = new Map<string, Set<Peer>>();

  /** Records a signed-in peer; returns the agent connection it replaces (to be closed), if any. */
  add(peer: Peer): Peer | null {
    const keyId = peer.key!.id;
    if (peer.kind === 'agent') {
      const old = this.agentByKey.get(keyId) ?? null;
      this.agentByKey.set(keyId, peer);
      return old === peer ? null : old;
    }
    let set = this.clientsByKey.get(keyId);
    if (!set) this.clientsByKey.set(keyId, (set = new Set()));
    set.add(peer);
    return null;
  }

  remove(peer: Peer): void {
    if (!peer.key) return;
    const keyId = peer.key.id;
    if (this.agentByKey.get(keyId) === peer) this.agentByKey.delete(keyId);
    const set = this.clientsByKey.get(keyId);
    set?.delete(peer);
    if (set?.size === 0) this.clientsByKey.delete(keyId);
  }

  /** Every connection signed in with the key. */
  connections(keyId: string): Peer[] {
    const agent = this.agentByKey.get(keyId);
    return agent ? [agent] : [...(this.clientsByKey.get(keyId) ?? [])];
  }
}
