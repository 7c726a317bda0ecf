/**
 * Signing a bridge session in (docs/bridge-protocol.md §2.3): with a sign-in ticket this bridge gave the
 * key earlier (no RSA: an HMAC over the bridge's fresh test string, shared/src/crypto/bridge-ticket.ts),
 * else with the key, asking for a ticket for the next time. Stage 2 carries the key list too, so the
 * bridge announces at once instead of asking for it (§2.4). A ticket the bridge refuses (expired, the
 * key revoked, the bridge's secret changed) is forgotten, reported through `onTicketRefused`, and the
 * key sign-in follows on the same connection: a refused ticket never fails the session by itself.
 * When the bridge greeted the connection with a test string, the first stage 2 uses it: no stage 1,
 * one round trip instead of two (the key proof then names its md5_key, so the bridge checks one key).
 *
 * Runtime-neutral (WebCrypto only).
 */
import { bridgeTicketFrom, bridgeTicketProof, bridgeTicketUsable, type BridgeSignInTicket } from '@hostadm/shared/crypto/bridge-ticket.ts';
import type { WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { ConnectionError } from './errors.ts';
import { signChallenge, type WebCryptoClientKey } from './key-auth.ts';
import { memoryKeeper, type TicketKeeper } from './ticket-keeper.ts';

export type { BridgeSignInTicket } from '@hostadm/shared/crypto/bridge-ticket.ts';

/** Where a bridge sign-in ticket is kept between sessions (the CLI: a 0600 file beside the channel tickets). */
export type BridgeTicketStore = TicketKeeper<BridgeSignInTicket>;

/** A ticket kept in memory: later sessions of the same factory sign in without RSA. */
export const memoryBridgeTicketStore: () => BridgeTicketStore = memoryKeeper;

export interface BridgeSignInContext {
  /** Sends an `rpc` call to the bridge and resolves with its reply. */
  request(name: string, args: unknown): Promise<WireEnvelope>;
  privateKey: string | WebCryptoClientKey;
  md5: string;
  /** The bridge's `/relay` URL without a room: what a ticket is bound to on the client's side. */
  bridge: string;
  tickets: BridgeTicketStore | null;
  onTicketRefused: ((message: string) => void) | undefined;
  /** The key list, sent with stage 2 so the bridge need not ask for it (list_ssl_checksums). */
  keys: { md5_keys: string[]; reach?: string[] };
  errorText(env: WireEnvelope): string;
  refusal(env: WireEnvelope): Error | undefined;
  /** The test string of the bridge's greeting (§2.3), when it sent one: good for one stage 2. */
  greeting?: string | null;
  /** Runs once, right after the first stage 2 is sent (same tick): what goes in the sign-in's flight. */
  afterStage2?: () => void;
}

/** Where a stage 2's test string came from: the greeting (once), else a stage 1. */
type TestStrings = () => Promise<{ testString: string; greeted: boolean }>;

/** Both stages of `auth_ssl`; resolves once the bridge accepted, throws a ConnectionError when it did not. */
export async function signInToBridge(ctx: BridgeSignInContext): Promise<void> {
  let greeting = ctx.greeting ?? null;
  // The bridge takes its greeting's test string for one stage 2 (whatever its outcome): later ones ask.
  const testStrings: TestStrings = async () => {
    const testString = greeting;
    greeting = null;
    return testString !== null ? { testString, greeted: true } : { testString: await stage1(ctx), greeted: false };
  };
  const kept = ctx.tickets?.load();
  if (kept && bridgeTicketUsable(kept, ctx.bridge, ctx.md5, Date.now())) {
    const refused = await withTicket(ctx, kept, testStrings);
    if (refused === null) return;
    ctx.tickets?.save(undefined);
    ctx.onTicketRefused?.(`the bridge refused the sign-in ticket (${refused}); signing in with the key`);
  } else if (kept && kept.bridge === ctx.bridge && kept.md5Key === ctx.md5) ctx.tickets?.save(undefined);
  await withKey(ctx, testStrings);
}

/** null when the ticket signed the session in; else why the bridge refused it. */
async function withTicket(ctx: BridgeSignInContext, ticket: BridgeSignInTicket, testStrings: TestStrings): Promise<string | null> {
  const { testString } = await testStrings();
  const replying = ctx.request('auth_ssl', { ticket: ticket.ticket, mac: await bridgeTicketProof(ticket, testString), keys: ctx.keys });
  ctx.afterStage2?.();
  const reply = await replying;
  if (reply.name === 'response') return null;
  // Blocked: the key would be refused as well (and the bridge closes the connection).
  if (codeOf(reply) === 429) throw refused(ctx, reply, 'the bridge refused sign-in', { closeCode: 4401 });
  return ctx.errorText(reply);
}

async function withKey(ctx: BridgeSignInContext, testStrings: TestStrings): Promise<void> {
  const { testString, greeted } = await testStrings();
  const signature = await signChallenge(ctx.privateKey, 'bridge-signin', testString);
  // A greeting's test string is pinned to no key: the proof names its own (a bridge that greets takes it).
  const proof = greeted ? { signature, md5_key: ctx.md5 } : { signature };
  const replying = ctx.request('auth_ssl', { ...proof, keys: ctx.keys, ...(ctx.tickets ? { want_ticket: true } : {}) });
  ctx.afterStage2?.();
  let reply = await replying;
  // A bridge from before tickets and listed keys refuses the fields (400) before it looks at the test
  // string: the same signature again without them (that bridge then asks for the key list).
  if (reply.name !== 'response' && codeOf(reply) === 400) reply = await ctx.request('auth_ssl', proof);
  if (reply.name !== 'response') {
    throw refused(ctx, reply, `the bridge refused the key ${ctx.md5}`, {
      closeCode: 4401,
      hint: ' (enroll it once with a client join token: --join-file FILE)',
    });
  }
  const ticket = bridgeTicketFrom(reply.args, { md5Key: ctx.md5, bridge: ctx.bridge, now: Date.now() });
  if (ticket) ctx.tickets?.save(ticket);
}

/** Stage 1 pinned to this key (the bridge then checks that key alone); the test string. */
async function stage1(ctx: BridgeSignInContext): Promise<string> {
  const reply = await ctx.request('auth_ssl', { action: 'auth_ssl', md5_key: ctx.md5 });
  const args = reply.args as { test_string?: unknown } | null;
  if (reply.name !== 'response' || typeof args !== 'object' || args === null || typeof args.test_string !== 'string') {
    throw refused(ctx, reply, 'the bridge refused sign-in');
  }
  return args.test_string;
}

function codeOf(env: WireEnvelope): number | undefined {
  const code = (env.args as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function refused(ctx: BridgeSignInContext, reply: WireEnvelope, what: string, how: { closeCode?: number; hint?: string } = {}): ConnectionError {
  const cause = ctx.refusal(reply);
  return new ConnectionError(`${what}: ${ctx.errorText(reply)}${how.hint ?? ''}`, {
    ...(how.closeCode !== undefined ? { closeCode: how.closeCode } : {}),
    ...(cause ? { cause } : {}),
  });
}
