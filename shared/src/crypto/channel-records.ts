/**
 * hsc3 records (docs/bridge-protocol.md §3.10): the plaintext a record seals is the envelopes one
 * side queued in one tick, each as its UTF-8 length (u32, big-endian) then its UTF-8 bytes:
 *
 *   record plaintext = ( len(4, big-endian) ‖ UTF-8 envelope )+
 *   record frame     = seq(8) ‖ AES-256-GCM(record plaintext) ‖ tag(16), as an hsc2 frame, label "hostadm-hsc3 record"
 *
 * Reading is all or nothing: a zero length, a length past the end, an entry longer than one envelope
 * may be (MAX_SEALED_PLAINTEXT_BYTES, what every sender checks), trailing bytes, more than
 * MAX_RECORD_ENVELOPES entries or an entry that is not UTF-8 refuses the whole record.
 */
import { LIMITS } from '../protocol/limits.ts';
import { MAX_SEALED_PLAINTEXT_BYTES, SEQ_BYTES, TAG_BYTES } from './channel-frames.ts';
import { utf8Decode } from './subtle.ts';

export const RECORD_LENGTH_BYTES = 4;
/** Entries one record may carry: a burst of more is split over several records. */
export const MAX_RECORD_ENVELOPES = 1024;
/**
 * The largest record plaintext: its relay frame (the longest destination line, `client-<uuid>\n` of
 * 44 bytes, then seq, ciphertext and tag) stays within LIMITS.maxRelayFrameBytes. Larger than one
 * envelope's limit plus its length, so any envelope that may be sealed fits in a record of its own.
 */
export const MAX_RECORD_PLAINTEXT_BYTES = LIMITS.maxRelayFrameBytes - 44 - SEQ_BYTES - TAG_BYTES;

/** Why a record's plaintext was refused (the channel fails with reason `malformed`). */
export class RecordLayoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordLayoutError';
  }
}

export function writeLength(out: Uint8Array, offset: number, length: number): void {
  out[offset] = length >>> 24;
  out[offset + 1] = length >>> 16;
  out[offset + 2] = length >>> 8;
  out[offset + 3] = length;
}

function readLength(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) >>> 0;
}

/** The envelopes of an opened record, in order; throws RecordLayoutError (and returns nothing) for any fault. */
export function splitRecord(plain: Uint8Array): string[] {
  const envelopes: string[] = [];
  let offset = 0;
  while (offset < plain.length) {
    if (plain.length - offset < RECORD_LENGTH_BYTES) throw new RecordLayoutError(`${plain.length - offset} trailing bytes after entry ${envelopes.length}`);
    if (envelopes.length === MAX_RECORD_ENVELOPES) throw new RecordLayoutError(`more than ${MAX_RECORD_ENVELOPES} envelopes in one record`);
    const length = readLength(plain, offset);
    offset += RECORD_LENGTH_BYTES;
    if (length === 0) throw new RecordLayoutError(`entry ${envelopes.length} has length zero`);
    if (length > MAX_SEALED_PLAINTEXT_BYTES) throw new RecordLayoutError(`entry ${envelopes.length} of ${length} bytes is over the envelope limit`);
    if (length > plain.length - offset) throw new RecordLayoutError(`entry ${envelopes.length} claims ${length} bytes; ${plain.length - offset} remain`);
    try {
      envelopes.push(utf8Decode(plain.subarray(offset, offset + length)));
    } catch {
      throw new RecordLayoutError(`entry ${envelopes.length} is not UTF-8`);
    }
    offset += length;
  }
  if (envelopes.length === 0) throw new RecordLayoutError('an empty record');
  return envelopes;
}

/**
 * Lays out `envelopes` from index `from` into `out` (which must be at most MAX_RECORD_PLAINTEXT_BYTES
 * long): as many whole envelopes as fit, at most MAX_RECORD_ENVELOPES. Returns how many were taken
 * and the bytes written; 0 taken means the next envelope alone does not fit in `out`.
 */
export function packRecord(
  envelopes: readonly string[],
  from: number,
  out: Uint8Array,
  encodeInto: (text: string, into: Uint8Array) => { read: number; written: number },
): { taken: number; bytes: number } {
  let offset = 0;
  let taken = 0;
  for (let i = from; i < envelopes.length && taken < MAX_RECORD_ENVELOPES; i++) {
    const text = envelopes[i]!;
    const room = out.length - offset - RECORD_LENGTH_BYTES;
    if (room < text.length) break; // UTF-8 takes at least one byte per UTF-16 unit
    // Encoded in place; when it does not fit, the partial bytes past `offset` are simply not counted.
    const { read, written } = encodeInto(text, out.subarray(offset + RECORD_LENGTH_BYTES));
    if (read !== text.length) break;
    writeLength(out, offset, written);
    offset += RECORD_LENGTH_BYTES + written;
    taken++;
  }
  return { taken, bytes: offset };
}
