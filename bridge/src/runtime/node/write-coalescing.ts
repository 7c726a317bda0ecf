/**
 * @module Write coalescing for the Node relay (docs/bridge-protocol.md §2.7): the frames one TCP read
 * brings for the same destination leave that destination's socket in one write.
 *
 * `ws` parses every frame of a read synchronously and the relay forwards each at once; without this,
 * each forward is its own `write` system call (measured: 0.97 writes per relayed frame at 200 B × 64
 * in flight, while one read carried ~25 frames). Now a socket is corked the first time it is written
 * in a tick and uncorked once when the tick's work is done, so its frames go out as one writev.
 *
 * Released with `process.nextTick`, not `setImmediate`: Node runs the tick queue right after each
 * callback from the event loop, i.e. after one socket's read has been parsed and forwarded, so the
 * cork holds at most one read's worth of frames (64 KiB of input) and adds no wait; a `setImmediate`
 * would also merge reads from different senders, but would hold every socket's output until all the
 * reads of the loop iteration were processed (latency grows with the number of busy peers).
 *
 * Corked bytes are in the socket's `writableLength`, so `ws`'s `bufferedAmount` (the relay's queue
 * bound and its `queue-full` drops) counts them as before. `cork` nests: `ws`'s own cork per frame
 * inside ours changes nothing. A socket closed or destroyed while held is released like any other:
 * a close frame written meanwhile leaves after the frames before it; a destroyed socket drops what
 * it held, as it would have dropped the unsent writes.
 */

/** What is held: a writable socket (`net.Socket`). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

export class WriteCoalescer {
  private readonly held = new Set<Corkable>();
  /** The socket held last: most bursts go to one destination, so most calls end here. */
  private last: Corkable | null = null;
  private readonly release = (): void => {
    // Deleted one by one: a socket held again while this runs is corked and released again (balanced).
    for (const socket of this.held) {
      this.held.delete(socket);
      try {
        socket.uncork();
      } catch {
        // A socket that throws on uncork is being torn down; the others must still be released.
      }
    }
    this.last = null;
  };

  /** Corks `socket` until the end of this tick (once per tick, however often it is written). */
  hold(socket: Corkable): void {
    if (socket === this.last || this.held.has(socket)) return;
    socket.cork();
    if (this.held.size === 0) process.nextTick(this.release);
    this.held.add(socket);
    this.last = socket;
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
