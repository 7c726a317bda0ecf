/**
 * Event subscriptions. Interest is counted per event name, so any number of streams, listeners and
 * job handles share one subscription on the host: the first interest in a name subscribes, the last
 * one gone unsubscribes, and after a reconnect every name still wanted is subscribed again.
 */
import type { WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { FieldError } from '@hostadm/shared/protocol/errors.ts';
import { AsyncQueue } from '../async-queue.ts';
import { isObject, loadOperation } from '../contracts.ts';
import type { Transport } from '../transport.ts';
import type { CallOptions, HostadmEvent } from '../types.ts';
import type { ClientState } from './connection.ts';
import type { SendRequest } from './requests.ts';

/** A callback subscription; `close()` unsubscribes. */
export interface EventListener {
  /** Resolves once the host confirmed the subscription. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/** An async iterator of events; `close()` (or `break`) unsubscribes. */
export interface EventStream extends AsyncIterableIterator<HostadmEvent> {
  /** Resolves once the host confirmed the subscription. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/** What subscriptions need from the rest of the client. */
export interface SubscriptionHost {
  send: SendRequest;
  state(): ClientState;
  closedError(): unknown;
  /** Whether to check names against the `subscribe` contract before sending. */
  readonly validateArgs: boolean;
}

/** Event names as the host spells them (the docs' underscore spellings are aliases). */
export const canonicalEvent = (name: string): string => name.replace(/_/g, '-');

/**
 * The event an `events` envelope carries, or null. Two forms exist: the getstarted form
 * `{name: "event", args: {name, args}}` and the spec's `{name: <event>, args: <payload>}`.
 */
export function eventOf(env: WireEnvelope): HostadmEvent | null {
  if (env.namespace !== 'events') return null;
  if (env.name === 'event' && isObject(env.args) && typeof env.args.name === 'string') {
    const time = typeof env.args.time === 'string' ? { time: env.args.time } : {};
    return { name: canonicalEvent(env.args.name), args: env.args.args, ...time } as HostadmEvent;
  }
  return { name: canonicalEvent(env.name), args: env.args } as HostadmEvent;
}

export class Subscriptions {
  private readonly host: SubscriptionHost;
  /** How many holders want each (canonical) event name. */
  private readonly refs = new Map<string, number>();
  /** Subscribe requests in flight, so a second holder of a name waits for the host's answer too. */
  private readonly subscribing = new Map<string, Promise<void>>();
  private readonly streams = new Set<{ names: Set<string>; queue: AsyncQueue<HostadmEvent> }>();

  constructor(host: SubscriptionHost) {
    this.host = host;
  }

  /** Events are buffered from this call on, before the host confirms (`ready`), so none is missed. */
  subscribe(input: string | readonly string[]): EventStream {
    const names = (typeof input === 'string' ? [input] : [...input]).map(canonicalEvent);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.streams.delete(entry);
      this.release(names);
    };
    const queue = new AsyncQueue<HostadmEvent>(release);
    const entry = { names: new Set(names), queue };
    const closed = this.host.state() === 'closed';
    if (closed) queue.fail(this.host.closedError());
    else this.streams.add(entry);
    const ready = closed ? Promise.reject(this.host.closedError()) : this.checkNames(names).then(() => this.acquire(names, {}));
    ready.catch((err: unknown) => {
      // Not subscribed (refused, or the client closed): the stream fails and must not release anything.
      released = true;
      this.streams.delete(entry);
      queue.fail(err);
    });
    return Object.assign(queue, {
      ready,
      close: async () => {
        await queue.return();
      },
    });
  }

  listen(input: string | readonly string[], callback: (event: HostadmEvent) => void): EventListener {
    const stream = this.subscribe(input);
    void (async () => {
      try {
        for await (const event of stream) callback(event);
      } catch {
        // The client failed: `ready` or the `close` client event report it.
      }
    })();
    return { ready: stream.ready, close: () => stream.close() };
  }

  /** Counts interest per event name; the first interest subscribes on the host. */
  async acquire(names: readonly string[], options: CallOptions): Promise<void> {
    const fresh: string[] = [];
    const waits: Promise<void>[] = [];
    for (const n of names) {
      const count = this.refs.get(n) ?? 0;
      this.refs.set(n, count + 1);
      if (count === 0) fresh.push(n);
      else {
        const inFlight = this.subscribing.get(n);
        if (inFlight) waits.push(inFlight);
      }
    }
    if (fresh.length > 0) {
      const p = this.host.send({ namespace: 'events', name: 'subscribe' }, fresh, options).then(() => undefined);
      for (const n of fresh) this.subscribing.set(n, p);
      waits.push(p);
      p.finally(() => {
        for (const n of fresh) if (this.subscribing.get(n) === p) this.subscribing.delete(n);
      }).catch(() => undefined);
    }
    try {
      await Promise.all(waits);
    } catch (err) {
      for (const n of names) this.decrement(n);
      throw err;
    }
  }

  /**
   * One more holder of a name that is already subscribed (a job handle created while its caller holds
   * `dispatcher`): counted, nothing sent.
   */
  retain(name: string): void {
    this.refs.set(name, (this.refs.get(name) ?? 0) + 1);
  }

  /** Drops interest; names nobody wants any more are unsubscribed on the host (when connected). */
  release(names: readonly string[]): void {
    const gone = names.filter((n) => this.decrement(n));
    if (gone.length > 0 && this.host.state() === 'open') this.host.send({ namespace: 'events', name: 'unsubscribe' }, gone, {}).catch(() => undefined);
  }

  /** After a reconnect, on the new transport: every name still wanted (the host forgot them with the old connection). */
  async resubscribe(transport: Transport): Promise<void> {
    const names = [...this.refs.keys()];
    if (names.length > 0) await this.host.send({ namespace: 'events', name: 'subscribe' }, names, {}, transport);
  }

  /** Hands an event to every stream that asked for its name. */
  deliver(event: HostadmEvent): void {
    for (const stream of this.streams) if (stream.names.has(event.name)) stream.queue.push(event);
  }

  /** The client closed: a user's close ends the streams, a failure fails them with `reason`. */
  endAll(reason: unknown, byUser: boolean): void {
    for (const stream of this.streams) {
      if (byUser) stream.queue.end();
      else stream.queue.fail(reason);
    }
    this.streams.clear();
  }

  /** Event names checked against the `subscribe` contract (an unknown name is refused locally). */
  private async checkNames(names: readonly string[]): Promise<void> {
    if (!this.host.validateArgs) return;
    // Loaded with the contract, when first needed: a client that never subscribes loads no checks.
    const [contract, { check, invalidArgs }] = await Promise.all([loadOperation('events', 'subscribe'), import('../validate.ts')]);
    const problems: FieldError[] = contract ? check(contract.args, names) : [];
    if (problems.length > 0) throw invalidArgs({ namespace: 'events', name: 'subscribe' }, problems);
  }

  /** True when nobody wants the name any more. */
  private decrement(name: string): boolean {
    const count = (this.refs.get(name) ?? 0) - 1;
    if (count <= 0) {
      this.refs.delete(name);
      return true;
    }
    this.refs.set(name, count);
    return false;
  }
}
