/**
 * @module Scavenges for processes that mostly move bytes between sockets (Node only): the bridge's
 * relay, and the agent's and the SDK's bridge links.
 *
 * Every socket read is a new ArrayBuffer outside V8's heap (Node's read buffer, shrunk to the bytes
 * read), and so is a WebSocket message that straddles reads (`ws` joins its parts), a sealed or
 * opened record, a masked frame. They die at once, but V8 frees them only in a scavenge, and
 * scavenges follow allocation on V8's own heap, which moving bytes hardly does. Meanwhile V8 counts
 * them against its old-generation limit, and once they fill the room under it, it runs a full
 * collection, again and again. Measured at 16 KiB × 64 in flight through hsc3's 48 KiB records
 * (test/bench/relay-profile.ts, PROFILE_PATH=hsc3 PROFILE_SIZE=16384 BENCH_WINDOW_MS=5000, two
 * alternating pairs, 2026-11-28):
 * - the bridge: ~55 MB of external memory at each scavenge, 27–28 full collections in the 5 s
 *   window, 87–92 µs of CPU per round trip where plain frames cost it 54–55; with a sweep looking every
 *   4 MiB and stepping at 16 MiB, no full collection and 51–53 µs;
 * - the load client (a `ws` client sealing and opening the records, as the SDK does): 44 full
 *   collections and 10 scavenges in the window;
 * - with the sweep as it is, looking every 1 MiB read and stepping at 8 MiB: the bridge 0 full collections,
 *   the load client 3–4 and 73–79 µs per round trip where it was at 102–118.
 *
 * `ReadSweep` is told the size of each read (or message) and looks at V8's external memory once per
 * 1 MiB (~1 µs); once it is 8 MiB above its level after the last scavenge, it asks V8 for one (~1 ms
 * for these processes' young generations). An end of a channel allocates on sending as much as on
 * reading, hence the short step. Small messages rarely reach it. `node:v8` and `node:vm` load at the
 * first look, so a short command that reads less never loads them.
 *
 * `gc` is reached the way tools do it: `--expose-gc` set at run time applies to contexts created
 * afterwards, so a fresh vm context hands out the function; the main context does not get `gc`.
 */

type GcFunction = (options: { type: 'major' | 'minor'; execution: 'sync'; flavor?: 'last-resort' }) => void;

interface Builtins {
  getBuiltinModule(id: 'node:v8'): { getHeapStatistics(): { external_memory: number }; setFlagsFromString(flags: string): void };
  getBuiltinModule(id: 'node:vm'): { runInNewContext(code: string): unknown };
}

const builtins = (): Builtins => process as unknown as Builtins;

let gcFunction: GcFunction | null | undefined;

/** V8's `gc`, reached once; null where the runtime refuses it. */
export function v8Gc(): GcFunction | null {
  if (gcFunction === undefined) {
    try {
      builtins().getBuiltinModule('node:v8').setFlagsFromString('--expose-gc');
      gcFunction = builtins().getBuiltinModule('node:vm').runInNewContext('gc') as GcFunction;
    } catch {
      gcFunction = null;
    }
  }
  return gcFunction;
}

/** A scavenge of V8's young generation, now; false where the runtime has no `gc`. */
export function scavengeNow(): boolean {
  const gc = v8Gc();
  if (!gc) return false;
  try {
    gc({ type: 'minor', execution: 'sync' });
    return true;
  } catch {
    // Without it the process works as before, at the cost measured above.
    return false;
  }
}

const MiB = 1024 * 1024;

export interface ReadSweepDeps {
  /** Bytes outside V8's heap that V8 accounts for (ArrayBuffers among them), live or awaiting collection. */
  externalBytes(): number;
  scavenge(): void;
}

/** Scavenges when reads have left dead buffers piling up outside V8's heap (see the module comment). */
export class ReadSweep {
  private readonly deps: ReadSweepDeps;
  private readonly lookEvery: number;
  private readonly step: number;
  private sinceLook = 0;
  /** External bytes after the last scavenge (the lowest seen since): what is live, roughly. */
  private level = Number.POSITIVE_INFINITY;
  /** A scavenge was asked for: the next look takes the level (V8 frees the buffers concurrently). */
  private settling = false;
  /** Bytes told so far, and the scavenges asked for. */
  bytes = 0;
  scavenges = 0;

  constructor(deps: ReadSweepDeps, options: { lookEveryBytes?: number; stepBytes?: number } = {}) {
    this.deps = deps;
    this.lookEvery = options.lookEveryBytes ?? 1 * MiB;
    this.step = options.stepBytes ?? 8 * MiB;
  }

  /** `bytes` were read from a socket. */
  read(bytes: number): void {
    this.bytes += bytes;
    if ((this.sinceLook += bytes) < this.lookEvery) return;
    this.sinceLook = 0;
    const external = this.deps.externalBytes();
    if (this.settling) {
      this.settling = false;
      this.level = external;
      return;
    }
    if (external < this.level) this.level = external;
    else if (external - this.level >= this.step) {
      this.settling = true;
      this.scavenges++;
      this.deps.scavenge();
    }
  }
}

/** The process's sweep (one V8 heap, one sweep): whatever reads sockets in bulk tells it. */
export const readSweep = new ReadSweep({
  externalBytes: () => builtins().getBuiltinModule('node:v8').getHeapStatistics().external_memory,
  scavenge: scavengeNow,
});

/** A `ws` message's size told to the process's sweep (a `message` listener: ws's RawData in any of its forms). */
export function sweepMessage(data: Uint8Array | ArrayBuffer | readonly Uint8Array[]): void {
  if (Array.isArray(data)) {
    for (const part of data as readonly Uint8Array[]) readSweep.read(part.byteLength);
  } else readSweep.read((data as Uint8Array | ArrayBuffer).byteLength);
}
