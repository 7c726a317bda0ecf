/**
 * Buffers for sealed binary frames that come back once the transport is done with them, so the next
 * frame is sealed into one of them instead of a new buffer. Only for outputs that say when they are
 * done (ChannelSenderOutput.releasesFrames: the agent's link releases a frame in `ws`'s send
 * callback, when the socket has written it); a frame nobody releases is simply collected.
 *
 * Why: a new 16–48 KiB buffer per sealed frame is an ArrayBuffer outside V8's heap (Node's Buffer
 * pool only serves sizes under 32 KiB), and V8 answers a stream of those with full collections rather
 * than the cheap young-generation ones that clear the envelope strings.
 *
 * One pool for the process (JS runs one thing at a time; a frame goes back when its write completes),
 * bounded in count and size: at most POOL_BUFFERS buffers of POOL_BUFFER_BYTES, enough for a record
 * of FLUSH_BYTES (channel-sender.ts) with its head, seq and tag; larger frames get buffers of their own.
 */
import { allocUnsafe } from './channel-frames.ts';

/** A record of FLUSH_BYTES (48 KiB of ASCII) with its relay head, seq and tag fits. */
export const POOL_BUFFER_BYTES = 56 * 1024;
/** Frames a busy agent has in its socket's write queue at once, beyond which buffers are left to the GC (448 KiB at most). */
export const POOL_BUFFERS = 8;

const free: Uint8Array[] = [];

/** A frame of `size` bytes, every byte of which the caller writes, and how to hand its buffer back. */
export interface PooledFrame {
  frame: Uint8Array;
  /** Hands the buffer back: the caller must not read or write `frame` afterwards. Later calls do nothing. */
  release: () => void;
}

export function takeFrame(size: number): PooledFrame {
  if (size > POOL_BUFFER_BYTES) return { frame: allocUnsafe(size), release: () => {} };
  const buffer = free.pop() ?? allocUnsafe(POOL_BUFFER_BYTES);
  let released = false;
  return {
    frame: buffer.subarray(0, size),
    release: () => {
      if (released) return;
      released = true;
      if (free.length < POOL_BUFFERS) free.push(buffer);
    },
  };
}

/** Buffers waiting in the pool (for tests). */
export function pooledFrames(): number {
  return free.length;
}
