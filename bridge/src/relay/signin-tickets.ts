/**
 * @module The bridge's half of sign-in tickets (bst1, docs/bridge-protocol.md §2.3 "Sign-in tickets";
 * the client's half and the labels are in shared/src/crypto/bridge-ticket.ts).
 *
 * Stateless: a ticket is `bst1.<payload>.<tag>`, the payload (JSON: key id, md5_key, kind, expiry, a
 * random nonce) authenticated by HMAC-SHA256 under a key derived from the bridge's join secret, and
 * the ticket's secret is HMAC-SHA256 of the payload under a second derived key. So any process or
 * Durable Object of the same bridge (the same join secret) checks any ticket with nothing stored, and
 * a bridge with another secret refuses it. What a ticket cannot say (the key revoked since) is read
 * from the key store at every use. WebCrypto only: both runtimes run this file.
 */
import {
  BRIDGE_TICKET_MAX_LIFETIME_MS,
  BRIDGE_TICKET_PREFIX,
  BST1_LABELS,
  bridgeTicketMessage,
  type BridgeTicketGrant,
} from '@hostadm/shared/crypto/bridge-ticket.ts';
import { constantTimeEqual, fromBase64, fromBase64Url, randomBytes, toBase64, toBase64Url, utf8Decode, utf8Encode } from '@hostadm/shared/crypto/subtle.ts';
import type { KeyRecord, PeerKind } from './ports.ts';

/** A join secret shorter than this (a Worker without JOIN_SECRET) makes no tickets and takes none. */
const MIN_SECRET_BYTES = 16;
/**
 * Tickets whose tag verified, with their secret's key, kept so that the next use of the same ticket
 * costs one HMAC instead of three and a key import (about 40 µs each in Node's WebCrypto): a client
 * presents one ticket for hours. Expiry and the key's registration are still checked at every use.
 */
const MAX_OPENED = 1024;

/** What a valid ticket says. */
export interface TicketClaims {
  keyId: string;
  md5Key: string;
  kind: PeerKind;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** The ticket's secret as an HMAC key (derived from the payload). */
  secretKey: HmacKey;
}

/** WebCrypto's key type as this runtime's typings name it (Node's and Workers' differ). */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

interface HmacKeys {
  ticket: HmacKey;
  secret: HmacKey;
}

/** Issues and opens the tickets of one bridge (one per relay; the keys are derived once, lazily). */
export class SignInTickets {
  private readonly joinSecret: Uint8Array;
  private keys: Promise<HmacKeys | null> | null = null;
  private readonly opened = new Map<string, TicketClaims>();

  constructor(joinSecret: Uint8Array) {
    this.joinSecret = joinSecret;
  }

  /** A ticket for `key`, good for `lifetimeSeconds` (at most 8 hours); null when this bridge makes none. */
  async issue(key: KeyRecord, now: number, lifetimeSeconds: number): Promise<BridgeTicketGrant | null> {
    const keys = await this.hmacKeys();
    const lifetimeMs = Math.min(lifetimeSeconds * 1000, BRIDGE_TICKET_MAX_LIFETIME_MS);
    if (!keys || !(lifetimeMs > 0)) return null;
    const claims = { v: 1, k: key.id, m: key.md5Key, t: key.kind, e: now + lifetimeMs, n: toBase64Url(randomBytes(12)) };
    const payload = utf8Encode(JSON.stringify(claims));
    const [tag, secret] = await Promise.all([sign(keys.ticket, payload), sign(keys.secret, payload)]);
    return {
      ticket: `${BRIDGE_TICKET_PREFIX}${toBase64Url(payload)}.${toBase64Url(tag)}`,
      secret: toBase64(secret),
      expires_in: Math.floor(lifetimeMs / 1000),
    };
  }

  /** The claims of a ticket this bridge issued (expired or not: the caller says why it refuses); null otherwise. */
  async open(ticket: string): Promise<TicketClaims | null> {
    const known = this.opened.get(ticket);
    if (known) return known;
    const keys = await this.hmacKeys();
    if (!keys || !ticket.startsWith(BRIDGE_TICKET_PREFIX)) return null;
    const parts = ticket.slice(BRIDGE_TICKET_PREFIX.length).split('.');
    if (parts.length !== 2) return null;
    let payload: Uint8Array;
    let tag: Uint8Array;
    try {
      payload = fromBase64Url(parts[0]!);
      tag = fromBase64Url(parts[1]!);
    } catch {
      return null;
    }
    if (!constantTimeEqual(await sign(keys.ticket, payload), tag)) return null;
    // Authentic from here on: the bridge wrote this JSON itself.
    const c = JSON.parse(utf8Decode(payload)) as { v: number; k: string; m: string; t: PeerKind; e: number };
    if (c.v !== 1) return null;
    const claims = { keyId: c.k, md5Key: c.m, kind: c.t, expiresAt: c.e, secretKey: await hmacKey(await sign(keys.secret, payload)) };
    if (this.opened.size >= MAX_OPENED) this.opened.delete(this.opened.keys().next().value!);
    this.opened.set(ticket, claims);
    return claims;
  }

  /** Whether `macB64` is the ticket secret's MAC over label ‖ `testString`. */
  async proves(claims: TicketClaims, testString: string, macB64: string): Promise<boolean> {
    let mac: Uint8Array;
    try {
      mac = fromBase64(macB64);
    } catch {
      return false;
    }
    return constantTimeEqual(await sign(claims.secretKey, bridgeTicketMessage(testString)), mac);
  }

  private hmacKeys(): Promise<HmacKeys | null> {
    this.keys ??= deriveKeys(this.joinSecret);
    return this.keys;
  }
}

async function deriveKeys(joinSecret: Uint8Array): Promise<HmacKeys | null> {
  if (joinSecret.length < MIN_SECRET_BYTES) return null;
  const base = await crypto.subtle.importKey('raw', bytes(joinSecret), 'HKDF', false, ['deriveBits']);
  const derive = async (info: string) =>
    hmacKey(
      new Uint8Array(await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: bytes(utf8Encode(info)) }, base, 256)),
    );
  const [ticket, secret] = await Promise.all([derive(BST1_LABELS.ticketKey), derive(BST1_LABELS.secretKey)]);
  return { ticket, secret };
}

function hmacKey(raw: Uint8Array): Promise<HmacKey> {
  return crypto.subtle.importKey('raw', bytes(raw), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

async function sign(key: HmacKey, data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, bytes(data)));
}

/** The same bytes in an ArrayBuffer-backed array (what WebCrypto's typings ask for). */
function bytes(data: Uint8Array): Uint8Array<ArrayBuffer> {
  return data.buffer instanceof ArrayBuffer ? (data as Uint8Array<ArrayBuffer>) : new Uint8Array(data);
}
