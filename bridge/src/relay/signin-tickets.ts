/**
 * @module The bridge's half of sign-in tickets (bst1, docs/bridge-protocol.md §2.3 "Sign-in tickets";
 * the client's half and the labels are in shared/src/crypto/bridge-ticket.ts).
 *
 * Stateless: a ticket is `bst1.<payload>.<tag>`, the payload (JSON: key id, md5_key, kind, expiry, a
 * random nonce) authenticated by HMAC-SHA256 under a key derived from the bridge's join secret, and
 * the ticket's secret is HMAC-SHA256 of the payload under a second derived key. So any process or
 * Durable Object of the same bridge (the same join secret) checks any ticket with nothing stored, and
 * a bridge with another secret refuses it. What a ticket cannot say (the key revoked since) is read
 * from the key store at every use. WebCrypto by default, so both runtimes run this file; a runtime may
 * pass a faster HMAC (the port's `hmac`: Node's node:crypto).
 */
import {
  BRIDGE_TICKET_MAX_LIFETIME_MS,
  BRIDGE_TICKET_PREFIX,
  BST1_LABELS,
  bridgeTicketMessage,
  type BridgeTicketGrant,
} from '@hostadm/shared/crypto/bridge-ticket.ts';
import { constantTimeEqual, fromBase64, fromBase64Url, randomBytes, toBase64, toBase64Url, utf8Decode, utf8Encode } from '@hostadm/shared/crypto/subtle.ts';
import type { HmacSha256, KeyRecord, PeerKind } from './ports.ts';

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
  /** The ticket's secret as a key of the bridge's HMAC (derived from the payload). */
  secretKey: unknown;
}

/** WebCrypto's key type as this runtime's typings name it (Node's and Workers' differ). */
type WebCryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** HMAC-SHA256 with keys prepared once: WebCrypto's (imported keys), or a runtime's own (raw bytes). */
interface Mac {
  key(raw: Uint8Array): Promise<unknown>;
  sign(key: unknown, data: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

const webCryptoMac: Mac = {
  key: (raw) => crypto.subtle.importKey('raw', bytes(raw), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']),
  sign: async (key, data) => new Uint8Array(await crypto.subtle.sign('HMAC', key as WebCryptoKey, bytes(data))),
};

function runtimeMac(hmac: HmacSha256): Mac {
  return { key: async (raw) => raw, sign: (key, data) => hmac(key as Uint8Array, data) };
}

interface HmacKeys {
  ticket: unknown;
  secret: unknown;
}

/** Issues and opens the tickets of one bridge (one per relay; the keys are derived once, lazily). */
export class SignInTickets {
  private readonly joinSecret: Uint8Array;
  private keys: Promise<HmacKeys | null> | null = null;
  private readonly opened = new Map<string, TicketClaims>();
  private readonly mac: Mac;

  constructor(joinSecret: Uint8Array, hmac?: HmacSha256) {
    this.joinSecret = joinSecret;
    this.mac = hmac ? runtimeMac(hmac) : webCryptoMac;
  }

  /** A ticket for `key`, good for `lifetimeSeconds` (at most 8 hours); null when this bridge makes none. */
  async issue(key: KeyRecord, now: number, lifetimeSeconds: number): Promise<BridgeTicketGrant | null> {
    const keys = await this.hmacKeys();
    const lifetimeMs = Math.min(lifetimeSeconds * 1000, BRIDGE_TICKET_MAX_LIFETIME_MS);
    if (!keys || !(lifetimeMs > 0)) return null;
    const claims = { v: 1, k: key.id, m: key.md5Key, t: key.kind, e: now + lifetimeMs, n: toBase64Url(randomBytes(12)) };
    const payload = utf8Encode(JSON.stringify(claims));
    const [tag, secret] = await Promise.all([this.sign(keys.ticket, payload), this.sign(keys.secret, payload)]);
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
    if (!constantTimeEqual(await this.sign(keys.ticket, payload), tag)) return null;
    // Authentic from here on: the bridge wrote this JSON itself.
    const c = JSON.parse(utf8Decode(payload)) as { v: number; k: string; m: string; t: PeerKind; e: number };
    if (c.v !== 1) return null;
    const claims = { keyId: c.k, md5Key: c.m, kind: c.t, expiresAt: c.e, secretKey: await this.mac.key(await this.sign(keys.secret, payload)) };
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
    return constantTimeEqual(await this.sign(claims.secretKey, bridgeTicketMessage(testString)), mac);
  }

  private hmacKeys(): Promise<HmacKeys | null> {
    this.keys ??= deriveKeys(this.joinSecret, this.mac);
    return this.keys;
  }

  private async sign(key: unknown, data: Uint8Array): Promise<Uint8Array> {
    return this.mac.sign(key, data);
  }
}

/** K_t and K_s: HKDF-SHA256 of the join secret (WebCrypto, once per relay). */
async function deriveKeys(joinSecret: Uint8Array, mac: Mac): Promise<HmacKeys | null> {
  if (joinSecret.length < MIN_SECRET_BYTES) return null;
  const base = await crypto.subtle.importKey('raw', bytes(joinSecret), 'HKDF', false, ['deriveBits']);
  const derive = async (info: string) =>
    mac.key(
      new Uint8Array(await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: bytes(utf8Encode(info)) }, base, 256)),
    );
  const [ticket, secret] = await Promise.all([derive(BST1_LABELS.ticketKey), derive(BST1_LABELS.secretKey)]);
  return { ticket, secret };
}

/** The same bytes in an ArrayBuffer-backed array (what WebCrypto's typings ask for). */
function bytes(data: Uint8Array): Uint8Array<ArrayBuffer> {
  return data.buffer instanceof ArrayBuffer ? (data as Uint8Array<ArrayBuffer>) : new Uint8Array(data);
}
