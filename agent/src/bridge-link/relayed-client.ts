/**
 * One client that reaches this agent through a bridge (relayed-clients.ts): its state from the channel
 * handshake to a signed-in session, and how a reply to it is made to fit its channel.
 */
import { MAX_SEALED_PLAINTEXT_BYTES, type ChannelSender, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { errorEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { Connection } from '../server/context.ts';
import type { ParsedKey } from '../server/keys.ts';

/**
 * What a verified C2 leads to: a session as the key's owner (`registered`); the key registered for the
 * user an administrator authorized it for on the host, then that session (`authorized`); or a channel
 * that is not signed in, on which the client may sign in with a password and then register its key
 * (`password`: the first key of a user on a host only the bridge reaches).
 */
export type C2Outcome = { kind: 'registered'; user: string } | { kind: 'authorized'; pubKey: string; parsed: ParsedKey } | { kind: 'password' };

/** The proof a new channel waits for: C2 (`auth_ssl`, the key's signature) or RC (`auth_resume`, the ticket's confirm). */
export interface PendingProof {
  name: 'auth_ssl' | 'auth_resume';
  verify(args: unknown): Promise<boolean>;
  /** Once proven: the reply (a session, or the invitation to sign in), a ticket sent sealed just before it. */
  complete(client: RelayedClient): Promise<unknown>;
  deadline: number;
}

/** A relayed client's state: waiting for C2 (proof of its key), then signed in. */
export interface RelayedClient {
  readonly clientId: string;
  readonly connection: Connection;
  channel: SecureChannel | null;
  /** Set between A1 and C2 (or RA and RC); the proof is accepted once, within the window. */
  pending: PendingProof | null;
  /**
   * From the proof's arrival until it is judged and answered: whether it verified. Requests sealed
   * after it (in its flight: docs/bridge-protocol.md §3 step 9) wait for it, so none is served
   * before the proof has signed the channel in, and none at all after a refused proof.
   */
  proving: Promise<boolean> | null;
  /** Seals for `channel`, frames leaving in seal order (hsc3: what one tick sends, as one record). */
  sender: ChannelSender | null;
  /** Requests being served; past the connection limit more are answered 429, as on a direct connection. */
  inFlight: number;
}

/**
 * The envelope's text, or, for a reply larger than the channel carries, a 413 error envelope under the
 * same id: the client learns why instead of waiting for its timeout.
 */
export function sealableText(envelope: unknown): string {
  const text = JSON.stringify(envelope);
  if (text.length * 3 <= MAX_SEALED_PLAINTEXT_BYTES || new TextEncoder().encode(text).length <= MAX_SEALED_PLAINTEXT_BYTES) return text;
  const id = envelope && typeof envelope === 'object' && 'id' in envelope && typeof envelope.id === 'string' ? envelope.id : '';
  return JSON.stringify(
    errorEnvelope(id, 'rpc', { code: 413, message: `the reply is larger than the bridge channel carries (${MAX_SEALED_PLAINTEXT_BYTES} bytes)` }),
  );
}
