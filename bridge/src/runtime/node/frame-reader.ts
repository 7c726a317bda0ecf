/**
 * @module The relay's read path on Node (docs/bridge-protocol.md §2.7, "Frame reader"): a signed-in
 * peer's plain relay frames are read from each socket read here, not by `ws`'s Receiver. `ws` keeps
 * everything else: the upgrade, the sign-in, control frames, fragmented and oversized messages, the
 * close handshake, and every error.
 *
 * Why: at 200 B × 64 in flight the Receiver's work per frame (a Writable stream's bookkeeping, three
 * buffer views, a native unmask and a UTF-8 check, an event) was most of the bridge's CPU per relayed
 * frame outside the system calls (test/bench/relay-profile.ts). A frame that is final, unfragmented,
 * text or binary, masked, with no RSV bit, a 7- or 16-bit length within `maxPayload` and wholly in
 * the read is the only kind read here: unmasked in place, a text frame checked as UTF-8, and handed
 * to the relay exactly as `ws` would have (`relay.receive(peer, payload, binary)`). The first frame
 * that is anything else (a control frame, a fragment, a 64-bit length, an unmasked frame, an RSV bit,
 * a length over the bound, invalid UTF-8, a frame cut by the end of the read) stops the reader, and
 * the read from that frame's first byte on, unchanged, goes to the Receiver, which judges it as it
 * judges any frame (refusing with its close codes). The reader takes over again at a read that starts
 * where the Receiver holds nothing: between frames, no byte buffered, no fragmented message, no error.
 * A frame the Receiver is collecting whose header it has read gets only its missing bytes, so the
 * reader goes on with the rest of that read (large frames span reads).
 *
 * The reader is installed as the Receiver's own `write` (`ws`'s socket listener calls it with each
 * read, parking.ts with a woken socket's first read), so `ws` removing its listener (on an error, a
 * close frame or the socket's close) stops it too. Peers not signed in never reach it: their frames
 * are `ws`'s, bounded by its `maxPayload` and the relay's pre-sign-in limit.
 */
import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import type { Peer } from '../../relay/peer.ts';
import type { Relay } from '../../relay/relay.ts';
import { readSweep } from '@hostadm/shared/node/read-sweep.ts';
import { writeCoalescer } from './write-coalescing.ts';

/** The Receiver's fields the reader reads (ws 8.23; checked by parking.ts's probe, or the reader is off). */
export interface ReaderReceiver {
  _state: number;
  _bufferedBytes: number;
  _fragmented: number;
  _payloadLength: number;
  _opcode: number;
  _maxPayload: number;
  _errored: boolean;
  _loop: boolean;
  _writableState: { length: number; ending: boolean };
  write(chunk: Buffer): boolean;
}

/** What the reader needs of the receiver's WebSocket: the relay peer it reads for. */
export interface ReaderSocket {
  readonly readyState: number;
  link: { peer: Peer | undefined; readonly transport: { readonly relay: Relay } } | undefined;
}

const OPEN = 1;
const GET_DATA = 4;
const writableWrite = Writable.prototype.write as (this: Writable, chunk: Buffer) => boolean;

/** Installs the reader on `receiver`, whose WebSocket sits under `slot` (ws's kWebSocket). */
export function installReader(receiver: ReaderReceiver, slot: symbol): void {
  readerSlot = slot;
  receiver.write = readerWrite;
}

let readerSlot: symbol = Symbol('unset');

/** Whether the Receiver holds nothing: between frames, no byte buffered, no message in fragments, no error. */
function receiverIdle(r: ReaderReceiver): boolean {
  return r._state === 0 && r._bufferedBytes === 0 && r._fragmented === 0 && !r._loop && !r._errored && r._writableState.length === 0;
}

/**
 * The Receiver's `write` with the reader in front (`this`: the Receiver). What the read's frames
 * hold in the write coalescer leaves when the read is done; the read's size goes to the read sweep
 * (shared/src/node/read-sweep.ts: each read is a buffer V8 frees only in a scavenge).
 */
function readerWrite(this: ReaderReceiver, chunk: Buffer): boolean {
  readSweep.read(chunk.length);
  writeCoalescer.enter();
  try {
    return read(this, chunk);
  } finally {
    writeCoalescer.leave();
  }
}

function read(receiver: ReaderReceiver, chunk: Buffer): boolean {
  const ws = (receiver as unknown as Record<symbol, ReaderSocket | undefined>)[readerSlot];
  const link = ws?.link;
  const peer = link?.peer;
  if (!ws || !link || !peer || peer.state !== 'signed-in' || peer.closed || ws.readyState !== OPEN || receiver._writableState.ending) {
    return writableWrite.call(receiver as unknown as Writable, chunk);
  }
  let at = 0;
  if (!receiverIdle(receiver)) {
    // A frame the Receiver is collecting, its header read: it gets the bytes it misses, the reader the rest.
    const missing = receiver._payloadLength - receiver._bufferedBytes;
    const collecting = receiver._state === GET_DATA && receiver._fragmented === 0 && receiver._opcode <= 2 && !receiver._errored && !receiver._loop;
    // Only bytes the Receiver holds itself count: one with writes queued behind it (never, as ws runs) takes the whole read.
    if (!collecting || receiver._writableState.length !== 0 || missing <= 0 || missing >= chunk.length) {
      return writableWrite.call(receiver as unknown as Writable, chunk);
    }
    const flowing = writableWrite.call(receiver as unknown as Writable, chunk.subarray(0, missing));
    if (!flowing || !receiverIdle(receiver) || peer.closed || ws.readyState !== OPEN) {
      return writableWrite.call(receiver as unknown as Writable, chunk.subarray(missing)) && flowing;
    }
    at = missing;
  }
  at = readFrames(chunk, at, link.transport.relay, peer, ws, receiver._maxPayload);
  if (at === chunk.length) return true;
  return writableWrite.call(receiver as unknown as Writable, at === 0 ? chunk : chunk.subarray(at));
}

/**
 * Reads the whole plain frames of `chunk` from `at` and hands each to the relay; returns where it
 * stopped (the first byte of a frame it leaves to the Receiver, or the end).
 */
export function readFrames(chunk: Buffer, at: number, relay: Relay, peer: Peer, ws: ReaderSocket, maxPayload: number): number {
  const end = chunk.length;
  while (end - at >= 6) {
    const b0 = chunk[at]!;
    const b1 = chunk[at + 1]!;
    // FIN set, RSV clear, text or binary; MASK set (a client's frame, RFC 6455 §5.1).
    if ((b0 !== 0x81 && b0 !== 0x82) || b1 < 0x80) break;
    let length = b1 & 0x7f;
    let start = at + 6;
    if (length === 126) {
      if (end - at < 8) break;
      length = (chunk[at + 2]! << 8) | chunk[at + 3]!;
      start = at + 8;
    } else if (length === 127) break;
    if (length > maxPayload || start + length > end) break;
    const ascii = unmask(chunk, start, start + length, start - 4);
    const payload = chunk.subarray(start, start + length);
    if (b0 === 0x81 && !ascii && !isUtf8(payload)) {
      // Masked again, as it came: the Receiver refuses it (1007) from the original bytes.
      unmask(chunk, start, start + length, start - 4);
      break;
    }
    at = start + length;
    relay.receive(peer, payload, b0 === 0x82);
    // Closed by the relay (or the socket): what follows is the Receiver's, as for any closing socket.
    if (peer.closed || ws.readyState !== OPEN) break;
  }
  return at;
}

/** bufferutil's native unmask (a dependency of the bridge, loaded by `ws` too), or null where it cannot load. */
const nativeUnmask: ((buffer: Buffer, mask: Buffer) => void) | null = (() => {
  try {
    return (createRequire(import.meta.url)('bufferutil') as { unmask(buffer: Buffer, mask: Buffer): void }).unmask;
  } catch {
    return null;
  }
})();

/** From this payload size on, the native unmask beats the loop below (one call and two views: ~0.5 µs). */
const NATIVE_FROM = 384;

/**
 * XORs `b[start..end)` with the 4-byte mask at `b[mask..mask+4)` (RFC 6455 §5.3), in place; returns
 * whether every unmasked byte is known to be ASCII (then a text frame needs no other UTF-8 check).
 */
function unmask(b: Buffer, start: number, end: number, mask: number): boolean {
  if (end - start >= NATIVE_FROM && nativeUnmask) {
    nativeUnmask(b.subarray(start, end), b.subarray(mask, mask + 4));
    return false;
  }
  const m0 = b[mask]!;
  const m1 = b[mask + 1]!;
  const m2 = b[mask + 2]!;
  const m3 = b[mask + 3]!;
  let high = 0;
  let i = start;
  for (const last = end - 3; i < last; i += 4) {
    const x0 = b[i]! ^ m0;
    const x1 = b[i + 1]! ^ m1;
    const x2 = b[i + 2]! ^ m2;
    const x3 = b[i + 3]! ^ m3;
    b[i] = x0;
    b[i + 1] = x1;
    b[i + 2] = x2;
    b[i + 3] = x3;
    high |= x0 | x1 | x2 | x3;
  }
  for (let k = 0; i < end; i++, k++) {
    const x = b[i]! ^ (k === 0 ? m0 : k === 1 ? m1 : m2);
    b[i] = x;
    high |= x;
  }
  return high < 0x80;
}
