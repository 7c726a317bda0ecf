/**
 * Work a class keeps doing on its own while the agent runs (the snapshot scheduler's tick): repeated
 * timers that stop with the agent, before the dispatcher and the store close, so no tick ever runs
 * against a closed store. A tick that throws is logged and the next one runs as usual.
 */
import type { Logger } from 'pino';

export class Background {
  private readonly logger: Logger;
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

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
      Promise.resolve()
        .then(task)
        .catch((err: unknown) => this.logger.error({ task: name, err: err instanceof Error ? err.message : String(err) }, 'background task failed'))
        .finally(() => {
          busy = false;
        });
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
  }
}
