/**
 * @module Gives back the young generation that loading the bridge's modules inflated (and says where
 * the other answer to V8's heuristics lives: the read sweep, for the scavenges V8 does not ask for).
 *
 * Loading drizzle-orm on Node 24 parses its very large package.json once per module: ~130 MB of
 * short-lived garbage that makes V8 grow the young generation to its maximum (1 MB → 128 MB
 * measured) and keep it. One memory-reducing collection once the bridge listens shrinks it back:
 * an idle bridge then holds ~105 MB RSS instead of ~250 MB.
 *
 * It matters for relaying too. V8 starts incremental marking when the room left under the
 * old-generation limit is no larger than the young generation, and it counts ArrayBuffer memory
 * allocated since the last full collection against that limit. After a full collection the limit
 * is only ~10 MB above the live heap (~14 MB in the bridge), and relaying 16 KiB frames keeps
 * 10–20 MB of frame buffers allocated, live or awaiting a scavenge. So:
 * - with the 128 MB young generation, marking restarts after every full collection;
 * - with it shrunk but no more room, the frame buffers alone exhaust the ~10 MB: 15–20 full
 *   collections per 2 s at 16 KiB × 64 in flight, 2–2.5× a minimal relay's CPU per frame (a
 *   minimal relay escapes only because it never had a full collection: V8's first limit, ~90 MB
 *   here, stays far above its 5 MB heap). Loading the same modules into the minimal relay costs
 *   it the same, so this is the process's heap, not the bridge's relay path.
 * The room comes from `--initial-old-space-size=64` in client/bin/hostadm: V8 then never sets the
 * limit below 64 MB, and the same run has no full collection at all. It has to be a start-up flag
 * (the limit floor is fixed when the heap is set up; `setFlagsFromString` later has no effect),
 * and test/bench/relay.bench.ts starts its bridge with the launcher's flags.
 *
 * That floor is not enough for large frames: socket reads leave dead buffers outside V8's heap faster
 * than V8 scavenges them. `readSweep` (shared/src/node/read-sweep.ts, told of each read by
 * frame-reader.ts) asks for the scavenges V8 does not.
 */
import { v8Gc } from '@hostadm/shared/node/read-sweep.ts';

export function releaseStartupHeap(): void {
  try {
    v8Gc()?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    // Not essential: without it the bridge works, holds more memory and relays large frames at more CPU.
  }
}
