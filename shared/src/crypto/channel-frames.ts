/**
 * The byte layout of sealed frames (docs/bridge-protocol.md §3.5, §3.9), apart from the channel's
 * ordering rules (channel.ts):
 *
 *   hsc1 (text):   "hsc1." + base64( seq(8, big-endian) ‖ ciphertext ‖ tag(16) )
 *   hsc2 (binary): seq(8, big-endian) ‖ ciphertext ‖ tag(16), raw, in a binary WebSocket message
 *   hsc3 (binary): the same, its plaintext a record of envelopes (channel-records.ts)
 *
 *   nonce = 0x00000000 ‖ seq        AAD = label ‖ sid ‖ direction(1) ‖ seq
 *   label: "hostadm-hsc1" (hsc1), "hostadm-hsc2 frame" (hsc2), "hostadm-hsc3 record" (hsc3)
 */
import { LIMITS } from '../protocol/limits.ts';
import { fromBase64Loose, fromBase64LooseInto, toBase64, utf8Encode, utf8EncodeInto } from './subtle.ts';

export const FRAME_PREFIX = 'hsc1.';
export const SEQ_BYTES = 8;
export const TAG_BYTES = 16;

/**
 * The largest envelope whose sealed relay frame still fits the bridge's frame limit
 * (LIMITS.maxRelayFrameBytes, docs/bridge-protocol.md §2.7) with the longest destination line
 * (`client-<uuid>\n`, 44 bytes): base64 turns 3 bytes into 4, so the plaintext limit is about 3/4 of
 * the frame limit. hsc2 and hsc3 (per envelope) keep the same limit, so whether a reply fits never depends on the version.
 */
export const MAX_SEALED_PLAINTEXT_BYTES = Math.floor((LIMITS.maxRelayFrameBytes - 44 - FRAME_PREFIX.length) / 4) * 3 - SEQ_BYTES - TAG_BYTES;
/**
 * The longest sealed body a peer ever sends (binary: seq ‖ ciphertext ‖ tag, an hsc2 frame or an hsc3
 * record; text: the whole `hsc1.` frame): what a relay frame holds after the longest destination line.
 * A longer body is refused from its length, before it is decoded or decrypted: the receiving socket's
 * own limit may be far larger (`ws` by default 100 MiB, a browser's none), and opening it would cost a
 * hostile bridge's chosen amount of AES-GCM work and a plaintext buffer of that size before the tag fails.
 */
export const MAX_SEALED_BODY_BYTES = LIMITS.maxRelayFrameBytes - 44;
const NONCE_BYTES = 12;

/** Byte by byte: a DataView per frame was an allocation on every seal and open. */
export function writeSeq(out: Uint8Array, offset: number, seq: number): void {
  const high = Math.floor(seq / 0x1_0000_0000);
  const low = seq >>> 0;
  out[offset] = high >>> 24;
  out[offset + 1] = high >>> 16;
  out[offset + 2] = high >>> 8;
  out[offset + 3] = high;
  out[offset + 4] = low >>> 24;
  out[offset + 5] = low >>> 16;
  out[offset + 6] = low >>> 8;
  out[offset + 7] = low;
}

export function readSeq(bytes: Uint8Array, offset = 0): number {
  const high = ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) >>> 0;
  const low = ((bytes[offset + 4]! << 24) | (bytes[offset + 5]! << 16) | (bytes[offset + 6]! << 8) | bytes[offset + 7]!) >>> 0;
  // Above 2^53 the number loses precision, but any such seq is far beyond the expected one anyway.
  return high * 0x1_0000_0000 + low;
}

/**
 * One direction's nonce and additional data, with the seq written in per frame. `reuse` keeps one
 * buffer of each (for an inline engine, which is done with them when it returns: `set` then read
 * `iv` and `aad`); otherwise every frame gets fresh ones from `for` (WebCrypto may still be reading
 * them after the call returns on some runtimes).
 */
export class NonceAndAad {
  /** With `reuse`: the nonce and AAD of the seq last `set`. */
  readonly iv: Uint8Array;
  readonly aad: Uint8Array;
  private readonly prefixLength: number;
  private readonly reuse: boolean;

  constructor(label: string, sid: Uint8Array, direction: number, reuse: boolean) {
    const labelBytes = utf8Encode(label);
    this.prefixLength = labelBytes.length + sid.length + 1;
    this.reuse = reuse;
    this.iv = new Uint8Array(NONCE_BYTES);
    this.aad = new Uint8Array(this.prefixLength + SEQ_BYTES);
    this.aad.set(labelBytes);
    this.aad.set(sid, labelBytes.length);
    this.aad[labelBytes.length + sid.length] = direction;
  }

  /** Writes `seq` into the reused nonce and AAD (valid until the next call). */
  set(seq: number): void {
    writeSeq(this.iv, NONCE_BYTES - SEQ_BYTES, seq);
    writeSeq(this.aad, this.prefixLength, seq);
  }

  /** [nonce, aad] for `seq`: fresh copies, or with `reuse` the shared ones (valid until the next call). */
  for(seq: number): [Uint8Array, Uint8Array] {
    if (this.reuse) {
      this.set(seq);
      return [this.iv, this.aad];
    }
    const iv = new Uint8Array(NONCE_BYTES);
    writeSeq(iv, NONCE_BYTES - SEQ_BYTES, seq);
    const aad = this.aad.slice();
    writeSeq(aad, this.prefixLength, seq);
    return [iv, aad];
  }
}

/**
 * Inputs are staged in reusable buffers (one for sealing, one for opening, shared by all channels; JS
 * is single-threaded and nothing awaits in between): both AEAD engines are done with their input when
 * `seal()`/`open()` return (node:crypto works inline; WebCrypto takes a copy of its input before
 * `encrypt()`/`decrypt()` return: "get a copy of the bytes held by the data parameter" is a method
 * step, before the work goes in parallel), and at 16 KiB allocating a fresh buffer per frame cost more
 * CPU than the encoding itself. Inputs that could need more than SCRATCH_MAX bytes get their own.
 */
const SCRATCH_MAX = 1024 * 1024;
let sealScratch = new Uint8Array(0);
let openScratch = new Uint8Array(0);

/** The UTF-8 of an envelope, in the shared seal scratch (valid until the next call). */
export function encodeOutbound(text: string): Uint8Array {
  const worst = text.length * 3; // a UTF-16 code unit is at most 3 UTF-8 bytes
  if (worst > SCRATCH_MAX) return utf8Encode(text);
  if (sealScratch.length < worst) sealScratch = new Uint8Array(Math.max(worst, 64 * 1024));
  return sealScratch.subarray(0, utf8EncodeInto(text, sealScratch));
}

/** An hsc1 frame's base64 body, decoded into the shared open scratch (valid until the next call). */
export function decodeInbound(base64: string): Uint8Array {
  const worst = (base64.length / 4) * 3;
  if (worst > SCRATCH_MAX) return fromBase64Loose(base64);
  if (openScratch.length < worst) openScratch = new Uint8Array(Math.max(worst, 64 * 1024));
  return openScratch.subarray(0, fromBase64LooseInto(base64, openScratch));
}

/**
 * `hsc1.` + base64(seq ‖ ct) without copying ct: seq plus ct's first byte are 9 bytes, a whole number
 * of 3-byte groups, so their base64 followed by the base64 of the rest is the base64 of the whole.
 */
export function hsc1Frame(seq: number, ct: Uint8Array): string {
  const head = new Uint8Array(SEQ_BYTES + 1);
  writeSeq(head, 0, seq);
  head[SEQ_BYTES] = ct[0] ?? 0;
  return FRAME_PREFIX + toBase64(head) + toBase64(ct.subarray(1));
}

/**
 * The same frame from ciphertext and tag apart, copying only the last few bytes: base64 parts can be
 * joined as text when every part but the last is a whole number of 3-byte groups.
 */
export function hsc1FrameOfParts(seq: number, ct: Uint8Array, tag: Uint8Array): string {
  if (ct.length === 0) return hsc1Frame(seq, tag);
  const middleEnd = 1 + Math.floor((ct.length - 1) / 3) * 3;
  const tail = new Uint8Array(ct.length - middleEnd + tag.length);
  tail.set(ct.subarray(middleEnd));
  tail.set(tag, ct.length - middleEnd);
  const head = new Uint8Array(SEQ_BYTES + 1);
  writeSeq(head, 0, seq);
  head[SEQ_BYTES] = ct[0]!;
  return FRAME_PREFIX + toBase64(head) + toBase64(ct.subarray(1, middleEnd)) + toBase64(tail);
}

/**
 * A buffer every byte of which the caller writes: Node's `Buffer.allocUnsafe` where there is one (no
 * zero fill, pooled when small: a 16 KiB frame per message made zeroing and GC a visible share of an
 * hsc2 seal), else a plain Uint8Array.
 */
export const allocUnsafe: (size: number) => Uint8Array =
  (globalThis as { Buffer?: { allocUnsafe?: (size: number) => Uint8Array } }).Buffer?.allocUnsafe ?? ((size) => new Uint8Array(size));

/** `head` ‖ seq ‖ ct ‖ tag in one new buffer: a relay frame's first line and an hsc2 body, sent as is. */
export function hsc2Frame(head: Uint8Array | undefined, seq: number, ct: Uint8Array, tag: Uint8Array | null): Uint8Array {
  const headLength = head?.length ?? 0;
  const out = allocUnsafe(headLength + SEQ_BYTES + ct.length + (tag?.length ?? 0));
  if (head) out.set(head);
  writeSeq(out, headLength, seq);
  out.set(ct, headLength + SEQ_BYTES);
  if (tag) out.set(tag, headLength + SEQ_BYTES + ct.length);
  return out;
}

/** A sealed frame's parts, or why it is none. */
export type Parsed = { seq: number; sealed: Uint8Array } | string;

/** A binary frame's parts (a view into `frame`: it must stay unchanged until opened), or why it is none. */
export function parseBinary(frame: Uint8Array): Parsed {
  if (!(frame instanceof Uint8Array)) return 'not a binary sealed frame';
  if (frame.length < SEQ_BYTES + TAG_BYTES) return 'sealed frame too short';
  if (frame.length > MAX_SEALED_BODY_BYTES) return `sealed frame of ${frame.length} bytes is longer than any peer seals`;
  return { seq: readSeq(frame), sealed: frame.subarray(SEQ_BYTES) };
}

/** A text frame's parts (a view of the shared scratch: valid until the next decode), or why it is none. */
export function parseText(frame: string): Parsed {
  if (typeof frame !== 'string' || !frame.startsWith(FRAME_PREFIX)) return 'not an hsc1 sealed frame';
  if (frame.length > MAX_SEALED_BODY_BYTES) return `sealed frame of ${frame.length} characters is longer than any peer seals`;
  try {
    const bytes = decodeInbound(frame.slice(FRAME_PREFIX.length));
    if (bytes.length < SEQ_BYTES + TAG_BYTES) return 'sealed frame too short';
    return { seq: readSeq(bytes), sealed: bytes.subarray(SEQ_BYTES) };
  } catch {
    return 'sealed frame is not valid base64';
  }
}
