/**
 * Liveness of one WebSocket, for every program that holds one open for long (the agent's listener
 * and its link to a bridge): a ping each period; a peer that showed no sign of life (a pong, a frame:
 * `seen()`) since the previous ping is gone, and its socket is terminated, so a dead peer's socket and
 * session do not linger until TCP notices. Runtime-neutral: the socket only needs ping and terminate.
 */
export interface PingableSocket {
  ping(): void;
  terminate(): void;
}

/** The timers every runtime has (shared/ is compiled without Node or DOM types). */
interface Timers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(timer: unknown): void;
}
const timers = globalThis as unknown as Timers;

export class Heartbeat {
  private alive = true;
  private readonly timer: unknown;

  constructor(socket: PingableSocket, periodMs: number) {
    this.timer = timers.setInterval(() => {
      if (!this.alive) {
        this.stop();
        socket.terminate();
        return;
      }
      this.alive = false;
      socket.ping();
    }, periodMs);
    // A heartbeat never keeps a process alive by itself.
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** The peer answered a ping or sent a frame. */
  seen(): void {
    this.alive = true;
  }

  stop(): void {
    timers.clearInterval(this.timer);
  }
}
