/**
 * Requests one connection may have in flight (docs/protocol.md "Limits": 64; more are answered 429),
 * the same for every transport: a direct WebSocket and a client relayed through a bridge, whose hsc3
 * record may carry up to 1024 requests at once (bridge-link/relayed-clients.ts).
 */
import { errorEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';

/** The id of a frame we refuse without handling it, so the client can still match the error. */
function peekId(frame: unknown): string {
  return frame && typeof frame === 'object' && 'id' in frame && typeof frame.id === 'string' ? frame.id : '';
}

/** The namespace to echo in a reply to a frame we refuse without handling it (`rpc` when unreadable). */
function peekNamespace(frame: unknown): string {
  return frame && typeof frame === 'object' && 'namespace' in frame && typeof frame.namespace === 'string' ? frame.namespace : 'rpc';
}

/** The 429 for a request that arrived with `limit` others of its connection still in flight. */
export function inFlightRefusal(frame: unknown, limit: number): WireEnvelope {
  const err = new HostadmError('TOO_MANY_REQUESTS', `more than ${limit} requests in flight on this connection`);
  return errorEnvelope(peekId(frame), peekNamespace(frame), err.toArgs());
}
