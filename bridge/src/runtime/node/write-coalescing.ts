/**
 * @module Write coalescing for the Node relay (docs/bridge-protocol.md §2.7): the frames one TCP read
 * brings for the same destination leave that destination's socket in one write.
 *
 * The relay forwards each frame of a read synchronously, at once; without this, each forward is its
 * own `write` system call (measured: 0.97 writes per relayed frame at 200 B × 64 in flight, while one
 * read carried ~25 frames). Now a socket is corked the first time it is written in a tick and
 * uncorked once when the tick's work is done, so its frames go out together. Small relayed frames are
 * not even separate writes to the socket: they are framed into one buffer per destination (`reserve`),
 * handed to the socket as one write when the tick ends, or earlier (`flush`) when something else is
 * written to that socket meanwhile, so the order is always the order of sending. A socket that only
 * gets batched frames is not corked at all (its batch is one write anyway); `hold` corks it as soon
 * as anything else is written to it in that tick.
 *
 * Released with `process.nextTick`, not `setImmediate`: Node runs the tick queue right after each
 * callback from the event loop, i.e. after one socket's read has been parsed and forwarded, so the
 * cork holds at most one read's worth of frames (64 KiB of input) and adds no wait. A read processed
 * by the frame reader is released as soon as it is done (`enter`/`leave`), so no tick is scheduled for
 * it: the same boundary, one tick object and one batch of tick processing less per read. A `setImmediate`
 * would also merge reads from different senders, but would hold every socket's output until all the
 * reads of the loop iteration were processed (latency grows with the number of busy peers).
 *
 * Corked bytes are in the socket's `writableLength`; bytes framed here and not yet handed over are
 * counted by `pending`, which the Node transport adds to `bufferedAmount`, so the relay's queue bound
 * and its `queue-full` drops count them as before. `cork` nests: `ws`'s own cork per frame inside ours
 * changes nothing. A socket closed or destroyed while held is released like any other: a close frame
 * written meanwhile leaves after the frames before it (the transport flushes first); a destroyed
 * socket drops what it held, as it would have dropped the unsent writes.
 */

/** What is held: a writable socket (`net.Socket`). */
export interface Corkable {
  cork(): void;
  uncork(): void;
  write(chunk: Uint8Array): unknown;
  readonly destroyed: boolean;
}

/** Bytes framed for one socket this tick: `buf[0..length)`; whoever reserves fills from `length` and adds. */
export interface Batch {
  buf: Buffer;
  length: number;
}

/** A socket held this tick: what is batched for it, and whether it is corked (only once something else is written to it). */
interface Held {
  buf: Buffer | null;
  length: number;
  corked: boolean;
}

/** A batch's first size: under half of Node's 8 KiB pool, so it is a slice of the pool, not an allocation of its own. */
const FIRST_BATCH = 4000;

export class WriteCoalescer {
  private readonly held = new Map<Corkable, Held>();
  /** The socket held last, and its entry: most bursts go to one destination, so most calls end here. */
  private last: Corkable | null = null;
  private lastHeld: Held | null = null;
  /** Reads being processed (`reading`): their end releases, so no tick is scheduled meanwhile. */
  private depth = 0;
  private scheduled = false;
  private readonly release = (): void => {
    this.scheduled = false;
    this.last = null;
    this.lastHeld = null;
    // Deleted one by one: a socket held again while this runs is held and released again (balanced).
    for (const [socket, held] of this.held) {
      this.held.delete(socket);
      try {
        if (held.length > 0 && !socket.destroyed) socket.write(held.buf!.subarray(0, held.length));
        if (held.corked) socket.uncork();
      } catch {
        // A socket that throws on uncork is being torn down; the others must still be released.
      }
    }
  };

  /** The entry of `socket` this tick, made (and the release scheduled) on its first use. */
  private entry(socket: Corkable): Held {
    if (socket === this.last) return this.lastHeld!;
    let held = this.held.get(socket);
    if (held === undefined) {
      held = { buf: null, length: 0, corked: false };
      this.held.set(socket, held);
      if (!this.scheduled && this.depth === 0) {
        this.scheduled = true;
        process.nextTick(this.release);
      }
    }
    this.last = socket;
    this.lastHeld = held;
    return held;
  }

  /** Corks `socket` until the end of this tick (once per tick, however often it is written). */
  hold(socket: Corkable): void {
    const held = this.entry(socket);
    if (held.corked) return;
    held.corked = true;
    socket.cork();
  }

  /**
   * Returns the batch of `socket` for this tick with room for `n` more bytes at `batch.length`, which
   * the caller fills and then adds `n` to `batch.length`.
   */
  reserve(socket: Corkable, n: number): Batch {
    const held = this.entry(socket);
    if (held.buf === null) {
      held.buf = Buffer.allocUnsafe(Math.max(n, FIRST_BATCH));
      held.length = 0;
    } else if (held.buf.length - held.length < n) {
      const grown = Buffer.allocUnsafe(Math.max(held.buf.length * 2, held.length + n));
      grown.set(held.buf.subarray(0, held.length));
      held.buf = grown;
    }
    return held as Batch;
  }

  /** Bytes batched for `socket` and not yet handed to it. */
  pending(socket: Corkable): number {
    const held = socket === this.last ? this.lastHeld : this.held.get(socket);
    return held ? held.length : 0;
  }

  /** Hands what is batched for `socket` to it now: something else is about to be written to it. */
  flush(socket: Corkable): void {
    const held = socket === this.last ? this.lastHeld : this.held.get(socket);
    if (!held || held.length === 0) return;
    const out = held.buf!.subarray(0, held.length);
    held.buf = null;
    held.length = 0;
    if (!socket.destroyed) socket.write(out);
  }

  /**
   * A socket read is being processed (frame-reader.ts): what it holds is released by the matching
   * `leave`, when the read is done, rather than at the end of the tick: the same frames leave together,
   * with no tick scheduled per read.
   */
  enter(): void {
    this.depth++;
  }

  leave(): void {
    if (--this.depth === 0 && this.held.size > 0 && !this.scheduled) this.release();
  }

  /** Sockets corked and waiting for the end of the tick (0 between ticks). */
  get holding(): number {
    return this.held.size;
  }
}

/**
 * The process's coalescer: every Node relay socket uses it (one tick queue per process, so one is
 * enough), and a socket adapter keeps no reference of its own (idle peers are most peers: §2.11).
 */
export const writeCoalescer = new WriteCoalescer();
