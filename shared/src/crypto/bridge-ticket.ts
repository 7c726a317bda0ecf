/**
 * @module Bridge sign-in tickets, "bst1" (docs/bridge-protocol.md §2.3, "Sign-in tickets"): after a
 * client (or agent) has signed in to a bridge with its key, the bridge may hand it a ticket and a
 * per-ticket secret; a later sign-in to the same bridge presents the ticket and an HMAC, made with the
 * secret, over the bridge's fresh test string, so no RSA is done on either side.
 *
 * This file holds what both sides share (the labels, the client's proof, the reply's shape); the
 * bridge's half (issuing and checking, keys derived from its join secret) is bridge/src/relay/signin-tickets.ts.
 * Runtime-neutral: the HMAC of primitives.ts (node:crypto on Node, else WebCrypto).
 */
import { TEST_STRING_PATTERN } from './transcript.ts';
import { primitives, type EngineKey, type HandshakePrimitives } from './primitives.ts';
import { fromBase64, toBase64, utf8Encode } from './subtle.ts';

/**
 * Every label bst1 uses, fixed and none a prefix of another or of a signature label (signed-messages.ts lists
 * `signin` with the signature labels, so its prefix test covers it).
 */
export const BST1_LABELS = {
  /** HKDF-SHA256 info: the bridge's key that authenticates tickets, from its join secret. */
  ticketKey: 'hostadm-bst1 ticket key',
  /** HKDF-SHA256 info: the bridge's key that derives each ticket's secret, from its join secret. */
  secretKey: 'hostadm-bst1 secret key',
  /** What the client MACs with the ticket's secret: label ‖ test_string. */
  signin: 'hostadm-bst1 signin\n',
} as const;

/** Tickets start with this (and a bridge refuses anything else unparsed). */
export const BRIDGE_TICKET_PREFIX = 'bst1.';

/** The longest a ticket is good for, whatever a bridge says: 8 hours after the key's own sign-in. */
export const BRIDGE_TICKET_MAX_LIFETIME_MS = 8 * 3600 * 1000;

/** A client stops presenting a ticket this long before it expires (clocks differ a little). */
const EXPIRY_MARGIN_MS = 60 * 1000;

/** What a client keeps of a ticket (it holds a secret: keep it where only the user can read it). */
export interface BridgeSignInTicket {
  /** `bst1.<payload>.<tag>`, opaque to the client. */
  ticket: string;
  /** base64 of the ticket's 32-byte secret; sent by the bridge once, never sent back. */
  secret: string;
  /** The key the ticket signs in (base64 MD5 of its SPKI PEM). */
  md5Key: string;
  /** The bridge that issued it (its `/relay` URL without a room): it is never presented to another. */
  bridge: string;
  /** Epoch milliseconds by the client's clock. */
  expiresAt: number;
}

/** The reply's third element after a sign-in with `want_ticket` (what the bridge sends). */
export interface BridgeTicketGrant {
  ticket: string;
  secret: string;
  /** Seconds. */
  expires_in: number;
}

/**
 * Each ticket's secret imported once, kept with the ticket object (a client signs in with one ticket
 * for hours; weakly held, so a forgotten ticket takes its key with it), with the engine that made it.
 */
const secretKeys = new WeakMap<BridgeSignInTicket, { engine: HandshakePrimitives; key: Promise<EngineKey> }>();

function secretKey(ticket: BridgeSignInTicket, engine: HandshakePrimitives): Promise<EngineKey> {
  const known = secretKeys.get(ticket);
  if (known?.engine === engine) return known.key;
  const key = engine.importHmacKey(fromBase64(ticket.secret));
  secretKeys.set(ticket, { engine, key });
  return key;
}

/**
 * Imports the ticket's secret now (the CLI does while the bridge answers the upgrade), and runs one
 * HMAC with a throwaway all-zero key (Node compiles its HMAC code on first use, ~0.2 ms in a cold
 * process), so the sign-in's proof is one quick HMAC when the test string comes. Nothing is sent; a bad
 * secret fails at the proof as before.
 */
export function primeBridgeTicketProof(ticket: BridgeSignInTicket): void {
  const engine = primitives();
  try {
    secretKey(ticket, engine).catch(() => undefined);
  } catch {
    // not base64: bridgeTicketProof fails the same way, where it is reported
  }
  engine
    .importHmacKey(new Uint8Array(32))
    .then((throwaway) => engine.hmacSha256(throwaway, new Uint8Array(0)))
    .catch(() => undefined);
}

/** The bytes a ticket's secret MACs: label ‖ test_string; a test string of another shape is refused. */
export function bridgeTicketMessage(testString: string): Uint8Array {
  if (!TEST_STRING_PATTERN.test(testString)) throw new Error('refusing to answer: the test string is not 32 letters and digits');
  return utf8Encode(BST1_LABELS.signin + testString);
}

/** The client's proof for stage 2: base64 HMAC-SHA256(secret, label ‖ test_string). */
export async function bridgeTicketProof(ticket: BridgeSignInTicket, testString: string): Promise<string> {
  const message = bridgeTicketMessage(testString);
  const engine = primitives();
  return toBase64(await engine.hmacSha256(await secretKey(ticket, engine), message));
}

/**
 * The ticket in a sign-in reply (`[token, seconds, {ticket, secret, expires_in}]`), as the client keeps
 * it; undefined when the reply carries none or a malformed one (then the client simply has no ticket).
 */
export function bridgeTicketFrom(reply: unknown, context: { md5Key: string; bridge: string; now: number }): BridgeSignInTicket | undefined {
  if (!Array.isArray(reply) || reply.length < 3) return undefined;
  const grant = reply[2] as Partial<BridgeTicketGrant> | null;
  if (typeof grant !== 'object' || grant === null) return undefined;
  const { ticket, secret, expires_in: expiresIn } = grant;
  if (typeof ticket !== 'string' || !ticket.startsWith(BRIDGE_TICKET_PREFIX) || ticket.length > 1024) return undefined;
  if (typeof secret !== 'string' || typeof expiresIn !== 'number' || !(expiresIn > 0)) return undefined;
  try {
    if (fromBase64(secret).length !== 32) return undefined;
  } catch {
    return undefined;
  }
  const lifetime = Math.min(expiresIn * 1000, BRIDGE_TICKET_MAX_LIFETIME_MS);
  return { ticket, secret, md5Key: context.md5Key, bridge: context.bridge, expiresAt: context.now + lifetime };
}

/** Whether a kept ticket may be presented to `bridge` for `md5Key` now. */
export function bridgeTicketUsable(ticket: BridgeSignInTicket | undefined, bridge: string, md5Key: string, now: number): boolean {
  return ticket !== undefined && ticket.bridge === bridge && ticket.md5Key === md5Key && ticket.expiresAt - EXPIRY_MARGIN_MS > now;
}
