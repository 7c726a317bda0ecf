/**
 * The hsc1 channel handshake with one host through a bridge session (docs/bridge-protocol.md §3):
 * C1 in plain (it carries the client's public key, for a host that does not know it yet), A1 in plain
 * (checked against the pinned host key, or offered to `onHostKey` on first use), then C2 sealed: the
 * key proof, whose reply is the session on the host (`[token, ttl]`) or the invitation to sign in
 * with a password on the channel.
 *
 * With a ticket from an earlier channel to the same host (shared/src/crypto/resumption.ts) it resumes
 * instead: R1 in plain, RA in plain (the host key's signature and the ticket's confirm checked), RC
 * sealed; a host that refuses the ticket (used, expired, its key revoked, the agent restarted) gets the
 * full handshake on the same bridge session. A client that keeps tickets asks for one in C1, and the
 * host sends it sealed just before its sign-in reply.
 *
 * Pipelining: when the ticket says its host serves requests sealed after RC only once RC has signed
 * the channel in (`pipelining`, sealed in the ticket message), `onProofSent` runs right after RC is
 * sealed, so the caller's queued requests leave in RC's flight instead of one round trip later. Not
 * after C2: its answer may be "sign in with a password" (keyNotRegistered), which no request could
 * have known to wait for (docs/bridge-protocol.md §3 step 9).
 *
 * States: sending-c1 → awaiting-a1 → verifying → awaiting-c2 → done (or failed); resuming:
 * sending-r1 → awaiting-ra → verifying → awaiting-c2 → done. Relayed frames from the host go to
 * `receive` until the channel exists, then to the framing (bridge-framing.ts).
 *
 * Runtime-neutral (WebCrypto only).
 */
import {
  BINARY_CHANNEL_VERSIONS,
  clientTicketFrom,
  startClientHandshake,
  startClientResumption,
  TICKET_MESSAGE_ID,
  type ChannelVersion,
  type ClientHandshake,
  type ClientResumption,
  type ClientTicket,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { parseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { ChannelFraming } from './bridge-framing.ts';
import type { BridgeSession } from './bridge-session.ts';
import { errorText, messageOf, refusal } from './bridge-replies.ts';
import { ConnectionError } from './errors.ts';
import { textToBase64, type WebCryptoClientKey } from './key-auth.ts';
import type { CloseInfo, SignedInSession } from './transport.ts';

export type ChannelHandshakeState = 'sending-r1' | 'awaiting-ra' | 'sending-c1' | 'awaiting-a1' | 'verifying' | 'awaiting-c2' | 'done' | 'failed';

/**
 * The opening's first message made ahead (docs/bridge-protocol.md §2.3, "Relay in the sign-in's
 * flight"): a resumption (R1) for a ticket, else the full handshake (C1, offering the binary channels,
 * which every bridge that takes an early frame relays).
 */
export type EarlyOpening = { kind: 'resume'; started: ClientResumption } | { kind: 'full'; started: ClientHandshake; body: string };

export interface ChannelHandshakeOptions {
  session: BridgeSession;
  agentId: string;
  hostLabel: string;
  key: { private: string | WebCryptoClientKey; publicPem: string; spkiPem: string };
  /** The host key pinned for this host (base64 raw Ed25519), if any. */
  pinnedHostKey: string | undefined;
  /** First use: accept the presented host key or not (without it, an unpinned host is refused). */
  onHostKey: ((fingerprint: string, hostKeyB64: string) => boolean | Promise<boolean>) | undefined;
  /** The channel broke or was closed (its framing's `onClose`, from the handshake on). */
  onChannelClose: (info: CloseInfo) => void;
  /** A ticket for this host (its host key pinned, checked by the caller): try resuming first. */
  ticket?: ClientTicket | undefined;
  /**
   * The opening when already started, and whether its first message (R1 or C1) already went to the
   * room's host behind the bridge sign-in (docs/bridge-protocol.md §2.3): then its answer is only awaited.
   */
  early?: { opening: EarlyOpening; sentEarly: boolean } | undefined;
  /** Ask the host for a ticket for the next channel. */
  wantTicket?: boolean;
  /** A resumption's RC was just sealed and its host takes requests in RC's flight: send them now (same tick). */
  onProofSent?: () => void;
}

/** What a finished handshake yields: the channel's framing and how the host took the key proof. */
export interface ChannelHandshakeResult {
  framing: ChannelFraming;
  /** The host key the channel was verified against (newly accepted on first use). */
  hostKey: string;
  /** The session the key proof opened on the host, or (the key unknown there) why there is none. */
  outcome: { session: SignedInSession } | { keyNotRegistered: string };
  /** Whether a ticket opened this channel (no RSA on either side). */
  resumed: boolean;
  /** The ticket the host issued for the next channel, if it did. */
  ticket?: ClientTicket;
  /** What the channel opened after the proof's reply and before the caller took over (replies to pipelined requests), in order. */
  following: string[];
}

/** The ids of the key proof (C2) and the resumption proof (RC), so their replies are told from anything else. */
const C2_ID = 'hsc1-c2';
const RC_ID = 'hsr1-rc';

export class ChannelHandshake {
  state: ChannelHandshakeState = 'sending-c1';
  /** The channel's framing, from A1's verification on. */
  framing: ChannelFraming | null = null;
  private readonly options: ChannelHandshakeOptions;
  private a1Waiter: ((body: string) => void) | null = null;
  /** A plain answer (RA to an R1 sent behind the bridge sign-in) that came before it was awaited. */
  private unawaited: string | null = null;
  private c2Waiter: ((env: WireEnvelope) => void) | null = null;
  /** Sends R1 or C1 to the host by its id: kept while it is only the early one, whose drop the bridge may yet report. */
  private sendFirst: (() => void) | null = null;
  /** The bridge reported the early first message dropped (maybe before the opening got to it). */
  private earlyDropped = false;

  constructor(options: ChannelHandshakeOptions) {
    this.options = options;
  }

  /** The bridge dropped the R1 or C1 sent behind its sign-in (the host was not there yet): it goes to the host's id now. */
  earlyFirstDropped(): void {
    this.earlyDropped = true;
    const send = this.state === 'awaiting-ra' || this.state === 'awaiting-a1' ? this.sendFirst : null;
    this.sendFirst = null;
    send?.();
  }

  /** The first message to the host: by its id now, unless the early one went (then kept for a resend). */
  private sendOrKeep(body: string, sentEarly: boolean): void {
    const { session, agentId } = this.options;
    if (sentEarly && !this.earlyDropped) this.sendFirst = () => session.sendRelay(agentId, body);
    else session.sendRelay(agentId, body);
  }

  /** A relayed binary frame from the host: only an hsc2 or hsc3 channel's frames come so (ignored before it exists). */
  receiveBinary(body: Uint8Array): void {
    this.framing?.receiveBinary(body);
  }

  /** A relayed frame from the host: A1 in plain, then (the channel made) sealed frames for the framing. */
  receive(body: string): void {
    if (this.framing) {
      this.framing.receive(body);
      return;
    }
    const waiter = this.a1Waiter;
    this.a1Waiter = null;
    if (waiter) waiter(body);
    else this.unawaited ??= body;
  }

  /** The host's next plain answer (A1 or RA), or the one that already came. */
  private nextPlain(): Promise<string> {
    const came = this.unawaited;
    this.unawaited = null;
    return came !== null ? Promise.resolve(came) : new Promise<string>((resolve) => (this.a1Waiter = resolve));
  }

  /**
   * Runs the handshake; `race` wraps every wait so that a close, the deadline or a cancel fails it.
   * The framing it resolves with already carries the channel; its `onPlain` is the caller's to set.
   */
  async run(race: <T>(p: Promise<T>) => Promise<T>): Promise<ChannelHandshakeResult> {
    try {
      return await this.steps(race);
    } catch (err) {
      this.state = 'failed';
      this.framing?.close({ code: 4000, reason: messageOf(err) });
      throw err;
    }
  }

  private async steps(race: <T>(p: Promise<T>) => Promise<T>): Promise<ChannelHandshakeResult> {
    const { ticket, session, early } = this.options;
    // An hsc2 or hsc3 ticket resumes such a channel, whose binary frames need a bridge that relays them
    // (every bridge that takes an early R1 does); an R1 already sent is answered, so it is resumed.
    if (ticket && ((early?.opening.kind === 'resume' && early.sentEarly) || ticket.channel === 'hsc1' || session.binaryFrames)) {
      const resumed = await this.resume(race, ticket);
      if (resumed) return resumed;
    }
    return this.fullHandshake(race);
  }

  /** R1, RA, RC; null when the host refuses the ticket (then the full handshake follows). */
  private async resume(race: <T>(p: Promise<T>) => Promise<T>, ticket: ClientTicket): Promise<ChannelHandshakeResult | null> {
    const { hostLabel } = this.options;
    this.state = 'sending-r1';
    const early = this.options.early;
    const ahead = early?.opening.kind === 'resume' ? early.opening.started : undefined;
    const resumption = ahead ?? (await startClientResumption(ticket));
    const raBody = this.nextPlain();
    this.state = 'awaiting-ra';
    this.sendOrKeep(r1Body(resumption), ahead !== undefined && early?.sentEarly === true);
    const ra = parseEnvelope(await race(raBody));
    if (!ra) throw new ConnectionError(`host ${hostLabel} answered the resumption with something that is not an envelope`);
    if (ra.name !== 'response') return null;
    this.state = 'verifying';
    // A reply altered on the way, or from a host without this ticket's secret, fails here: no fallback.
    const result = await race(resumption.finish(ra.args));
    const proof = { id: RC_ID, name: 'auth_resume', args: result.rcArgs };
    const issuedBy = { secret: result.resumptionSecret, hostKey: ticket.hostKey, md5Key: ticket.md5Key };
    return this.prove(race, result.channel, proof, issuedBy, { resumed: true, pipelined: ticket.pipelining === true });
  }

  private async fullHandshake(race: <T>(p: Promise<T>) => Promise<T>): Promise<ChannelHandshakeResult> {
    const { session, hostLabel, key } = this.options;
    this.state = 'sending-c1';
    const opening = this.options.early?.opening;
    const sentEarly = opening?.kind === 'full' && this.options.early?.sentEarly === true;
    // A C1 made ahead offers the binary channels: used when it went early, or when this bridge relays binary frames.
    const ahead = opening?.kind === 'full' && (sentEarly || session.binaryFrames) ? opening : undefined;
    const { started: hs, body } =
      ahead ??
      (await startFullHandshake(key, {
        // hsc3's and hsc2's binary frames need a bridge that relays them as binary; it says so in its announcements.
        channels: session.binaryFrames ? BINARY_CHANNEL_VERSIONS : [],
        wantTicket: this.options.wantTicket === true,
      }));
    const a1Body = this.nextPlain();
    this.state = 'awaiting-a1';
    this.sendOrKeep(body, sentEarly);
    const a1 = parseEnvelope(await race(a1Body));
    if (!a1) throw new ConnectionError(`host ${hostLabel} answered the handshake with something that is not an envelope`);
    if (a1.name !== 'response')
      throw new ConnectionError(`host ${hostLabel} refused the channel: ${errorText(a1)}`, { closeCode: 4401, cause: refusal(a1, 'auth_ssl') });

    this.state = 'verifying';
    let pinned = this.options.pinnedHostKey;
    const result = await race(hs.finish(a1.args, pinned !== undefined ? { pinnedHostKey: pinned } : {}));
    if (pinned === undefined) {
      const { onHostKey } = this.options;
      const accept = onHostKey ? await race(Promise.resolve(onHostKey(result.hostKeyFingerprint, result.hostKey))) : false;
      if (!accept) {
        throw new ConnectionError(
          onHostKey
            ? `host key ${result.hostKeyFingerprint} of ${hostLabel} was not accepted`
            : `host key ${result.hostKeyFingerprint} of ${hostLabel} is not pinned (pass pinnedHostKey or onHostKey)`,
        );
      }
      pinned = result.hostKey;
    }
    const proof = { id: C2_ID, name: 'auth_ssl', args: result.c2Args };
    return this.prove(
      race,
      result.channel,
      proof,
      { secret: result.resumptionSecret, hostKey: pinned, md5Key: hs.c1Args.md5_key },
      { resumed: false, pipelined: false },
    );
  }

  /**
   * The sealed proof (C2 or RC) and its reply; a ticket the host sends just before that reply is kept
   * for the result. `issuedBy` says what such a ticket stands for. `pipelined`: the caller's requests
   * follow the proof at once (onProofSent), and what comes after its reply is kept for the caller.
   */
  private async prove(
    race: <T>(p: Promise<T>) => Promise<T>,
    channel: SecureChannel,
    proof: { id: string; name: string; args: unknown },
    issuedBy: { secret: Uint8Array; hostKey: string; md5Key: string },
    { resumed, pipelined }: { resumed: boolean; pipelined: boolean },
  ): Promise<ChannelHandshakeResult> {
    const { session, agentId, hostLabel } = this.options;
    const framing = new ChannelFraming(session, agentId, channel, hostLabel);
    framing.onClose = this.options.onChannelClose;
    this.framing = framing;
    const c2Reply = new Promise<WireEnvelope>((resolve) => (this.c2Waiter = resolve));
    const received: { ticket?: ClientTicket | null } = {};
    const following: string[] = [];
    // Until the proof is answered, what the channel opens is looked at for that reply (and a ticket) only;
    // after it (replies to pipelined requests, maybe in the same record), kept for the caller.
    framing.onPlain = (plain) => {
      if (this.c2Waiter === null) {
        following.push(plain);
        return;
      }
      const env = parseEnvelope(plain);
      if (env?.id === TICKET_MESSAGE_ID && env.name === 'response') {
        received.ticket = clientTicketFrom(env.args, { ...issuedBy, now: Date.now() });
        return;
      }
      if (!env || env.id !== proof.id || env.name === 'event') return;
      const waiter = this.c2Waiter;
      this.c2Waiter = null;
      waiter?.(env);
    };
    framing.send(JSON.stringify({ ...proof, namespace: 'rpc' }));
    this.state = 'awaiting-c2';
    if (pipelined) this.options.onProofSent?.();
    const c2 = await race(c2Reply);
    issuedBy.secret.fill(0);
    const outcome = c2Outcome(c2, hostLabel);
    this.state = 'done';
    return { framing, hostKey: issuedBy.hostKey, outcome, resumed, following, ...(received.ticket ? { ticket: received.ticket } : {}) };
  }
}

/** The full handshake started: its C1 made (as relayed to the host, §3 step 1), its finish to come. */
export async function startFullHandshake(
  key: ChannelHandshakeOptions['key'],
  { channels, wantTicket }: { channels: readonly ChannelVersion[]; wantTicket: boolean },
): Promise<{ kind: 'full'; started: ClientHandshake; body: string }> {
  const started = await startClientHandshake({
    ...(typeof key.private === 'string' ? { clientKeyPem: key.private } : { clientKeys: key.private }),
    clientSpkiPem: key.spkiPem,
    channels: [...channels],
  });
  const c1 = { ...started.c1Args, pub_key: textToBase64(key.publicPem), ...(wantTicket ? { want_ticket: true } : {}) };
  return { kind: 'full', started, body: JSON.stringify({ id: 'hsc1-c1', name: 'auth_ssl', namespace: 'rpc', args: c1 }) };
}

/** A resumption's R1 as relayed to the host (docs/bridge-protocol.md §3 step 9). */
export function r1Body(resumption: ClientResumption): string {
  return JSON.stringify({ id: 'hsr1-r1', name: 'auth_resume', namespace: 'rpc', args: resumption.r1Args });
}

/** The host's answer to C2: a session (`[token, ttl]`), the invitation to sign in, or a refusal (thrown). */
function c2Outcome(c2: WireEnvelope, hostLabel: string): ChannelHandshakeResult['outcome'] {
  const args = c2.args;
  if (c2.name === 'response' && typeof args === 'object' && args !== null && (args as { signed_in?: unknown }).signed_in === false) {
    return {
      keyNotRegistered: `host ${hostLabel} does not know this key yet: sign in once with a user and password (on the channel; the bridge sees none of it), then register the key`,
    };
  }
  if (c2.name === 'response' && Array.isArray(args) && typeof args[0] === 'string' && typeof args[1] === 'number') {
    return { session: { token: args[0], ttlSeconds: args[1] } };
  }
  throw new ConnectionError(`host ${hostLabel} refused the key proof: ${errorText(c2)}`, {
    closeCode: 4401,
    cause: refusal(c2, c2.id === RC_ID ? 'auth_resume' : 'auth_ssl'),
  });
}
