/**
 * Runs `run` at the next turn of the event loop: Node's `setImmediate` (after the writes this turn
 * queued, such as a WebSocket's upgrade request, and the input that came meanwhile), elsewhere a zero
 * timeout (browsers, Workers). For work done while a reply is on its way rather than before a write.
 */
export function nextTurn(run: () => void): void {
  const timers = globalThis as { setImmediate?: (run: () => void) => unknown; setTimeout?: (run: () => void, ms: number) => unknown };
  if (timers.setImmediate) timers.setImmediate(run);
  else timers.setTimeout?.(run, 0);
}
