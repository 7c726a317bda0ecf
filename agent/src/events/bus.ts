/**
 * Event subscriptions per connection. Handlers publish through `publish(name, payload, audience)` with
 * the payload type declared for that event; a subscriber gets the notification envelope only when its
 * current viewer may see the event (audience.ts), and a new subscriber gets, at once, the last event of
 * each kind that it may see. Every notification carries the time it was published: a replayed one says
 * when it happened, not when it was replayed.
 */
import { eventEnvelope, type EventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { EventName } from '@hostadm/shared/api/events.ts';
import { maySee, type Audience, type Viewer } from './audience.ts';

/** Payload types per event; later classes narrow `dispatcher` etc. to their declared shapes. */
export interface EventPayloads {
  dispatcher: Record<string, unknown>;
  'life-preserver': { message: string; priority: string; class: string };
  'system-state': Record<string, unknown>;
}

export interface Subscriber {
  readonly id: string;
  push(envelope: unknown): void;
  /** Who is signed in on the subscribing connection now; null ends the subscription. */
  viewer(): Viewer | null;
}

interface LastEvent {
  seq: number;
  envelopeId: EventEnvelope['id'];
  audience: Audience;
  payload: unknown;
  publishedAt: Date;
}

/** Last events kept per kind and audience: bounded by the number of users who own jobs. */
const audienceKey = (a: Audience) => (a.kind === 'everyone' ? '*' : `u:${a.owner}`);

export class EventBus {
  private readonly subscriptions = new Map<string, { subscriber: Subscriber; names: Set<EventName> }>();
  private readonly last = new Map<EventName, Map<string, LastEvent>>();
  private seq = 0;

  subscribe(subscriber: Subscriber, names: readonly EventName[]): void {
    let entry = this.subscriptions.get(subscriber.id);
    if (!entry) {
      entry = { subscriber, names: new Set() };
      this.subscriptions.set(subscriber.id, entry);
    }
    const viewer = subscriber.viewer();
    for (const name of names) {
      entry.names.add(name);
      const latest = viewer && this.lastVisible(name, viewer);
      if (latest) subscriber.push(eventEnvelope(name, latest.payload, latest.publishedAt, latest.envelopeId));
    }
  }

  /** The most recent event of `name` that `viewer` may see. */
  private lastVisible(name: EventName, viewer: Viewer): LastEvent | undefined {
    let best: LastEvent | undefined;
    for (const event of this.last.get(name)?.values() ?? []) {
      if (maySee(viewer, event.audience) && (!best || event.seq > best.seq)) best = event;
    }
    return best;
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

  /**
   * Delivers to every subscriber of `name` whose viewer may see it; returns how many got it.
   * `envelopeId`: `none` for the events of queued class operations (the spec's shape 2).
   */
  publish<N extends EventName>(name: N, payload: EventPayloads[N], audience: Audience, envelopeId: EventEnvelope['id'] = ''): number {
    let byAudience = this.last.get(name);
    if (!byAudience) this.last.set(name, (byAudience = new Map()));
    const publishedAt = new Date();
    byAudience.set(audienceKey(audience), { seq: ++this.seq, envelopeId, audience, payload, publishedAt });
    const envelope = eventEnvelope(name, payload, publishedAt, envelopeId);
    let delivered = 0;
    for (const { subscriber, names } of [...this.subscriptions.values()]) {
      if (!names.has(name)) continue;
      const viewer = subscriber.viewer();
      if (!viewer) {
        this.drop(subscriber.id);
        continue;
      }
      if (!maySee(viewer, audience)) continue;
      subscriber.push(envelope);
      delivered++;
    }
    return delivered;
  }

  subscribedTo(subscriberId: string): EventName[] {
    return [...(this.subscriptions.get(subscriberId)?.names ?? [])];
  }
}
