/**
 * The client's own events (`client.on(...)`): host events as they arrive, and the connection's story
 * (disconnect, reconnect, new session, close). A small typed emitter rather than Node's EventEmitter,
 * because the core must run in browsers and Workers without Node imports.
 */
import type { CloseInfo } from '../transport.ts';
import type { HostadmEvent } from '../types.ts';
import type { Session } from './session.ts';

export interface ClientEvents {
  event: HostadmEvent;
  /** The connection dropped; a reconnect follows when enabled. */
  disconnect: CloseInfo;
  /** Connected again, session resumed and subscriptions restored. */
  reconnect: { attempt: number };
  /** A new session (sign-in, or a resume that needed a fresh sign-in). */
  session: Session;
  /** The client is closed for good; `error` is set when it failed rather than being closed. */
  close: { error?: unknown };
}

export class ClientEmitter {
  private readonly listeners = new Map<keyof ClientEvents, Set<(value: never) => void>>();

  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof ClientEvents>(type: K, listener: (value: ClientEvents[K]) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) {
      set = new Set();
      this.listeners.set(type, set);
    }
    set.add(listener as (value: never) => void);
    return () => {
      set.delete(listener as (value: never) => void);
    };
  }

  emit<K extends keyof ClientEvents>(type: K, value: ClientEvents[K]): void {
    // A copy: a listener may remove itself (or others) while being called.
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        (listener as (v: ClientEvents[K]) => void)(value);
      } catch {
        // A listener's failure is its own business; it must not break the client or other listeners.
      }
    }
  }
}
