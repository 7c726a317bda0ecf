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
 * written to that socket meanwhile, so the order is always the order of sending.
 *
 * Released with `process.nextTick`, not `setImmediate`: Node runs the tick queue right after each
 * callback from the event loop, i.e. after one socket's read has been parsed and forwarded, so the
 * cork holds at most one read's worth of frames (64 KiB of input) and adds no wait; a `setImmediate`
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

/** A batch's first size: under half of Node's 8 KiB pool, so it is a slice of the pool, not an allocation of its own. */
const FIRST_BATCH = 4000;

export class WriteCoalescer {
  /** Held sockets, each with the frames batched for it (null: none yet, or flushed). */
  private readonly held = new Map<Corkable, Batch | null>();
  /** The socket held last, and its batch: most bursts go to one destination, so most calls end here. */
  private last: Corkable | null = null;
  private lastBatch: Batch | null = null;
  private readonly release = (): void => {
    this.last = null;
    this.lastBatch = null;
    // Deleted one by one: a socket held again while this runs is corked and released again (balanced).
    for (const [socket, batch] of this.held) {
      this.held.delete(socket);
      try {
        if (batch && !socket.destroyed) socket.write(batch.buf.subarray(0, batch.length));
        socket.uncork();
      } catch {
        // A socket that throws on uncork is being torn down; the others must still be released.
      }
    }
  };

  /** Corks `socket` until the end of this tick (once per tick, however often it is written). */
  hold(socket: Corkable): void {
    if (socket === this.last) return;
    const held = this.held.get(socket);
    if (held === undefined) {
      socket.cork();
      if (this.held.size === 0) process.nextTick(this.release);
      this.held.set(socket, null);
    }
    this.last = socket;
    this.lastBatch = held ?? null;
  }

  /**
   * Holds `socket` and returns its batch with room for `n` more bytes at `batch.length`, which the
   * caller fills and then adds `n` to `batch.length`.
   */
  reserve(socket: Corkable, n: number): Batch {
    this.hold(socket);
    let batch = this.lastBatch;
    if (batch === null) {
      batch = { buf: Buffer.allocUnsafe(Math.max(n, FIRST_BATCH)), length: 0 };
      this.held.set(socket, batch);
      this.lastBatch = batch;
    } else if (batch.buf.length - batch.length < n) {
      const grown = Buffer.allocUnsafe(Math.max(batch.buf.length * 2, batch.length + n));
      grown.set(batch.buf.subarray(0, batch.length));
      batch.buf = grown;
    }
    return batch;
  }

  /** Bytes batched for `socket` and not yet handed to it. */
  pending(socket: Corkable): number {
    const batch = socket === this.last ? this.lastBatch : this.held.get(socket);
    return batch ? batch.length : 0;
  }

  /** Hands what is batched for `socket` to it now (still corked): something else is about to be written to it. */
  flush(socket: Corkable): void {
    const batch = socket === this.last ? this.lastBatch : this.held.get(socket);
    if (!batch) return;
    this.held.set(socket, null);
    if (socket === this.last) this.lastBatch = null;
    if (!socket.destroyed) socket.write(batch.buf.subarray(0, batch.length));
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
