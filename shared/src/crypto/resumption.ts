/**
 * hsr1: resuming a channel with a ticket instead of RSA (docs/protocol.md "Resumption",
 * docs/bridge-protocol.md §3.6). A client that finished a full hsc1 handshake with a host holds a
 * ticket (a random id into the agent's table) and the resumption secret both sides derived from that
 * session. To open the next channel:
 *
 *   R1  client → agent (plain)   auth_resume {ticket, client_eph, client_nonce}
 *   RA  agent → client (plain)   {v:"hsr1", agent_eph, agent_nonce, host_sig, confirm}
 *   RC  client → agent (sealed)  auth_resume {confirm}   → a fresh ticket (sealed), then [token, ttl]
 *
 *   Tr  = SHA-256("hostadm-hsr1" ‖ len(channel) ‖ channel ‖ md5_key ‖ host_key ‖ ticket ‖ client_eph ‖ client_nonce ‖ agent_eph ‖ agent_nonce)
 *   host_sig = Ed25519(host key, "hostadm-hsr1 host" ‖ Tr)
 *   k_c2a(32) ‖ k_a2c(32) ‖ sid(16) ‖ agent confirm(32) ‖ client confirm(32) ‖ next resumption secret(32)
 *       = HKDF-SHA256(ikm = X25519(eph, eph') ‖ resumption secret, salt = Tr, info = "hostadm-hsr1 keys", 176 bytes)
 *
 * No RSA on either side. The traffic keys need the fresh X25519 secret (forward secrecy: the ticket and
 * its secret alone decrypt nothing), the confirm values prove both sides hold the resumption secret,
 * and the host key still signs, so a stolen ticket cannot impersonate the host. Runtime-neutral.
 */
import { channelFrom, fixedField, HandshakeError, isRecord, type HostKey } from './handshake.ts';
import type { SecureChannel } from './channel.ts';
import { importEd25519PublicKey } from './keys.ts';
import { nextTurn } from '../net/next-turn.ts';
import { primitives, sha256, warmUpPrimitives } from './primitives.ts';
import type { TicketState } from './resumption-table.ts';
import { concatBytes, constantTimeEqual, fromBase64, isBase64, randomBytes, toBase64, utf8Encode } from './subtle.ts';
import { type ChannelVersion, generateEphemeral, HSC1_VERSION, HSC2_VERSION, HSC3_VERSION, LABEL_RESUME_HOST_SIG, SIZES, x25519 } from './transcript.ts';

export const RESUMPTION_VERSION = 'hsr1';
export const LABEL_RESUME_TRANSCRIPT = 'hostadm-hsr1';
/**
 * The one HKDF expansion of a resumption, cut at fixed offsets into its six outputs. One labelled
 * expansion instead of six: each call of Node's WebCrypto costs ~20–40 µs of thread-pool overhead, and the
 * resumption's target is 1 ms for both sides together.
 */
export const INFO_RESUME_KEYS = 'hostadm-hsr1 keys';
const KEY_BLOCK: readonly [keyof ResumedSecrets, number][] = [
  ['kC2a', SIZES.key],
  ['kA2c', SIZES.key],
  ['sid', SIZES.sid],
  ['agentConfirm', SIZES.key],
  ['clientConfirm', SIZES.key],
  ['resumption', SIZES.key],
];

/** A ticket is good for 8 hours after it is issued (a working day of commands; each use gives a new one). */
export const TICKET_LIFETIME_MS = 8 * 3600_000;
/** Resumptions chain for at most 24 hours after the last full handshake (the last RSA proof of the key). */
export const RESUMPTION_CHAIN_MS = 24 * 3600_000;
/** The id of the sealed envelope that carries a ticket (the agent sends it just before the sign-in reply). */
export const TICKET_MESSAGE_ID = 'hsc1-ticket';
/** Channel versions a ticket may name; a resumed channel speaks the version its ticket recorded. */
export const RESUMABLE_CHANNELS: readonly string[] = [HSC1_VERSION, HSC2_VERSION, HSC3_VERSION];

function resumableChannel(channel: string): ChannelVersion {
  if (channel === HSC1_VERSION || channel === HSC2_VERSION || channel === HSC3_VERSION) return channel;
  throw new HandshakeError('bad-request', `a ticket names channel version ${JSON.stringify(channel)}, which cannot be resumed`);
}

export interface R1Args {
  ticket: string;
  client_eph: string;
  client_nonce: string;
}

export interface RaArgs {
  v: typeof RESUMPTION_VERSION;
  agent_eph: string;
  agent_nonce: string;
  host_sig: string;
  confirm: string;
}

export interface RcArgs {
  confirm: string;
}

/** The sealed ticket message's args. */
export interface TicketMessageArgs {
  ticket: string;
  /** Seconds the ticket stays good for. */
  expires_in: number;
  /** The channel version the resumed channel will speak. */
  channel: string;
  /**
   * The agent that issued the ticket (the only one that can take it: tickets live in its memory)
   * serves requests sealed right after RC only once RC has signed the channel in, so the client may
   * send them in RC's flight instead of waiting for RC's reply (docs/bridge-protocol.md §3 step 9).
   */
  pipelining?: true;
}

/** A ticket as the client keeps it (in the CLI: its profile's ticket file, mode 0600). */
export interface ClientTicket {
  ticket: string;
  /** The resumption secret, base64: as secret as a key. */
  secret: string;
  /** The host key (base64 raw) of the host that issued it: the ticket goes to that host only. */
  hostKey: string;
  /** The client key (md5_key) the ticket belongs to. */
  md5Key: string;
  channel: string;
  /** Epoch ms, client clock. */
  expiresAt: number;
  /** The issuing agent takes requests in RC's flight (TicketMessageArgs.pipelining; sealed, so no bridge sets it). */
  pipelining?: true;
}

/** The client's ticket from the sealed ticket message, or null when the message is not one. */
export function clientTicketFrom(args: unknown, issuedBy: { secret: Uint8Array; hostKey: string; md5Key: string; now: number }): ClientTicket | null {
  if (!isRecord(args)) return null;
  const { ticket, expires_in: expiresIn, channel } = args;
  if (!isBase64(ticket) || fromBase64(ticket).length !== SIZES.key) return null;
  if (typeof expiresIn !== 'number' || !Number.isFinite(expiresIn) || expiresIn <= 0) return null;
  if (typeof channel !== 'string' || !RESUMABLE_CHANNELS.includes(channel)) return null;
  const lifetime = Math.min(expiresIn * 1000, TICKET_LIFETIME_MS);
  const kept: ClientTicket = {
    ticket,
    secret: toBase64(issuedBy.secret),
    hostKey: issuedBy.hostKey,
    md5Key: issuedBy.md5Key,
    channel,
    expiresAt: issuedBy.now + lifetime,
  };
  if (args.pipelining === true) kept.pipelining = true;
  return kept;
}

/** The ticket id R1 names, for the agent's lookup; null when R1 is malformed. */
export function ticketOfR1(args: unknown): string | null {
  return isRecord(args) && fixedField(args, 'ticket', SIZES.key) ? (args.ticket as string) : null;
}

// ---- the key schedule ----

interface TranscriptFields {
  channel: string;
  md5Key: string;
  hostKey: Uint8Array;
  ticket: Uint8Array;
  clientEph: Uint8Array;
  clientNonce: Uint8Array;
  agentEph: Uint8Array;
  agentNonce: Uint8Array;
}

/** Tr; every field has a fixed length except the channel version, which carries its own length. */
export async function resumeTranscript(f: TranscriptFields): Promise<Uint8Array> {
  const channel = utf8Encode(f.channel);
  if (channel.length > 255 || f.md5Key.length !== 24) throw new RangeError('channel version or md5_key of the wrong length');
  const fixed = [f.hostKey, f.ticket, f.clientEph, f.clientNonce, f.agentEph, f.agentNonce];
  if (fixed.some((b) => b.length !== 32)) throw new RangeError('resumption transcript field has the wrong size');
  return sha256(concatBytes(utf8Encode(LABEL_RESUME_TRANSCRIPT), Uint8Array.of(channel.length), channel, utf8Encode(f.md5Key), ...fixed));
}

interface ResumedSecrets {
  kC2a: Uint8Array;
  kA2c: Uint8Array;
  sid: Uint8Array;
  agentConfirm: Uint8Array;
  clientConfirm: Uint8Array;
  resumption: Uint8Array;
}

async function deriveResumed(shared: Uint8Array, resumptionSecret: Uint8Array, transcript: Uint8Array): Promise<ResumedSecrets> {
  const ikm = concatBytes(shared, resumptionSecret);
  const total = KEY_BLOCK.reduce((sum, [, bytes]) => sum + bytes, 0);
  const [block] = await primitives().hkdfSha256(ikm, transcript, [{ info: utf8Encode(INFO_RESUME_KEYS), length: total }]);
  ikm.fill(0);
  if (block?.length !== total) throw new Error('HKDF returned fewer bytes than asked for');
  const out = {} as ResumedSecrets;
  let offset = 0;
  for (const [name, bytes] of KEY_BLOCK) {
    out[name] = block.slice(offset, offset + bytes);
    offset += bytes;
  }
  block.fill(0);
  return out;
}

const hostSignedResume = (transcript: Uint8Array) => concatBytes(utf8Encode(LABEL_RESUME_HOST_SIG), transcript);

// ---- client side ----

export interface ClientResumptionResult {
  channel: SecureChannel;
  /** Send these, sealed with `channel`, as the `auth_resume` RC request. */
  rcArgs: RcArgs;
  /** What the fresh ticket of this resumed session (if the agent issues one) stands for. */
  resumptionSecret: Uint8Array;
}

export interface ClientResumption {
  r1Args: R1Args;
  /** Checks RA and derives the channel; single use. Throws HandshakeError on any failure. */
  finish(raArgs: unknown): Promise<ClientResumptionResult>;
}

export async function startClientResumption(ticket: ClientTicket): Promise<ClientResumption> {
  if (!RESUMABLE_CHANNELS.includes(ticket.channel))
    throw new HandshakeError('downgrade', `the ticket names channel ${ticket.channel}, which this client does not speak`);
  const ephemeral = await generateEphemeral();
  const clientNonce = randomBytes(SIZES.nonce);
  const r1Args: R1Args = { ticket: ticket.ticket, client_eph: toBase64(ephemeral.publicRaw), client_nonce: toBase64(clientNonce) };
  // While R1 and RA are on their way (from the next turn, after the writes of this one and the input
  // that came meanwhile): the host key imported for RA's check (keys.ts keeps the import) and the first
  // use of RA's other operations paid (primitives.ts), so that RC leaves sooner once RA is in.
  nextTurn(() => {
    try {
      importEd25519PublicKey(fromBase64(ticket.hostKey)).catch(() => undefined);
    } catch {
      // not base64: finish() refuses RA's signature with the same key
    }
    warmUpPrimitives();
  });
  let used = false;

  async function finish(raArgs: unknown): Promise<ClientResumptionResult> {
    if (used) throw new HandshakeError('bad-reply', 'this resumption was already finished');
    used = true;
    if (!isRecord(raArgs) || raArgs.v !== RESUMPTION_VERSION) throw new HandshakeError('bad-reply', 'RA is not an hsr1 reply');
    const agentEph = fixedField(raArgs, 'agent_eph', SIZES.eph);
    const agentNonce = fixedField(raArgs, 'agent_nonce', SIZES.nonce);
    const hostSig = fixedField(raArgs, 'host_sig', SIZES.hostSig);
    const confirm = fixedField(raArgs, 'confirm', SIZES.key);
    if (!agentEph || !agentNonce || !hostSig || !confirm) throw new HandshakeError('bad-reply', 'RA fields are missing or have the wrong size');
    const hostKey = fromBase64(ticket.hostKey);
    const transcript = await resumeTranscript({
      channel: ticket.channel,
      md5Key: ticket.md5Key,
      hostKey,
      ticket: fromBase64(ticket.ticket),
      clientEph: ephemeral.publicRaw,
      clientNonce,
      agentEph,
      agentNonce,
    });
    let signatureOk = false;
    try {
      signatureOk = await primitives().ed25519Verify(await importEd25519PublicKey(hostKey), hostSig, hostSignedResume(transcript));
    } catch {
      signatureOk = false;
    }
    if (!signatureOk) throw new HandshakeError('bad-signature', 'RA host signature does not verify: the reply was altered, or comes from another host');
    let shared: Uint8Array;
    try {
      shared = await x25519(ephemeral.privateKey, agentEph);
    } catch (cause) {
      throw new HandshakeError('bad-reply', 'RA agent_eph is not a usable X25519 key', { cause });
    }
    const secrets = await deriveResumed(shared, fromBase64(ticket.secret), transcript);
    shared.fill(0);
    if (!constantTimeEqual(confirm, secrets.agentConfirm)) {
      throw new HandshakeError('bad-signature', 'RA confirm does not match: the host does not hold this ticket’s secret, or the reply was altered');
    }
    const channel = await channelFrom('client', secrets, resumableChannel(ticket.channel));
    return { channel, rcArgs: { confirm: toBase64(secrets.clientConfirm) }, resumptionSecret: secrets.resumption };
  }

  return { r1Args, finish };
}

// ---- agent side ----

export interface AgentResumption {
  raArgs: RaArgs;
  channel: SecureChannel;
  /** Whether RC carries the client's confirm (checked in constant time). */
  verifyRc(rcArgs: unknown): boolean;
  /** What the fresh ticket of this resumed session stands for. */
  resumptionSecret: Uint8Array;
}

/**
 * Answers R1 for a ticket already taken from the table (`state`). The caller has checked that the key
 * is still registered to `state.user` and that `state.hostKey` is this host's key.
 */
export async function answerResumption(options: { r1Args: unknown; state: TicketState; hostKey: HostKey }): Promise<AgentResumption> {
  const { r1Args, state, hostKey } = options;
  if (!isRecord(r1Args)) throw new HandshakeError('bad-request', 'R1 args are not an object');
  const ticket = fixedField(r1Args, 'ticket', SIZES.key);
  const clientEph = fixedField(r1Args, 'client_eph', SIZES.eph);
  const clientNonce = fixedField(r1Args, 'client_nonce', SIZES.nonce);
  if (!ticket || !clientEph || !clientNonce) throw new HandshakeError('bad-request', 'R1 ticket, client_eph and client_nonce must be 32 bytes each, base64');
  if (hostKey.publicRaw !== state.hostKey) throw new HandshakeError('bad-request', 'the ticket was issued under another host key');
  const ephemeral = await generateEphemeral();
  const agentNonce = randomBytes(SIZES.nonce);
  let shared: Uint8Array;
  try {
    shared = await x25519(ephemeral.privateKey, clientEph);
  } catch (cause) {
    throw new HandshakeError('bad-request', 'R1 client_eph is not a usable X25519 key', { cause });
  }
  const transcript = await resumeTranscript({
    channel: state.channel,
    md5Key: state.md5Key,
    hostKey: fromBase64(hostKey.publicRaw),
    ticket,
    clientEph,
    clientNonce,
    agentEph: ephemeral.publicRaw,
    agentNonce,
  });
  const [hostSig, secrets] = await Promise.all([
    primitives().ed25519Sign(hostKey.privateKey, hostSignedResume(transcript)),
    deriveResumed(shared, state.secret, transcript),
  ]);
  shared.fill(0);
  state.secret.fill(0); // used once: the next ticket gets the next secret
  const channel = await channelFrom('agent', secrets, resumableChannel(state.channel));
  const expected = secrets.clientConfirm;
  return {
    raArgs: {
      v: RESUMPTION_VERSION,
      agent_eph: toBase64(ephemeral.publicRaw),
      agent_nonce: toBase64(agentNonce),
      host_sig: toBase64(hostSig),
      confirm: toBase64(secrets.agentConfirm),
    },
    channel,
    verifyRc(rcArgs: unknown): boolean {
      const confirm = isRecord(rcArgs) ? fixedField(rcArgs, 'confirm', SIZES.key) : null;
      return confirm !== null && constantTimeEqual(confirm, expected);
    },
    resumptionSecret: secrets.resumption,
  };
}
