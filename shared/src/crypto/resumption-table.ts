/**
 * The agent's side of hsr1 tickets (resumption.ts): the table a ticket id points into, in memory only.
 */
import type { TicketMessageArgs } from './resumption.ts';
import { randomBytes, toBase64 } from './subtle.ts';
import { SIZES } from './transcript.ts';

/** What the agent remembers per ticket (in memory only: a restart forgets every ticket). */
export interface TicketState {
  md5Key: string;
  user: string;
  /** base64 raw host key the ticket was issued under. */
  hostKey: string;
  channel: string;
  secret: Uint8Array;
  expiresAt: number;
  /** When the key last proved itself with RSA (a full handshake); bounds the chain of resumptions. */
  provenAt: number;
}

/**
 * The agent's tickets: random 256-bit ids into a table. `take` removes what it finds, so a ticket is
 * good once (a replay finds nothing); an expired, unknown or already used id is refused alike.
 */
export class TicketTable {
  private readonly tickets = new Map<string, TicketState>();
  private readonly maxTickets: number;

  constructor(maxTickets = 10_000) {
    this.maxTickets = maxTickets;
  }

  get size(): number {
    return this.tickets.size;
  }

  issue(state: TicketState, now: number): TicketMessageArgs {
    // Oldest first (insertion order), so expired tickets sit at the front: stop at the first live one.
    for (const [id, old] of this.tickets) {
      if (old.expiresAt > now) break;
      this.forget(id);
    }
    // Full: the oldest ticket goes (its client falls back to a full handshake).
    while (this.tickets.size >= this.maxTickets) this.forget(this.tickets.keys().next().value as string);
    const ticket = toBase64(randomBytes(SIZES.key));
    this.tickets.set(ticket, state);
    return { ticket, expires_in: Math.floor((state.expiresAt - now) / 1000), channel: state.channel };
  }

  take(ticket: string, now: number): TicketState | null {
    const state = this.tickets.get(ticket);
    if (!state) return null;
    this.tickets.delete(ticket);
    if (state.expiresAt <= now) {
      state.secret.fill(0);
      return null;
    }
    return state;
  }

  /** Drops every ticket of a key (unregistered) or of everyone (`undefined`). */
  revoke(md5Key?: string): void {
    for (const [id, state] of this.tickets) if (md5Key === undefined || state.md5Key === md5Key) this.forget(id);
  }

  private forget(id: string): void {
    this.tickets.get(id)?.secret.fill(0);
    this.tickets.delete(id);
  }
}
