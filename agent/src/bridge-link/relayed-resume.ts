/**
 * Resumption tickets for clients that reach this agent through a bridge (docs/protocol.md
 * "Resumption", shared/src/crypto/resumption.ts). The table lives in memory only: a restart of the
 * agent forgets every ticket (its clients do one full handshake), and no resumption secret is ever
 * written to disk. Every resumption re-checks what the full handshake checked at C1: the key is still
 * registered here, to the same user; the session it opens re-checks that the user may still sign in.
 */
import {
  answerResumption,
  HandshakeError,
  RESUMABLE_CHANNELS,
  RESUMPTION_CHAIN_MS,
  TICKET_LIFETIME_MS,
  TicketTable,
  ticketOfR1,
  type HostKey,
  type RaArgs,
  type SecureChannel,
  type TicketMessageArgs,
} from '@hostadm/shared/crypto/index.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { KeyRegistry } from '../server/keys.ts';

/** What a full handshake or a resumption hands on to the ticket it may issue. */
export interface TicketSeed {
  md5Key: string;
  user: string;
  hostKey: string;
  channel: string;
  secret: Uint8Array;
  provenAt: number;
}

export interface ResumedChannel {
  raArgs: RaArgs;
  channel: SecureChannel;
  verifyRc(args: unknown): boolean;
  /** The key and user the ticket was issued to (re-checked just now), and the next ticket's seed. */
  seed: TicketSeed;
}

export class RelayedTickets {
  private readonly table = new TicketTable();
  private readonly keys: Pick<KeyRegistry, 'ownerOf'>;

  constructor(keys: Pick<KeyRegistry, 'ownerOf'>) {
    this.keys = keys;
  }

  get size(): number {
    return this.table.size;
  }

  /**
   * A ticket for the session just signed in, unless the chain of resumptions since the key last
   * proved itself with RSA is used up. The caller sends it sealed, before the sign-in reply.
   */
  issue(seed: TicketSeed, now: number): TicketMessageArgs | null {
    const expiresAt = Math.min(now + TICKET_LIFETIME_MS, seed.provenAt + RESUMPTION_CHAIN_MS);
    if (expiresAt - now < 60_000 || !RESUMABLE_CHANNELS.includes(seed.channel)) {
      seed.secret.fill(0);
      return null;
    }
    return this.table.issue({ ...seed, expiresAt }, now);
  }

  /**
   * R1: takes the ticket (used once, whatever follows), re-checks its key, and answers. An unknown,
   * used or expired ticket, or one whose key was revoked or moved to another user, is the spec's 401:
   * the client then does the full handshake, which refuses or accepts the key on its own terms.
   */
  async answer(r1Args: unknown, hostKey: HostKey, now: number): Promise<ResumedChannel> {
    const id = ticketOfR1(r1Args);
    const state = id === null ? null : this.table.take(id, now);
    if (!state) throw new HostadmError('UNAUTHORIZED', 'auth_resume: unknown, used or expired ticket');
    const key = this.keys.ownerOf(state.md5Key);
    if (!key || key.user !== state.user || key.algorithm !== 'rsa') {
      state.secret.fill(0);
      throw new HostadmError('UNAUTHORIZED', 'auth_resume: the key behind the ticket is no longer registered to its user');
    }
    try {
      const resumed = await answerResumption({ r1Args, state, hostKey });
      const seed: TicketSeed = {
        md5Key: state.md5Key,
        user: state.user,
        hostKey: state.hostKey,
        channel: state.channel,
        secret: resumed.resumptionSecret,
        provenAt: state.provenAt,
      };
      return { raArgs: resumed.raArgs, channel: resumed.channel, verifyRc: resumed.verifyRc, seed };
    } catch (err) {
      if (err instanceof HandshakeError) throw new HostadmError('BAD_REQUEST', `auth_resume: ${err.message}`);
      throw err;
    }
  }

  /** Forgets every ticket (the host key changed, or the link is going away). */
  clear(): void {
    this.table.revoke();
  }
}
