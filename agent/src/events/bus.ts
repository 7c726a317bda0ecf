/**
 * Event subscriptions per connection. Handlers publish through `publish(name, payload)` with the
 * payload type declared for that event; subscribers get the notification envelope, and a new
 * subscriber gets the last event of each kind at once.
 */
import { eventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { EventName } from '@hostadm/shared/api/events.ts';

/** Payload types per event; later classes narrow `dispatcher` etc. to their declared shapes. */
export interface EventPayloads {
  dispatcher: Record<string, unknown>;
  'life-preserver': { message: string; priority: string; class: string };
  'system-state': Record<string, unknown>;
}

export interface Subscriber {
  readonly id: string;
  push(envelope: unknown): void;
}

export class EventBus {
  private readonly subscriptions = new Map<string, { subscriber: Subscriber; names: Set<EventName> }>();
  private readonly last = new Map<EventName, unknown>();

  subscribe(subscriber: Subscriber, names: readonly EventName[]): void {
    let entry = this.subscriptions.get(subscriber.id);
    if (!entry) {
      entry = { subscriber, names: new Set() };
      this.subscriptions.set(subscriber.id, entry);
    }
    for (const name of names) {
      entry.names.add(name);
      if (this.last.has(name)) subscriber.push(eventEnvelope(name, this.last.get(name)));
    }
  }

  unsubscribe(subscriberId: string, names: readonly EventName[]): void {
    const entry = this.subscriptions.get(subscriberId);
    if (!entry) return;
    for (const name of names) entry.names.delete(name);
    if (entry.names.size === 0) this.subscriptions.delete(subscriberId);
  }

  /** Drops every subscription of a connection (closed, signed out). */
  drop(subscriberId: string): void {
    this.subscriptions.delete(subscriberId);
  }

  publish<N extends EventName>(name: N, payload: EventPayloads[N]): number {
    this.last.set(name, payload);
    const envelope = eventEnvelope(name, payload);
    let delivered = 0;
    for (const { subscriber, names } of this.subscriptions.values()) {
      if (!names.has(name)) continue;
      subscriber.push(envelope);
      delivered++;
    }
    return delivered;
  }

  subscribedTo(subscriberId: string): EventName[] {
    return [...(this.subscriptions.get(subscriberId)?.names ?? [])];
  }
}
