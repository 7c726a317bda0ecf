/**
 * The `<sender id>\n` in front of a relayed binary frame (docs/bridge-protocol.md §3 step 9), read by
 * the agent (the client's id) and the SDK (the host's): printable ASCII, at most 64 bytes, else the
 * frame has no valid sender. A channel's frames all come from one peer, so the last id is kept as bytes
 * and as text: a frame from the same sender is compared, not decoded and checked again.
 */
const MAX_SENDER_BYTES = 64;

export class RelaySenders {
  private lastId = '';
  private lastBytes: Uint8Array | null = null;

  /** The sender of `frame`, whose `<id>\n` ends at `newline` (its index), or null when that is not a valid id. */
  senderOf(frame: Uint8Array, newline: number): string | null {
    if (newline <= 0 || newline > MAX_SENDER_BYTES) return null;
    if (this.isLast(frame, newline)) return this.lastId;
    let id = '';
    for (let i = 0; i < newline; i++) {
      const c = frame[i]!;
      if (c < 0x21 || c > 0x7e) return null;
      id += String.fromCharCode(c);
    }
    this.lastId = id;
    // A copy (a Buffer's slice is a view, which would keep the whole frame alive).
    this.lastBytes = new Uint8Array(frame.subarray(0, newline));
    return id;
  }

  private isLast(frame: Uint8Array, newline: number): boolean {
    const last = this.lastBytes;
    if (last === null || last.length !== newline) return false;
    for (let i = 0; i < newline; i++) if (frame[i] !== last[i]) return false;
    return true;
  }
}
