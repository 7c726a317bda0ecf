/**
 * @module Gives back the young generation that loading the bridge's modules inflated.
 *
 * Loading drizzle-orm on Node 24 parses its very large package.json once per module: ~130 MB of
 * short-lived garbage that makes V8 grow the young generation to its maximum (1 MB → 134 MB
 * measured). A relay then allocates so little on the JS heap per frame that this young generation is
 * rarely scavenged; the frames' ArrayBuffers (ws read chunks, 16 KiB frames) pile up as external memory
 * and are reclaimed by full collections instead: 16 KiB relaying cost 1.3–1.5× the CPU of a minimal
 * relay. One memory-reducing collection after startup shrinks the young generation back to 1 MB, and
 * the relay costs the same as the minimal relay (test/bench/relay.bench.ts).
 *
 * `gc` is reached the documented-by-practice way: `--expose-gc` set at run time applies to contexts
 * created afterwards, so a fresh vm context hands out the function; the main context is unchanged.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

export function releaseStartupHeap(): void {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as GcFunction;
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    // Not essential: without it the bridge works, only 16 KiB relaying costs more CPU.
  }
}
