import { z } from 'zod';
import type { ErrorArgs } from './errors.ts';

export const NAMESPACES = ['admin', 'rpc', 'events'] as const;
export type Namespace = (typeof NAMESPACES)[number];

/**
 * A request as it arrives. `namespace` and `name` are kept as plain strings here so that an unknown
 * class can be answered with 404 rather than a parse error; routing decides.
 */
export const requestEnvelopeSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String).describe('Any value unique for the request; echoed in the reply'),
  name: z.string().min(1).describe('Class (namespace admin), rpc operation, or subscribe/unsubscribe (namespace events)'),
  namespace: z.string().min(1).describe('admin, rpc or events'),
  args: z.unknown().optional().describe('Object or array; for class requests it holds `action` plus the arguments'),
});
export type RequestEnvelope = z.infer<typeof requestEnvelopeSchema>;

export interface ResponseEnvelope {
  id: string;
  name: 'response';
  namespace: string;
  args: unknown;
}

export interface ErrorEnvelope {
  id: string;
  name: 'error';
  namespace: string;
  args: ErrorArgs;
}

/**
 * Notification sent to subscribers. The spec shows two forms; we send the getstarted form
 * (`name:"event"`, `args:{name, args}`), see docs/protocol.md "Events".
 */
export interface EventEnvelope<P = unknown> {
  /** Empty, except `none` on the events of queued class operations, as the spec shows them. */
  id: '' | 'none';
  name: 'event';
  namespace: 'events';
  /** `time`: when the agent published the event (ISO 8601, UTC); a replayed event keeps its own. */
  args: { name: string; args: P; time?: string };
}

export type ReplyEnvelope = ResponseEnvelope | ErrorEnvelope;
export type OutgoingEnvelope = ReplyEnvelope | EventEnvelope;

export function responseEnvelope(id: string, namespace: string, args: unknown): ResponseEnvelope {
  return { id, name: 'response', namespace, args };
}

export function errorEnvelope(id: string, namespace: string, args: ErrorArgs): ErrorEnvelope {
  return { id, name: 'error', namespace, args };
}

export function eventEnvelope<P>(name: string, payload: P, time?: Date, id: EventEnvelope['id'] = ''): EventEnvelope<P> {
  return { id, name: 'event', namespace: 'events', args: { name, args: payload, ...(time ? { time: time.toISOString() } : {}) } };
}
