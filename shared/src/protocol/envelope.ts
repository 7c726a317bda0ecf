/**
 * The envelopes on the wire and their one reader. No zod here (every client loads this file): the
 * agent's schema for an arriving request is request-envelope.ts.
 */
import type { ErrorArgs } from './errors.ts';

export const NAMESPACES = ['admin', 'rpc', 'events'] as const;
export type Namespace = (typeof NAMESPACES)[number];

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

/**
 * An envelope as it arrives from a peer (any program: agent, bridge, SDK), before anything in `args`
 * is trusted. The one reader of received envelopes: `id` is a string (a number is read as its decimal
 * text, a missing id as `''`), `name` and `namespace` are strings. Agent requests are then validated by
 * `requestEnvelopeSchema` (request-envelope.ts) in the pipeline, which answers malformed ones with field errors.
 */
export interface WireEnvelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

/** `value` read as an envelope, or null when it is not one (not an object, or id/name/namespace of the wrong type). */
export function readEnvelope(value: unknown): WireEnvelope | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  const id = typeof v.id === 'string' ? v.id : typeof v.id === 'number' ? String(v.id) : v.id === undefined ? '' : null;
  if (id === null || typeof v.name !== 'string' || typeof v.namespace !== 'string') return null;
  return { id, name: v.name, namespace: v.namespace, args: v.args };
}

/** JSON text read as an envelope, or null when it is not JSON or not an envelope. */
export function parseEnvelope(text: string): WireEnvelope | null {
  try {
    return readEnvelope(JSON.parse(text));
  } catch {
    return null;
  }
}

/** An envelope that answers a request (`response` or `error`). */
export function isReply(env: WireEnvelope): boolean {
  return env.name === 'response' || env.name === 'error';
}
