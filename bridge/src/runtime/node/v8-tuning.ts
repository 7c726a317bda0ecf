/**
 * @module Gives back the young generation that loading the bridge's modules inflated.
 *
 * Loading drizzle-orm on Node 24 parses its very large package.json once per module: ~130 MB of
 * short-lived garbage that makes V8 grow the young generation to its maximum (1 MB → 134 MB
 * measured) and keep it. One memory-reducing collection once the bridge listens shrinks it back:
 * an idle bridge then holds 109 MB RSS instead of 265 MB. It also makes relaying cheaper: with the
 * large young generation the relay allocates so little per frame that scavenges are rare, the
 * frames' ArrayBuffers pile up as external memory and full collections reclaim them instead
 * (test/bench/relay.bench.ts measured 16 KiB frames at 1.3–1.5× a minimal relay's CPU before, and
 * 1.0–1.3× after; the rest is the larger heap of a process that loads the bridge's modules: a
 * minimal relay loading them too costs the same).
 *
 * `gc` is reached the way tools do it: `--expose-gc` set at run time applies to contexts created
 * afterwards, so a fresh vm context hands out the function; the main context does not get `gc`.
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
    // Not essential: without it the bridge works and only holds more memory.
  }
}
