/**
 * @module The bridge's own API: frames that start with `{` (docs/bridge-protocol.md §2.1–§2.4).
 *
 * Calls a peer makes:  `rpc/identify`, `rpc/bridge_enroll`, `rpc/auth_ssl`, `rpc/bridge_keys`.
 * Replies the bridge expects to its own requests (matched by id):
 *   `bridge_request_ident` (identify → kind, hostname) and `bridge_request_list_keys` (md5_keys).
 * Every failed enrollment or sign-in is a 401 that counts toward the address's blacklist, a refused
 * sign-in ticket (signin-tickets.ts) included.
 */
import { z } from 'zod';
import { authSslArgs } from '@hostadm/shared/api/rpc.ts';
import { BRIDGE_IDENT_ID, BRIDGE_LIST_KEYS_ID, BRIDGE_LIST_KEYS_REQUEST } from '@hostadm/shared/protocol/bridge-requests.ts';
import { errorEnvelope, parseEnvelope, responseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { jsonNestingExceeds } from '@hostadm/shared/protocol/json-depth.ts';
import { badRequest, HostadmError, unauthorized } from '@hostadm/shared/protocol/errors.ts';
import { fieldErrors, summarizeFieldErrors } from '@hostadm/shared/protocol/field-errors.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { CLOSE, type RelayConfig } from './config.ts';
import { verifyJoinToken } from './join-token.ts';
import type { RelayMetrics } from './metrics.ts';
import { issueChallenge, type Peer } from './peer.ts';
import type { Clock, HmacSha256, KeyCrypto, KeyRecord, KeyStore, PeerKind, RelayLogger } from './ports.ts';
import { hostKeyFingerprint, newKeyId, randomAlnum } from './random.ts';
import { roomRefusal } from './rooms.ts';
import { SignInTickets } from './signin-tickets.ts';

/** What the handlers need from the relay. */
export interface ApiHost {
  readonly config: RelayConfig;
  readonly metrics: RelayMetrics;
  readonly store: KeyStore;
  readonly crypto: KeyCrypto;
  readonly clock: Clock;
  readonly logger: RelayLogger;
  readonly joinSecret: Uint8Array;
  readonly hmac: HmacSha256 | undefined;
  readonly hostname: string;
  send(peer: Peer, envelope: unknown): void;
  identified(peer: Peer, kind: PeerKind, hostname: string): void;
  signedIn(peer: Peer, key: KeyRecord, fingerprint: string | null): void;
  setKeys(peer: Peer, list: KeyList): void;
  closePeer(peer: Peer, code: number, reason: string): void;
  isExempt(address: string): boolean;
}

const LIST_KEYS_REQUEST = JSON.stringify(BRIDGE_LIST_KEYS_REQUEST);

const identifyReply = z.object({
  type: z.enum(['server', 'client']).describe('server = an agent, client = a client'),
  hostname: z.string().max(255).default('').describe('Short host name'),
});

const enrollArgs = z.strictObject({
  token: z.string().min(1).max(8192).describe('The join JWT from `hostadm bridge token`'),
  pub_key: z.string().min(1).max(65536).describe('base64 of the PEM public key or X.509 certificate to register'),
  nickname: z.string().max(64).optional().describe("Name shown to matched peers (the token's nickname wins)"),
});

/** Most host names one client may ask to reach by password at once. */
const MAX_REACH = 16;

const md5List = z.object({
  md5_keys: z.array(z.string().min(1).max(64)).describe('base64 MD5 of each key the peer accepts (agent) or holds (client)'),
  password_signin: z.boolean().optional().describe('Agent: a client whose key it does not know may open a channel to sign in with a password'),
  reach: z
    .array(z.string().max(64))
    .max(MAX_REACH)
    .optional()
    .describe('Client: nicknames of hosts to reach for a password sign-in although they do not list its key'),
});

/** What a peer lists: its md5_keys and, for a first sign-in by password, the reach fields. */
export type KeyList = z.infer<typeof md5List>;

/** Stage 2 with a sign-in ticket (docs/bridge-protocol.md §2.3): the ticket and its secret's MAC over the test string. */
const ticketProofArgs = z.strictObject({
  ticket: z.string().min(1).max(1024).describe('The ticket a key sign-in to this bridge gave (`bst1.…`)'),
  mac: z.string().min(1).max(64).describe('base64 HMAC-SHA256, under the ticket\'s secret, of "hostadm-bst1 signin\\n" ‖ test_string'),
});

/** A handler's answer, and what to do once it is sent. */
interface Outcome {
  reply: unknown;
  after?: () => void;
}

const blocked = () => new HostadmError('TOO_MANY_REQUESTS', 'Too many failed sign-ins from this address; try again later');

/** A refused enrollment or sign-in: the spec's 401, counted toward the address's blacklist. */
class SignInFailure extends HostadmError {
  constructor() {
    super('UNAUTHORIZED');
  }
}

export class BridgeApi {
  private readonly host: ApiHost;
  private readonly tickets: SignInTickets;

  constructor(host: ApiHost) {
    this.host = host;
    this.tickets = new SignInTickets(host.joinSecret, host.hmac);
  }

  /**
   * Runs the peer's API calls in order, at most LIMITS.maxInFlightPerConnection waiting (then 429);
   * `settled` runs after each call (the runtime may save the peer then).
   */
  enqueue(peer: Peer, text: string, settled: (peer: Peer) => void): void {
    if (peer.pendingApi >= LIMITS.maxInFlightPerConnection) {
      this.host.metrics.apiCallsRefused++;
      const error = new HostadmError('TOO_MANY_REQUESTS', `more than ${LIMITS.maxInFlightPerConnection} bridge calls in progress on this connection`);
      this.host.send(peer, errorEnvelope('', 'rpc', error.toArgs()));
      return;
    }
    peer.pendingApi++;
    const run = (): Promise<void> =>
      this.handle(peer, text)
        .catch((err: unknown) => this.host.logger.error({ err, peer: peer.id }, 'bridge API call failed'))
        .finally(() => {
          peer.pendingApi--;
          settled(peer);
        });
    const next: Promise<void> = peer.chain ? peer.chain.then(run) : run();
    peer.chain = next;
    void next.then(() => {
      if (peer.chain === next) peer.chain = null;
    });
  }

  async handle(peer: Peer, text: string): Promise<void> {
    if (peer.closed) return;
    if (jsonNestingExceeds(text, this.host.config.maxJsonDepth)) {
      this.host.send(peer, errorEnvelope('', 'rpc', badRequest(`JSON nested deeper than ${this.host.config.maxJsonDepth} levels; refused unparsed`).toArgs()));
      if (peer.state !== 'signed-in') this.host.closePeer(peer, CLOSE.policy, 'nesting too deep');
      return;
    }
    const env = parseEnvelope(text);
    // Ids and namespaces are quoted back in replies and logs: never long.
    if (!env || env.id.length > 256 || env.namespace.length > 64) {
      this.host.send(peer, errorEnvelope('', 'rpc', badRequest('not a JSON request envelope {id, name, namespace, args}').toArgs()));
      return;
    }
    if (env.name === 'response' || env.name === 'error') return this.onReply(peer, env);
    let outcome: Outcome;
    try {
      outcome = await this.call(peer, env);
    } catch (err) {
      const error = err instanceof HostadmError ? err : new HostadmError('HOST_ERROR', undefined, { cause: err });
      if (!(err instanceof HostadmError)) this.host.logger.error({ err, peer: peer.id, name: env.name }, 'bridge API failure');
      this.host.send(peer, errorEnvelope(env.id, env.namespace, error.toArgs()));
      if (error.code === 'TOO_MANY_REQUESTS') this.host.closePeer(peer, CLOSE.policy, 'Too many failed sign-ins');
      else if (error.code === 'FORBIDDEN') this.host.closePeer(peer, CLOSE.policy, 'wrong room for this key');
      else if (error instanceof SignInFailure && (await this.failed(peer))) this.host.closePeer(peer, CLOSE.policy, 'Too many failed sign-ins');
      return;
    }
    if (outcome.reply !== undefined) this.host.send(peer, responseEnvelope(env.id, env.namespace, outcome.reply));
    outcome.after?.();
  }

  private async call(peer: Peer, env: WireEnvelope): Promise<Outcome> {
    if (env.namespace !== 'rpc') throw new HostadmError('NOT_FOUND', `the bridge serves only rpc calls (got ${clip(env.namespace)}/${clip(env.name)})`);
    switch (env.name) {
      case 'identify':
        return { reply: { type: 'bridge', hostname: this.host.hostname } };
      case 'bridge_enroll':
        return { reply: await this.enroll(peer, env.args) };
      case 'auth_ssl':
        return this.authSsl(peer, env.args);
      case 'bridge_keys': {
        if (peer.state !== 'signed-in') throw unauthorized();
        this.host.setKeys(peer, parseOrThrow(md5List, env.args, 'rpc/bridge_keys'));
        // Unsolicited updates usually carry no id: then nothing is answered.
        return { reply: env.id === '' ? undefined : { result: 'success' } };
      }
      default:
        throw new HostadmError('NOT_FOUND', `the bridge has no rpc/${clip(env.name)} (it serves identify, bridge_enroll, auth_ssl, bridge_keys)`);
    }
  }

  /** Replies to the bridge's own requests. Anything else named response/error is ignored. */
  private onReply(peer: Peer, env: WireEnvelope): void {
    if (env.id === BRIDGE_IDENT_ID) {
      if (peer.state !== 'identifying') return;
      const parsed = env.name === 'response' ? identifyReply.safeParse(env.args) : null;
      if (!parsed?.success) {
        this.host.closePeer(peer, CLOSE.policy, 'identify must answer type server or client');
        return;
      }
      this.host.identified(peer, parsed.data.type === 'server' ? 'agent' : 'client', parsed.data.hostname);
      return;
    }
    if (env.id === BRIDGE_LIST_KEYS_ID && peer.state === 'signed-in') {
      const parsed = env.name === 'response' ? md5List.safeParse(env.args) : null;
      if (env.name === 'response' && !parsed?.success) this.host.logger.warn({ peer: peer.id }, 'list_ssl_checksums reply malformed: matching nothing');
      this.host.setKeys(peer, parsed?.success ? parsed.data : { md5_keys: [] });
    }
  }

  private async enroll(peer: Peer, rawArgs: unknown): Promise<unknown> {
    const { host } = this;
    if (peer.state === 'identifying') throw badRequest("answer the bridge's identify request first");
    await this.refuseBlocked(peer);
    const args = parseOrThrow(enrollArgs, rawArgs, 'rpc/bridge_enroll');
    const now = host.clock.now();
    const claims = await verifyJoinToken(host.joinSecret, args.token, now);
    if (!claims || claims.kind !== peer.kind) return this.enrollFailed(peer, claims ? 'token for another kind' : 'token invalid or expired');
    const parsed = host.crypto.parsePublicKey(args.pub_key);
    if (peer.kind === 'agent' && parsed.algorithm !== 'ed25519') {
      throw badRequest('pub_key: an agent enrolls its Ed25519 host key', [{ field: 'pub_key', message: 'must be an Ed25519 key for an agent' }]);
    }
    const nickname = claims.nickname ?? args.nickname ?? peer.hostname;
    const outcome = await host.store.enroll(
      { jti: claims.jti, expiresAt: claims.expiresAt },
      {
        id: newKeyId(),
        md5Key: parsed.md5Key,
        spkiPem: parsed.spkiPem,
        algorithm: parsed.algorithm,
        kind: peer.kind!,
        nickname,
        createdBy: claims.createdBy,
        createdAt: now,
      },
      now,
    );
    if (!outcome.ok) {
      if (outcome.reason === 'token-used') return this.enrollFailed(peer, 'token already used');
      host.metrics.enrollmentFailures++;
      const why = {
        'key-revoked': 'this key was revoked; enroll a new key',
        'key-exists': 'this key is already registered',
        'nickname-taken': `the nickname ${JSON.stringify(clip(nickname))} belongs to another host's key; revoke that key first, or use another nickname`,
      } as const;
      throw new HostadmError('CONFLICT', why[outcome.reason]);
    }
    host.metrics.enrollments++;
    const { key } = outcome;
    host.logger.info({ keyId: key.id, kind: key.kind, nickname: key.nickname, address: peer.address }, 'key enrolled');
    return { registered: { key_id: key.id, md5_key: key.md5Key, kind: key.kind, nickname: key.nickname } };
  }

  private enrollFailed(peer: Peer, why: string): never {
    this.host.metrics.enrollmentFailures++;
    this.host.logger.info({ address: peer.address, why }, 'enrollment refused');
    throw new SignInFailure();
  }

  private async authSsl(peer: Peer, rawArgs: unknown): Promise<Outcome> {
    const { host } = this;
    if (peer.state === 'identifying') throw badRequest("answer the bridge's identify request first");
    if (peer.state === 'signed-in') throw new HostadmError('CONFLICT', 'already signed in on this connection');
    await this.refuseBlocked(peer);
    // Stage 1: `""` (any registered key of the peer's kind) or `{action:"auth_ssl", md5_key}` (that key only).
    if (rawArgs === undefined || rawArgs === null || typeof rawArgs !== 'object') return { reply: this.challenge(peer, '') };
    // hostadm's additions to stage 2 (§2.3): a ticket instead of a key proof, asking for one, the key list,
    // and beside a key proof the md5_key it is for (a greeting's test string is pinned to none).
    const { want_ticket: wantTicket, keys: listedKeys, ...rest } = rawArgs as { want_ticket?: unknown; keys?: unknown };
    const proofKey = 'signature' in rest || 'encrypted_string' in rest ? takeProofKey(rest as Record<string, unknown>) : undefined;
    const args = 'ticket' in rest ? parseOrThrow(ticketProofArgs, rest, 'rpc/auth_ssl') : parseOrThrow(authSslArgs(), rest, 'rpc/auth_ssl');
    if (typeof args === 'string') return { reply: this.challenge(peer, '') };
    if ('md5_key' in args) return { reply: this.challenge(peer, args.md5_key) };
    if (wantTicket !== undefined && typeof wantTicket !== 'boolean') throw badRequest('invalid arguments for rpc/auth_ssl: want_ticket must be true or false');
    const listed = listedKeys === undefined ? null : parseOrThrow(md5List, listedKeys, 'rpc/auth_ssl keys');

    const now = host.clock.now();
    const testString = peer.challenge;
    const fresh = testString !== null && now - peer.challengeAt <= host.config.sslWindowSeconds * 1000;
    const stagePin = peer.challengeMd5;
    peer.challenge = null;
    peer.challengeMd5 = '';
    if (!fresh) return this.signInFailed(peer, 'no test string outstanding, or it expired');
    // Stage 1 pinned one key: a proof naming another is refused, as a ticket of another key is.
    if (proofKey && stagePin && proofKey !== stagePin) return this.signInFailed(peer, 'proof names another key than the pinned one');
    const pinned = stagePin || proofKey || '';
    let match: KeyRecord | undefined;
    if ('ticket' in args) match = await this.ticketKey(peer, args, testString, pinned, now);
    else {
      const [proof, form] = 'signature' in args ? [args.signature, 'signature' as const] : [args.encrypted_string, 'original' as const];
      let candidates: KeyRecord[];
      if (pinned) {
        const key = await host.store.getByMd5(pinned);
        candidates = key && key.revokedAt === null && key.kind === peer.kind ? [key] : [];
      } else candidates = await host.store.listActive(peer.kind!);
      for (const key of candidates) {
        if (await host.crypto.verifyProof(key, 'bridge-signin', testString, proof, form)) {
          match = key;
          break;
        }
      }
      if (!match) return this.signInFailed(peer, pinned ? 'proof does not match the pinned key' : 'proof matches no registered key');
    }
    if (peer.closed) return { reply: undefined };
    const fingerprint = match.algorithm === 'ed25519' && match.kind === 'agent' ? await hostKeyFingerprint(match.spkiPem) : null;
    // A valid key in the wrong room: refused and closed, not counted as a failed sign-in.
    const wrongRoom = roomRefusal(peer.room, peer.kind!, fingerprint);
    if (wrongRoom) throw new HostadmError('FORBIDDEN', wrongRoom);
    host.signedIn(peer, match, fingerprint);
    const how = 'ticket' in args ? 'ticket' : 'key';
    if (how === 'ticket') host.metrics.signinsByTicket++;
    host.logger.info({ peer: peer.id, keyId: match.id, nickname: match.nickname, address: peer.address, by: how }, 'peer signed in');
    // A ticket is given for a key proof only: it never outlives the key's own sign-in by more than its lifetime.
    const grant = wantTicket === true && how === 'key' ? await this.tickets.issue(match, now, host.config.signinTicketSeconds) : null;
    if (grant) host.metrics.signinTicketsIssued++;
    return {
      reply: grant ? [randomAlnum(40), host.config.tokenTtlSeconds, grant] : [randomAlnum(40), host.config.tokenTtlSeconds],
      // The bridge asks for the peer's keys right after the sign-in reply, unless stage 2 listed them.
      after: () => {
        if (peer.closed) return;
        if (listed) host.setKeys(peer, listed);
        else peer.socket.send(LIST_KEYS_REQUEST);
      },
    };
  }

  /**
   * The key a sign-in ticket signs in, checked in full at every use: issued by this bridge (its tag),
   * not expired, for this kind and (when stage 1 pinned one) this key, the key still registered and
   * not revoked, and the MAC over this connection's fresh test string. Any failure is a failed sign-in.
   */
  private async ticketKey(peer: Peer, args: { ticket: string; mac: string }, testString: string, pinned: string, now: number): Promise<KeyRecord> {
    const claims = await this.tickets.open(args.ticket);
    if (!claims) return this.signInFailed(peer, 'sign-in ticket forged, damaged or from another bridge');
    if (claims.expiresAt <= now) return this.signInFailed(peer, 'sign-in ticket expired');
    if (claims.kind !== peer.kind) return this.signInFailed(peer, 'sign-in ticket of the other kind');
    if (pinned && pinned !== claims.md5Key) return this.signInFailed(peer, 'sign-in ticket of another key than the pinned one');
    const key = await this.host.store.getByMd5(claims.md5Key);
    if (!key || key.id !== claims.keyId || key.revokedAt !== null || key.kind !== peer.kind) {
      return this.signInFailed(peer, "sign-in ticket's key revoked or no longer registered");
    }
    if (!(await this.tickets.proves(claims, testString, args.mac))) return this.signInFailed(peer, 'sign-in ticket proof does not match');
    return key;
  }

  private challenge(peer: Peer, md5Key: string): { test_string: string } {
    return { test_string: issueChallenge(peer, this.host.clock.now(), md5Key) };
  }

  private signInFailed(peer: Peer, why: string): never {
    this.host.metrics.signinFailures++;
    this.host.logger.info({ address: peer.address, peer: peer.id, why }, 'sign-in refused');
    throw new SignInFailure();
  }

  private async refuseBlocked(peer: Peer): Promise<void> {
    if (this.host.isExempt(peer.address)) return;
    if (await this.host.store.isBlocked(peer.address, this.host.clock.now())) throw blocked();
  }

  /** Counts a failure toward the blacklist; true when the address is now blocked. */
  private async failed(peer: Peer): Promise<boolean> {
    const { host } = this;
    if (host.isExempt(peer.address)) return false;
    const b = host.config.blacklist;
    const now = host.clock.now();
    const nowBlocked = await host.store.recordFailure(peer.address, now, {
      failures: b.failures,
      windowMs: b.windowSeconds * 1000,
      blockMs: b.blockSeconds * 1000,
    });
    if (nowBlocked) {
      host.metrics.addressesBlocked++;
      host.logger.warn({ address: peer.address }, 'address blacklisted after repeated failed sign-ins');
    }
    return nowBlocked;
  }
}

/** Validates `args`; a 400 naming every field problem otherwise (the agent's wording). */
function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = fieldErrors(result.error);
  throw badRequest(`invalid arguments for ${what}: ${summarizeFieldErrors(errors)}`, errors);
}

/**
 * Removes `md5_key` from a key proof's arguments and returns it (a 400 when it is not an md5_key's
 * shape): the proof is then checked against that key alone, as after a pinned stage 1.
 */
function takeProofKey(proof: Record<string, unknown>): string | undefined {
  const { md5_key: md5 } = proof;
  delete proof.md5_key;
  if (md5 === undefined) return undefined;
  if (typeof md5 !== 'string' || md5.length === 0 || md5.length > 64) {
    throw badRequest('invalid arguments for rpc/auth_ssl: md5_key must be the base64 MD5 of the key that signed', [
      { field: 'md5_key', message: 'must be a string of 1 to 64 characters' },
    ]);
  }
  return md5;
}

/** A peer-supplied name as quoted back in an error message: never long. */
function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
