/**
 * @module Relay framing: `<destination id>\n<body>`. Only the first line is ever looked at; the body
 * is passed on as the exact bytes (or string) it arrived as. Frames come as UTF-8 bytes (Node's `ws`)
 * or as strings (a Durable Object); both forms are handled without converting one into the other.
 *
 *   in:  "<dest>\n<body>"    →    out: "<sender>\n<body>"   (the body untouched, the newline kept)
 */

export type Frame = string | Uint8Array;

const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/** Length in bytes as sent on the wire (strings are UTF-8 there). */
export function frameBytes(frame: Frame): number {
  if (typeof frame !== 'string') return frame.byteLength;
  // Exact UTF-8 length without encoding: ASCII frames (the common case) take the fast path.
  let n = frame.length;
  for (let i = 0; i < frame.length; i++) {
    const c = frame.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 2;
      i++;
    } else n += 2;
  }
  return n;
}

/** A frame that starts with `{` is an API call to the bridge (docs/bridge-protocol.md §2). */
export function isApiFrame(frame: Frame): boolean {
  return typeof frame === 'string' ? frame.charCodeAt(0) === OPEN_BRACE : frame[0] === OPEN_BRACE;
}

export function frameText(frame: Frame): string {
  return typeof frame === 'string' ? frame : decoder.decode(frame);
}

/** Index of the first newline within the first `limit + 1` units, or -1. */
export function headerEnd(frame: Frame, limit: number): number {
  const end = Math.min(frame.length, limit + 1);
  if (typeof frame === 'string') {
    const i = frame.indexOf('\n');
    return i >= 0 && i < end ? i : -1;
  }
  for (let i = 0; i < end; i++) if (frame[i] === NEWLINE) return i;
  return -1;
}

/** The destination id: the first line, which must be printable ASCII (ids are `agent-<uuid>`). */
export function headerText(frame: Frame, end: number): string | null {
  if (typeof frame === 'string') {
    const id = frame.slice(0, end);
    return PRINTABLE.test(id) ? id : null;
  }
  for (let i = 0; i < end; i++) {
    const c = frame[i]!;
    if (c < 0x21 || c > 0x7e) return null;
  }
  return String.fromCharCode.apply(null, frame.subarray(0, end) as unknown as number[]);
}

const PRINTABLE = /^[\x21-\x7e]+$/;

/** Whether `frame[0..end)` equals `bytes` (a sender's last destination line, kept to skip decoding it). */
export function sameHeader(frame: Uint8Array, end: number, bytes: Uint8Array): boolean {
  if (end !== bytes.length) return false;
  for (let i = 0; i < end; i++) if (frame[i] !== bytes[i]) return false;
  return true;
}

/** The sender's id as the first line, in the form `rewrite` needs for a byte frame. */
export function encodeHeader(id: string): Uint8Array {
  return encoder.encode(id);
}

/** Allocates the outgoing frame; a runtime may pass a pooled, non-zeroed allocator (Node: Buffer.allocUnsafe). */
export type Allocate = (size: number) => Uint8Array;
export const allocateZeroed: Allocate = (size) => new Uint8Array(size);

/** Replaces the first line (`frame[0..end)`) with `sender`, keeping the newline and the body as they are. */
export function rewrite(frame: Frame, end: number, senderId: string, senderHeader: Uint8Array, allocate: Allocate = allocateZeroed): Frame {
  if (typeof frame === 'string') return senderId + frame.slice(end);
  const out = allocate(senderHeader.length + frame.length - end);
  out.set(senderHeader, 0);
  out.set(frame.subarray(end), senderHeader.length);
  return out;
}
