/**
 * @module Relay frames that wait for their sender's bridge call (docs/bridge-protocol.md §2.3, "Relay in
 * the sign-in's flight").
 *
 * A peer's API calls (`auth_ssl`, `bridge_keys`, …) run asynchronously, one after another, while relay
 * frames are forwarded as they come; a relay frame sent right behind a stage 2 would meet a peer not yet
 * signed in and be dropped. So while a peer has a bridge call in progress, its relay frames are kept
 * here, in order, and go through the ordinary forwarding checks once no call of its is left: after a
 * sign-in, as a signed-in peer whose announcement has gone out; after a refusal, as a peer that may
 * send nothing (each dropped and counted, as before).
 *
 * Bounded, since the peer may not be signed in: at most MAX_HELD_FRAMES frames and, together, the bytes
 * of one send queue (`maxQueueBytes`); beyond that a frame is a counted `queue-full` drop. Before
 * sign-in each frame is also capped at `maxPreSignInFrameBytes` (relay.ts), and a bridge call ends or
 * the peer is closed within the sign-in window. Only peers holding frames have an entry: an idle peer
 * costs nothing here.
 */
import type { Frame } from './frames.ts';
import type { Peer } from './peer.ts';

/** The most frames one peer may have waiting behind its bridge calls. */
export const MAX_HELD_FRAMES = 16;

export interface HeldFrame {
  data: Frame;
  /** Its size on the wire (what the bounds count). */
  size: number;
  binary: boolean;
}

export class HeldFrames {
  private readonly byPeer = new Map<Peer, { frames: HeldFrame[]; bytes: number }>();

  /** Keeps the frame behind the peer's bridge call; false when that would pass a bound (then nothing is kept). */
  hold(peer: Peer, frame: HeldFrame, maxBytes: number): boolean {
    let held = this.byPeer.get(peer);
    if (held && (held.frames.length >= MAX_HELD_FRAMES || held.bytes + frame.size > maxBytes)) return false;
    if (!held) {
      if (frame.size > maxBytes) return false;
      this.byPeer.set(peer, (held = { frames: [], bytes: 0 }));
    }
    held.frames.push(frame);
    held.bytes += frame.size;
    return true;
  }

  /** The peer's waiting frames, oldest first, no longer kept here. */
  take(peer: Peer): HeldFrame[] | undefined {
    const held = this.byPeer.get(peer);
    if (held) this.byPeer.delete(peer);
    return held?.frames;
  }

  /** A closed peer's frames go nowhere. */
  forget(peer: Peer): void {
    this.byPeer.delete(peer);
  }

  /** Peers with frames waiting (0 between sign-ins). */
  get peers(): number {
    return this.byPeer.size;
  }
}
