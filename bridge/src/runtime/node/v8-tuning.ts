/**
 * @module Two answers to V8 heuristics that cost the bridge's relaying dearly: the young generation
 * that loading its modules inflated is given back, and socket reads get the scavenges V8 does not
 * ask for itself.
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
 * That floor is not enough for large frames. Every socket read is a new ArrayBuffer outside V8's heap
 * (Node's read buffer, 64 KiB, shrunk to the bytes read), and a frame that straddles two reads is
 * one more (`ws` joins its parts). They die at once, but V8 only frees them in a scavenge, and
 * scavenges follow allocation on V8's own heap, which relaying hardly does. Between two scavenges
 * the dead buffers add up, and V8 counts them against the same limit. At 16 KiB × 64 in flight
 * through hsc3's 48 KiB records: ~55 MB of external memory at each scavenge, 27–28 full collections
 * in a 5 s window, and the bridge at 87–92 µs of CPU per round trip where plain frames cost it 54–55.
 * `ReadSweep` looks at the external memory every 4 MiB read and asks for a scavenge once it is
 * 16 MiB above what it was after the last one: no full collection in the same windows, the bridge at
 * 51–53 µs (test/bench/relay-profile.ts, PROFILE_PATH=hsc3 PROFILE_SIZE=16384 BENCH_WINDOW_MS=5000,
 * two alternating pairs, 2026-11-28). A scavenge of the bridge's young generation takes ~1 ms; a
 * look, ~1 µs; small frames rarely reach the step (their reads are small buffers).
 *
 * `gc` is reached the way tools do it: `--expose-gc` set at run time applies to contexts created
 * afterwards, so a fresh vm context hands out the function; the main context does not get `gc`.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options: { type: 'major' | 'minor'; execution: 'sync'; flavor?: 'last-resort' }) => void;

let gcFunction: GcFunction | null | undefined;

/** V8's `gc`, reached once; null where the runtime refuses it. */
function v8Gc(): GcFunction | null {
  if (gcFunction === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gcFunction = runInNewContext('gc') as GcFunction;
    } catch {
      gcFunction = null;
    }
  }
  return gcFunction;
}

export function releaseStartupHeap(): void {
  try {
    v8Gc()?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    // Not essential: without it the bridge works, holds more memory and relays large frames at more CPU.
  }
}

const MiB = 1024 * 1024;

export interface ReadSweepDeps {
  /** Bytes outside V8's heap that V8 accounts for (ArrayBuffers among them), live or awaiting collection. */
  externalBytes(): number;
  scavenge(): void;
}

/** Scavenges when socket reads have left dead buffers piling up outside V8's heap (see the module comment). */
export class ReadSweep {
  private readonly deps: ReadSweepDeps;
  private readonly lookEvery: number;
  private readonly step: number;
  private sinceLook = 0;
  /** External bytes after the last scavenge (the lowest seen since): what is live, roughly. */
  private floor = Number.POSITIVE_INFINITY;
  /** A scavenge was asked for: the next look sets the floor (V8 frees the buffers concurrently). */
  private settling = false;
  /** Scavenges asked for so far. */
  scavenges = 0;

  constructor(deps: ReadSweepDeps, options: { lookEveryBytes?: number; stepBytes?: number } = {}) {
    this.deps = deps;
    this.lookEvery = options.lookEveryBytes ?? 4 * MiB;
    this.step = options.stepBytes ?? 16 * MiB;
  }

  /** `bytes` were read from a socket. */
  read(bytes: number): void {
    if ((this.sinceLook += bytes) < this.lookEvery) return;
    this.sinceLook = 0;
    const external = this.deps.externalBytes();
    if (this.settling) {
      this.settling = false;
      this.floor = external;
      return;
    }
    if (external < this.floor) this.floor = external;
    else if (external - this.floor >= this.step) {
      this.settling = true;
      this.scavenges++;
      this.deps.scavenge();
    }
  }
}

/** A scavenge of V8's young generation, now; false where the runtime has no `gc`. */
export function scavengeNow(): boolean {
  const gc = v8Gc();
  if (!gc) return false;
  try {
    gc({ type: 'minor', execution: 'sync' });
    return true;
  } catch {
    // A runtime without `gc` relays as before, at the cost measured above.
    return false;
  }
}

/** The process's sweep (one V8 heap): every relay socket's reads go through frame-reader.ts, which tells it. */
export const readSweep = new ReadSweep({
  externalBytes: () => getHeapStatistics().external_memory,
  scavenge: scavengeNow,
});
