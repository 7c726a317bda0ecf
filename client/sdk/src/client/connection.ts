/**
 * The connection's lifecycle: open a transport, sign in on it, notice when it drops, reconnect with
 * exponential backoff and jitter, and close for good. It knows *when* to sign in, resubscribe or fail
 * what waits, but not *how*: those are the other parts' business, reached through `ConnectionHooks`,
 * so this file stays about states and timing.
 *
 * States: `connecting` (until `open` succeeds) → `open` ⇄ `reconnecting` → `closed` (final).
 */
import { backoffDelay } from '@hostadm/shared/net/backoff.ts';
import { HandshakeError } from '@hostadm/shared/crypto/handshake.ts';
import { ConnectionError, HostadmClientError, HostadmRequestError } from '../errors.ts';
import type { CloseInfo, Transport, TransportFactory } from '../transport.ts';
import type { ClientSettings } from './options.ts';
import type { RequestRoute } from './requests.ts';

export type ClientState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** What the connection asks of the rest of the client at each step. */
export interface ConnectionHooks {
  /** A text frame arrived (a reply or an event). */
  message(text: string): void;
  /** Sign in on a fresh transport, before anything else is sent on it (first open). */
  signIn(transport: Transport, signal?: AbortSignal): Promise<void>;
  /** Sign in again and restore subscriptions on a fresh transport, after a drop. */
  resume(transport: Transport, signal: AbortSignal): Promise<void>;
  /** The connection is open (first time or again): start periodic work such as the keep-alive. */
  opened(): void;
  /** The connection is down (reconnecting or closed): stop periodic work. */
  suspended(): void;
  /** `transport` ended; whatever was sent on it has failed with `lost`. */
  transportLost(transport: Transport | undefined, lost: ConnectionError): void;
  /** The open connection dropped (before any reconnect). */
  disconnected(info: CloseInfo): void;
  /** A reconnect succeeded: the session and subscriptions are back. */
  reconnected(attempt: number): void;
  /** The client is closed for good; fail everything still waiting with `reason`. */
  closed(reason: unknown, byUser: boolean, error: unknown): void;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting when it fails (a close with no request in flight): not an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class Connection implements RequestRoute {
  private readonly factory: TransportFactory;
  private readonly connectTimeoutMs: number;
  private readonly reconnectOptions: ClientSettings['reconnect'];
  private readonly hooks: ConnectionHooks;

  private transport: Transport | null = null;
  private stateValue: ClientState = 'connecting';
  /** Resolves with the transport once open; replaced by a fresh one for each reconnect. */
  private ready: Deferred<Transport> = deferred();
  /** Requests that failed to send on a dying transport, waiting for the next one (`nextTransport`). */
  private transportWaiters: Deferred<Transport>[] = [];
  /** Requests waiting for a transport that takes them (`whenSendable`), called back in order. */
  private sendWaiters: { go: (transport: Transport) => void; fail: (err: unknown) => void }[] = [];
  /** While opening: the transport that already takes requests in its proof's flight (onEarlySend). */
  private early: Transport | null = null;
  private reconnectAbort: AbortController | null = null;
  /** Why the client failed (kept so later calls get the real cause); undefined after a user's close. */
  private failure: unknown = undefined;

  constructor(settings: ClientSettings, hooks: ConnectionHooks) {
    this.factory = settings.factory;
    this.connectTimeoutMs = settings.connectTimeoutMs;
    this.reconnectOptions = settings.reconnect;
    this.hooks = hooks;
  }

  /** Where the client connects (for messages). */
  get description(): string {
    return this.factory.description;
  }

  get state(): ClientState {
    return this.stateValue;
  }

  get reconnects(): boolean {
    return this.reconnectOptions !== null;
  }

  /** Opens the first connection and signs in on it; any failure closes the client. */
  async open(signal?: AbortSignal): Promise<void> {
    if (this.stateValue !== 'connecting' || this.transport) throw new HostadmClientError('open() was already called');
    let transport: Transport | null = null;
    try {
      transport = await this.openTransport(signal);
      await this.hooks.signIn(transport, signal);
      this.transport = transport;
      this.stateValue = 'open';
      this.early = null;
      this.ready.resolve(transport);
      this.sendable(transport);
      this.hooks.opened();
    } catch (err) {
      transport?.close(1000, 'sign-in failed');
      this.shutdown(err, false);
      throw err;
    }
  }

  /** Closes for good, by the user's wish. */
  close(): void {
    if (this.stateValue === 'closed') return;
    const transport = this.transport;
    this.shutdown(undefined, true);
    transport?.close(1000, 'client closed');
  }

  /** The open connection; while connecting or reconnecting, a promise of it (callers keep their own timers). */
  whenReady(): Promise<Transport> {
    if (this.stateValue === 'open' && this.transport) return Promise.resolve(this.transport);
    if (this.stateValue === 'closed') return Promise.reject(this.closedError());
    return this.ready.promise;
  }

  whenSendable(go: (transport: Transport) => void, fail: (err: unknown) => void): void {
    const now = this.stateValue === 'open' ? this.transport : this.stateValue === 'closed' ? null : this.early;
    if (now) go(now);
    else if (this.stateValue === 'closed') fail(this.closedError());
    else this.sendWaiters.push({ go, fail });
  }

  /** Hands the waiting requests to `transport` now, in the order they came (one flight, one hsc3 record). */
  private sendable(transport: Transport): void {
    for (const waiter of this.sendWaiters.splice(0)) waiter.go(transport);
  }

  /** The first open connection other than `old` (after the reconnect that follows its loss). */
  nextTransport(old: Transport): Promise<Transport> {
    if (this.stateValue === 'open' && this.transport && this.transport !== old) return Promise.resolve(this.transport);
    const waiter = deferred<Transport>();
    this.transportWaiters.push(waiter);
    return waiter.promise;
  }

  closedError(): unknown {
    return this.failure ?? new ConnectionError(`the client for ${this.description} is closed`);
  }

  private async openTransport(signal?: AbortSignal): Promise<Transport> {
    // `onClose` may fire before `open` resolves; the holder tells it which transport it belongs to.
    const holder: { t?: Transport } = {};
    let early: Transport | null = null;
    try {
      const transport = await this.factory.open(
        {
          onMessage: (text) => this.hooks.message(text),
          onClose: (info) => this.onTransportClosed(holder.t, info),
          onEarlySend: (t) => {
            if (this.stateValue === 'open' || this.stateValue === 'closed' || signal?.aborted) return;
            early = t;
            this.early = t;
            this.sendable(t);
          },
        },
        signal ? { signal, timeoutMs: this.connectTimeoutMs } : { timeoutMs: this.connectTimeoutMs },
      );
      holder.t = transport;
      return transport;
    } catch (err) {
      if (early) {
        // What was sent in the proof's flight fails with the opening (the host ran it only if it accepted the proof).
        if (this.early === early) this.early = null;
        const lost = err instanceof ConnectionError ? err : new ConnectionError(`connecting to ${this.description} failed: ${messageOf(err)}`, { cause: err });
        this.hooks.transportLost(early, lost);
      }
      throw err;
    }
  }

  private onTransportClosed(transport: Transport | undefined, info: CloseInfo): void {
    const lost = new ConnectionError(
      `connection to ${this.description} lost (code ${info.code}${info.reason ? `: ${info.reason}` : ''}${info.error ? `; ${info.error}` : ''})`,
      { closeCode: info.code },
    );
    this.hooks.transportLost(transport, lost);
    // A transport that was never the current one (a failed attempt) or a client already closed: nothing more to do.
    if (!transport || transport !== this.transport || this.stateValue === 'closed') return;
    this.transport = null;
    this.hooks.disconnected(info);
    if (!this.reconnectOptions) {
      this.shutdown(lost, false);
      return;
    }
    void this.reconnect(lost);
  }

  private async reconnect(lost: ConnectionError): Promise<void> {
    const opts = this.reconnectOptions!;
    this.stateValue = 'reconnecting';
    this.ready = deferred();
    this.hooks.suspended();
    const abort = new AbortController();
    this.reconnectAbort = abort;
    let lastError: unknown = lost;
    for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
      // Jitter (half to full delay) keeps many clients of a restarted host from reconnecting in step.
      await sleep(backoffDelay(attempt, { initialMs: opts.initialDelayMs, maxMs: opts.maxDelayMs }), abort.signal);
      if (abort.signal.aborted) return;
      let transport: Transport | null = null;
      try {
        transport = await this.openTransport(abort.signal);
        await this.hooks.resume(transport, abort.signal);
        if (abort.signal.aborted) {
          transport.close(1000, 'client closed');
          return;
        }
        this.transport = transport;
        this.stateValue = 'open';
        this.early = null;
        this.reconnectAbort = null;
        this.ready.resolve(transport);
        this.sendable(transport);
        for (const w of this.transportWaiters.splice(0)) w.resolve(transport);
        this.hooks.opened();
        this.hooks.reconnected(attempt);
        return;
      } catch (err) {
        if (transport && this.early === transport) this.early = null;
        transport?.close(1000, 'reconnect failed');
        if (abort.signal.aborted) return;
        lastError = err;
        if (err instanceof ConnectionError && err.cause instanceof HandshakeError && err.cause.reason === 'host-key-mismatch') {
          // The host now presents another key than the pinned one: never retry quietly, fail loudly.
          this.shutdown(err, false);
          return;
        }
        if (err instanceof HostadmRequestError) {
          // The host refused to resume the session and no other method worked: retrying will not help.
          this.shutdown(new ConnectionError(`reconnected to ${this.description} but could not resume the session: ${err.message}`, { cause: err }), false);
          return;
        }
      }
    }
    this.shutdown(
      new ConnectionError(`could not reconnect to ${this.description} after ${opts.maxAttempts} attempts: ${messageOf(lastError)}`, { cause: lastError }),
      false,
    );
  }

  /** Ends the client: stops reconnecting, rejects what waits for a connection, then lets the hooks fail the rest. */
  private shutdown(error: unknown, byUser: boolean): void {
    if (this.stateValue === 'closed') return;
    this.stateValue = 'closed';
    this.failure = byUser ? undefined : error;
    this.hooks.suspended();
    this.reconnectAbort?.abort();
    this.reconnectAbort = null;
    this.transport = null;
    this.early = null;
    const reason = error ?? new ConnectionError(`the client for ${this.description} was closed`);
    this.ready.reject(reason);
    for (const w of this.sendWaiters.splice(0)) w.fail(reason);
    for (const w of this.transportWaiters.splice(0)) w.reject(reason);
    this.hooks.closed(reason, byUser, error);
  }
}

/** Waits `ms`, or less when `signal` aborts (it never rejects: the caller checks `signal.aborted`). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
