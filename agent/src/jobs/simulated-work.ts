/**
 * Paced work for the sim platform's queued operations: output lines and percentages arrive over
 * time, as a real `pkg upgrade` or ISO download would report them, so demos and tests see real
 * event streams. Stops promptly when the job is killed.
 */
import type { JobContext } from './types.ts';

export interface SimulatedStep {
  /** Output line written when the step completes (a newline is added). */
  line: string;
  /** Simulated duration of the step. */
  ms: number;
}

export async function runSimulatedSteps(ctx: JobContext, steps: readonly SimulatedStep[]): Promise<boolean> {
  const total = steps.reduce((sum, s) => sum + s.ms, 0) || 1;
  let elapsed = 0;
  ctx.progress(0);
  for (const step of steps) {
    const finished = await abortableSleep(step.ms, ctx.signal);
    if (!finished) return false;
    elapsed += step.ms;
    ctx.log(`${step.line}\n`);
    ctx.progress((elapsed / total) * 100);
  }
  return true;
}

/** Waits `ms`; resolves false at once (and true never) when `signal` aborts first. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
