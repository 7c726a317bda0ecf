/**
 * Request/reply correlation: every request gets an id, its reply (or error envelope) is matched back
 * by that id, and each wait has its own timeout and AbortSignal. Requests that find no open
 * connection wait for one (or for a resumed bridge channel's proof to be sealed: they follow it in
 * its flight); a request that could not even be handed to the transport (the connection
 * was going down) is re-sent on the next connection, because it certainly did not run. A request
 * that was sent when the connection drops fails instead: whether the host ran it is unknown.
 */
import { isReply, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { FieldError } from '@hostadm/shared/protocol/errors.ts';
import { isObject } from '../contracts.ts';
import { ConnectionError, EnvelopeTooLargeError, ERROR_CODES, HostadmRequestError, TimeoutError, targetLabel, type RequestTarget } from '../errors.ts';
import type { Transport } from '../transport.ts';
import type { CallOptions } from '../types.ts';
import type { ClientState } from './connection.ts';

/** Sends one envelope and resolves with the reply's `args`. `via` pins it to one transport. */
export type SendRequest = (target: RequestTarget, args: unknown, options: CallOptions, via?: Transport) => Promise<unknown>;

/** What requests need to know about the connection (the `Connection` provides it). */
export interface RequestRoute {
  readonly description: string;
  readonly state: ClientState;
  /** Whether a lost connection is followed by a reconnect. */
  readonly reconnects: boolean;
  /**
   * Calls `go` with a transport that takes requests: the open one at once; while connecting or
   * reconnecting, the first that does, in the very tick it does (a resumed bridge channel takes them
   * in its proof's flight, before it is open: TransportHandlers.onEarlySend). `fail` if none comes.
   */
  whenSendable(go: (transport: Transport) => void, fail: (err: unknown) => void): void;
  /** The first open transport other than `old`. */
  nextTransport(old: Transport): Promise<Transport>;
  /** Why requests can no longer be made. */
  closedError(): unknown;
}

/** A request on the wire, waiting for its reply. */
interface Pending {
  /** Where it was sent: only the loss of that connection fails it. */
  transport: Transport;
  target: RequestTarget;
  resolve(args: unknown): void;
  reject(err: unknown): void;
}

export class RequestCorrelator {
  /** Client clock time of the last envelope handed to a transport (the keep-alive reads it). */
  lastSentAt = 0;

  private readonly route: RequestRoute;
  private readonly defaultTimeoutMs: number;
  private readonly onReply: () => void;
  private readonly pending = new Map<string, Pending>();
  /** Ids are unique per client, so a test or a log can tell two clients' requests apart. */
  private readonly idPrefix = Math.random().toString(36).slice(2, 8);
  private seq = 0;

  /** `onReply` runs for every successful reply (the session's "last used" time slides with it). */
  constructor(route: RequestRoute, defaultTimeoutMs: number, onReply: () => void) {
    this.route = route;
    this.defaultTimeoutMs = defaultTimeoutMs;
    this.onReply = onReply;
  }

  /** Sends one envelope and waits for its reply. `via` sends on a specific transport (sign-in, re-subscribe). */
  send(target: RequestTarget, args: unknown, options: CallOptions, via?: Transport): Promise<unknown> {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const { signal } = options;
    const route = this.route;
    return new Promise<unknown>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      if (route.state === 'closed' && !via) {
        reject(route.closedError());
        return;
      }
      let settled = false;
      let id: string | undefined;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (id !== undefined) this.pending.delete(id);
        fn();
      };
      // The timer covers the whole wait, including waiting for a connection.
      const timer = setTimeout(
        () => finish(() => reject(new TimeoutError(`no reply to ${targetLabel(target)} from ${route.description} within ${timeoutMs} ms`, timeoutMs))),
        timeoutMs,
      );
      const onAbort = () => finish(() => reject(signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });

      const go = (transport: Transport) => {
        if (settled) return;
        id = `${this.idPrefix}-${++this.seq}`;
        this.pending.set(id, {
          transport,
          target,
          resolve: (value) => finish(() => resolve(value)),
          reject: (err) => finish(() => reject(err)),
        });
        const envelope: Record<string, unknown> = { id, name: target.name, namespace: target.namespace };
        if (args !== undefined) envelope.args = args;
        try {
          transport.send(JSON.stringify(envelope));
          this.lastSentAt = Date.now();
        } catch (cause) {
          this.pending.delete(id);
          id = undefined;
          if (cause instanceof EnvelopeTooLargeError) {
            const message = `the request is too large to send through the bridge: ${cause.message}`;
            finish(() => reject(new HostadmRequestError(ERROR_CODES.PAYLOAD_TOO_LARGE, message, target, { local: true })));
            return;
          }
          // Never sent (the connection is going down): safe to send on the next connection.
          if (!via && route.reconnects && route.state !== 'closed') {
            route.nextTransport(transport).then(go, (err: unknown) => finish(() => reject(err)));
            return;
          }
          finish(() => reject(cause instanceof ConnectionError ? cause : new ConnectionError(`cannot send to ${route.description}`, { cause })));
        }
      };
      if (via) go(via);
      else route.whenSendable(go, (err: unknown) => finish(() => reject(err)));
    });
  }

  /**
   * Settles the request a `response` or `error` envelope answers. Returns false when the envelope is
   * not a reply at all (an event); a reply nobody waits for any more (timed out) is dropped.
   */
  settle(env: WireEnvelope): boolean {
    if (!isReply(env)) return false;
    const entry = this.pending.get(env.id);
    if (!entry) return true;
    if (env.name === 'response') {
      this.onReply();
      entry.resolve(env.args);
      return true;
    }
    const args = isObject(env.args) ? env.args : {};
    const code = typeof args.code === 'number' ? args.code : Number(args.code) || 500;
    const message = typeof args.message === 'string' ? args.message : 'error';
    const fieldErrors = Array.isArray(args.errors) ? (args.errors as FieldError[]) : [];
    const { code: _code, message: _message, errors: _errors, ...partial } = args;
    entry.reject(new HostadmRequestError(code, message, entry.target, { fieldErrors, partial }));
    return true;
  }

  /** The connection `transport` is gone: what was sent on it fails (whether it ran is unknown). */
  failSentOn(transport: Transport | undefined, error: unknown): void {
    for (const entry of [...this.pending.values()]) if (entry.transport === transport) entry.reject(error);
  }

  /** The client is closing: every request still waiting fails. */
  failAll(error: unknown): void {
    for (const entry of [...this.pending.values()]) entry.reject(error);
    this.pending.clear();
  }
}
