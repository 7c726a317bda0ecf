/**
 * Work a class keeps doing on its own while the agent runs (the snapshot scheduler's tick, the VM
 * guests that start with the agent): repeated timers, one-off tasks started after the agent is up,
 * and tasks the agent awaits as it stops. All of it ends before the dispatcher and the store close,
 * so nothing runs against a closed store. A task that throws is logged; the agent carries on.
 */
import type { Logger } from 'pino';

export class Background {
  private readonly logger: Logger;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private readonly closing: Array<{ name: string; task: () => Promise<void> }> = [];
  private closed = false;
  /** Aborted when the agent starts to stop: one-off tasks end early at their next check. */
  private readonly stopping = new AbortController();

  constructor(logger: Logger) {
    this.logger = logger;
  }

  /** Runs `task` every `ms` (not at once); one run at a time, a slow one delays the next. */
  every(name: string, ms: number, task: () => Promise<void> | void): void {
    if (this.closed) return;
    let busy = false;
    const timer = setInterval(() => {
      if (busy || this.closed) return;
      busy = true;
      this.guarded(name, task).finally(() => {
        busy = false;
      });
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /**
   * Runs `task` once, on a later turn of the event loop: the caller (a class being built while the
   * agent starts) is not held up by it. `close` aborts `signal`, then waits for the task to settle
   * before the closing tasks run.
   */
  once(name: string, task: (signal: AbortSignal) => Promise<void> | void): void {
    if (this.closed) return;
    const signal = this.stopping.signal;
    const run = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.guarded(name, () => (signal.aborted ? undefined : task(signal))));
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  /** Runs `task` while the agent stops; tasks registered later run first (as they were set up last). */
  atClose(name: string, task: () => Promise<void>): void {
    if (!this.closed) this.closing.push({ name, task });
  }

  /** Stops the timers, waits for one-off tasks still running, then runs the closing tasks in turn. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
    this.stopping.abort();
    await Promise.all([...this.running]);
    for (const { name, task } of this.closing.reverse()) await this.guarded(name, task);
    this.closing.length = 0;
  }

  private async guarded(name: string, task: () => Promise<void> | void): Promise<void> {
    try {
      await task();
    } catch (err) {
      this.logger.error({ task: name, err: err instanceof Error ? err.message : String(err) }, 'background task failed');
    }
  }
}
