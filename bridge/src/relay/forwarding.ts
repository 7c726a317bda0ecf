/**
 * @module Relay forwarding (docs/bridge-protocol.md §2), the relay core's hot path: a signed-in peer's
 * frame goes by its header alone (the body is never read) to a destination it was announced,
 * rewritten to name the sender; anything else is dropped with a counted reason. Queues are bounded:
 * a destination whose unsent bytes are over the bound gets nothing more and is marked for the sweep.
 * A frame that comes while its sender has a bridge call in progress waits for that call (held-frames.ts).
 */
import { ROOM_HOST_DESTINATION } from '@hostadm/shared/protocol/bridge-requests.ts';
import type { DropReason, RelayConfig } from './config.ts';
import { encodeHeader, frameBytes, headerEnd, headerText, rewrite, sameHeader, type Allocate, type Frame } from './frames.ts';
import { HeldFrames } from './held-frames.ts';
import type { RelayMetrics } from './metrics.ts';
import type { Peer } from './peer.ts';
import { roomFingerprint } from './rooms.ts';

export interface ForwardingDeps {
  readonly config: RelayConfig;
  readonly metrics: RelayMetrics;
  readonly allocate: Allocate;
  /** The open peer with this connection id, if any. */
  peerById(id: string): Peer | undefined;
  /** Counts a drop and tells the sender (relay.ts: not when its own queue is over the bound). */
  drop(peer: Peer, destination: string, reason: DropReason): void;
}

/** A frame's size as on the wire: strings (Workers) count as their UTF-8 bytes; ASCII (sealed frames) needs no count. */
export function wireSize(data: Frame, maxFrameBytes: number): number {
  const size = typeof data === 'string' ? data.length : data.byteLength;
  return typeof data === 'string' && (size * 3 > maxFrameBytes || NON_ASCII.test(data)) ? frameBytes(data) : size;
}

/** The peer's queue is over the bound: the sweep closes it (1013) if it stays so. */
export function markOverBound(peer: Peer, now: number): void {
  if (!peer.overSince) peer.overSince = now;
}

export class Forwarder {
  private readonly deps: ForwardingDeps;
  private readonly held = new HeldFrames();

  constructor(deps: ForwardingDeps) {
    this.deps = deps;
  }

  /** A relay frame: forwarded now or, while its sender has a bridge call in progress, once that call is done. */
  accept(peer: Peer, data: Frame, size: number, now: number, binary = false): void {
    if (peer.pendingApi === 0) return this.forward(peer, data, size, now, binary);
    if (!this.held.hold(peer, { data, size, binary }, this.deps.config.maxQueueBytes)) this.deps.drop(peer, '', 'queue-full');
  }

  /** The sender has no bridge call left: what waited behind its calls goes on, in order, checked as any frame. */
  release(peer: Peer, now: number): void {
    const frames = this.held.take(peer);
    if (frames) for (const f of frames) if (!peer.closed) this.forward(peer, f.data, f.size, now, f.binary);
  }

  /** A closed peer's waiting frames go nowhere. */
  forget(peer: Peer): void {
    this.held.forget(peer);
  }

  /** `binary`: the frame came as a binary message, and leaves as one. */
  forward(peer: Peer, data: Frame, size: number, now: number, binary = false): void {
    const { config, metrics } = this.deps;
    if (peer.state !== 'signed-in') return this.deps.drop(peer, '', 'not-permitted');
    const end = headerEnd(data, config.maxHeaderBytes);
    let dest: string | null;
    if (typeof data !== 'string' && peer.lastDestBytes !== null && sameHeader(data, end, peer.lastDestBytes)) dest = peer.lastDest;
    else {
      dest = end > 0 ? headerText(data, end) : null;
      if (dest === null) return this.deps.drop(peer, '', 'malformed');
      if (typeof data !== 'string') {
        peer.lastDestBytes = data.slice(0, end);
        peer.lastDest = dest;
      }
    }
    if (!peer.announced.has(dest)) {
      const roomHost = dest === ROOM_HOST_DESTINATION ? this.roomHost(peer) : undefined;
      // Another room's peers are unknown here, as they are to a Durable Object holding one room.
      if (!roomHost) return this.deps.drop(peer, dest, this.deps.peerById(dest)?.room === peer.room ? 'not-permitted' : 'unknown-destination');
      dest = roomHost.id;
    }
    const target = this.deps.peerById(dest);
    if (!target || target.closed) return this.deps.drop(peer, dest, 'unknown-destination');
    // Made on the first relayed frame: most agents sit idle, and this is their largest allocation.
    const header = (peer.header ??= encodeHeader(peer.id));
    const outSize = size - end + header.length;
    if (outSize > config.maxFrameBytes) return this.deps.drop(peer, dest, 'too-large');
    // Over the bound means unsent bytes already above it: the queue exceeds the bound by one frame at most.
    if (target.socket.bufferedAmount > config.maxQueueBytes) {
      markOverBound(target, now);
      return this.deps.drop(peer, dest, 'queue-full');
    }
    const socket = target.socket;
    if (typeof data === 'string' || !socket.sendParts?.(header, data, end, binary))
      socket.send(rewrite(data, end, peer.id, header, this.deps.allocate), binary);
    metrics.framesRelayed++;
    metrics.bytesRelayed += outSize;
  }

  /**
   * In a host's room, the agent announced to `peer` there: only the agent whose host key is the room's
   * signs in to that room (rooms.ts, roomRefusal), so this is the host the room is named after.
   */
  private roomHost(peer: Peer): Peer | undefined {
    if (roomFingerprint(peer.room) === null) return undefined;
    for (const id of peer.announced) {
      const candidate = this.deps.peerById(id);
      if (candidate?.kind === 'agent' && candidate.room === peer.room && !candidate.closed) return candidate;
    }
    return undefined;
  }
}

const NON_ASCII = /[^\x00-\x7f]/;
