/**
 * @module How often a key's `last_seen_at` is written: at most once a minute per key. It was two
 * writes per connection (sign-in and close), which for short connections (one CLI command each) was
 * the bridge's main store work; `hostadm bridge keys list` shows the time to the minute anyway.
 */

/** A key's `last_seen_at` is written again only this long after the last write. */
export const LAST_SEEN_RESOLUTION_MS = 60_000;
/** Past this many keys remembered, those written longer ago than the resolution are forgotten. */
const MAX_REMEMBERED = 4096;

export class LastSeenThrottle {
  private readonly written = new Map<string, number>();

  /** Whether `keyId`'s last_seen_at should be written now (and if so, remembers that it was). */
  due(keyId: string, now: number): boolean {
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < LAST_SEEN_RESOLUTION_MS && now >= last) return false;
    if (this.written.size >= MAX_REMEMBERED) this.forgetOld(now);
    this.written.set(keyId, now);
    return true;
  }

  private forgetOld(now: number): void {
    for (const [key, at] of this.written) if (now - at >= LAST_SEEN_RESOLUTION_MS || now < at) this.written.delete(key);
    // Every one recent (a burst of over MAX_REMEMBERED keys): start over rather than grow.
    if (this.written.size >= MAX_REMEMBERED) this.written.clear();
  }
}
