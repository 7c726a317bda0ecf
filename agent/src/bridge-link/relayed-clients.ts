/**
 * Clients that reach this agent through a bridge (docs/bridge-protocol.md §3). Each gets its own hsc1
 * channel and its own pipeline connection, so it is authorized, audited and served exactly like a
 * direct client. Nothing but `identify`, the channel's C1 and a resumption's R1 (relayed-resume.ts) is
 * accepted in plain.
 */
import {
  answerClientHandshake,
  ChannelError,
  channelClosedNotice,
  ChannelSender,
  HandshakeError,
  openBinaryBody,
  TICKET_MESSAGE_ID,
  utf8Encode,
  type ChannelVersion,
  type HostKey,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { errorEnvelope, readEnvelope, responseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { badRequest, HostadmError, toHostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { Pipeline } from '../server/pipeline.ts';
import { startKeySession } from '../server/auth-ops.ts';
import { inFlightRefusal } from '../server/in-flight.ts';
import { parsePublicKey } from '../server/keys.ts';
import { sealableText, type C2Outcome, type PendingProof, type RelayedClient } from './relayed-client.ts';
import { RelayedTickets, type TicketSeed } from './relayed-resume.ts';

export interface RelayedClientsOptions {
  pipeline: Pipeline;
  hostKey: () => Promise<HostKey>;
  /** Sends `<clientId>\n<body>` through the bridge. */
  send(clientId: string, body: string): void;
  /**
   * Sends a binary relay frame (its first line already in `frame`), then calls `release` once the
   * socket is done with it (written, or never to be: ChannelSenderOutput.releasesFrames).
   */
  sendBinary(frame: Uint8Array, release?: () => void): void;
  /** Most relayed clients at once (each holds a channel and maybe a session). */
  maxClients?: number;
  /** Channel versions beyond hsc1 answered (default every one this build speaks). */
  channelVersions?: readonly ChannelVersion[];
}

const C2_WINDOW_MS = 30_000;

export class RelayedClients {
  private readonly clients = new Map<string, RelayedClient>();
  private readonly options: RelayedClientsOptions;
  private readonly tickets: RelayedTickets;

  constructor(options: RelayedClientsOptions) {
    this.options = options;
    this.tickets = new RelayedTickets(options.pipeline.services.keys);
  }

  get size(): number {
    return this.clients.size;
  }

  /** The bridge no longer announces these clients: forget their channels and sessions. */
  retainOnly(announced: ReadonlySet<string>): void {
    for (const id of [...this.clients.keys()]) if (!announced.has(id)) this.drop(id);
  }

  dropAll(): void {
    for (const id of [...this.clients.keys()]) this.drop(id);
  }

  async handle(clientId: string, body: string): Promise<void> {
    const client = this.clients.get(clientId);
    if (body.startsWith('hsc1.')) {
      // No channel (the agent restarted, or C1 never came): say so, or the client waits for nothing.
      if (!client?.channel) {
        this.options.send(clientId, channelClosedNotice('unknown-channel'));
        return;
      }
      await this.handleSealed(client, body);
      return;
    }
    await this.handlePlain(clientId, body);
  }

  /** A binary relay frame: an hsc2 sealed frame or an hsc3 record (`body` is a view of the received buffer). */
  async handleBinary(clientId: string, body: Uint8Array): Promise<void> {
    const client = this.clients.get(clientId);
    if (!client?.channel) {
      this.options.send(clientId, channelClosedNotice('unknown-channel'));
      return;
    }
    await this.handleSealed(client, body);
  }

  private async handlePlain(clientId: string, body: string): Promise<void> {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return; // not ours to answer: plain frames are only identify and C1
    }
    const request = readEnvelope(value);
    const id = request?.id ?? '';
    const reply = (payload: unknown) => this.options.send(clientId, JSON.stringify(payload));
    if (request?.namespace === 'rpc' && request.name === 'identify') {
      reply(await this.options.pipeline.handle(this.connectionFor(clientId).connection, value));
      return;
    }
    if (request?.namespace !== 'rpc' || (request.name !== 'auth_ssl' && request.name !== 'auth_resume')) {
      reply(errorEnvelope(id, 'rpc', { code: 401, message: 'Unauthorized' }));
      return;
    }
    try {
      const answer = request.name === 'auth_ssl' ? this.answerC1(clientId, request.args) : this.answerR1(clientId, request.args);
      reply(responseEnvelope(id, 'rpc', await answer));
    } catch (cause) {
      const err = toHostadmError(cause);
      if (request.name === 'auth_resume') this.auditRefusal(clientId, 'auth_resume', err.status, err.message);
      reply(errorEnvelope(id, 'rpc', err.toArgs()));
    }
  }

  /** R1: a resumption ticket instead of C1 (relayed-resume.ts); its channel then waits for RC. */
  private async answerR1(clientId: string, args: unknown): Promise<unknown> {
    const { clock } = this.options.pipeline.services;
    this.checkCapacity(clientId);
    const resumed = await this.tickets.answer(args, await this.options.hostKey(), clock.now());
    this.drop(clientId);
    const client = this.connectionFor(clientId, resumed.seed.md5Key);
    this.attach(client, resumed.channel);
    client.pending = {
      name: 'auth_resume',
      verify: async (rcArgs) => resumed.verifyRc(rcArgs),
      complete: (c) => this.signInWithTicket(c, resumed.seed, 'resumed'),
      deadline: clock.now() + C2_WINDOW_MS,
    };
    return resumed.raArgs;
  }

  /** A key session for the seed's user (re-checking that the user may sign in), preceded by a fresh ticket. */
  private async signInWithTicket(client: RelayedClient, seed: TicketSeed, how: 'handshake' | 'resumed'): Promise<unknown> {
    const { services } = this.options.pipeline;
    const ctx = { services, connection: client.connection, session: null, audit: { detail: '' } };
    const reply = await startKeySession(seed.user, seed.md5Key, ctx, how);
    const ticket = this.tickets.issue(seed, services.clock.now());
    // `pipelining`: this agent serves what is sealed after RC only once RC has signed the channel in (serve).
    if (ticket) this.sendSealed(client, responseEnvelope(TICKET_MESSAGE_ID, 'rpc', { ...ticket, pipelining: true }));
    return reply;
  }

  private checkCapacity(clientId: string): void {
    if (!this.clients.has(clientId) && this.clients.size >= (this.options.maxClients ?? 1024)) {
      throw new HostadmError('UNAVAILABLE', 'too many clients through the bridge; try again later');
    }
  }

  private auditRefusal(clientId: string, name: string, code: number, detail = ''): void {
    const address = this.clients.get(clientId)?.connection.address ?? `bridge:${clientId}`;
    this.options.pipeline.services.audit.record({ user: '', address, transport: 'bridge', namespace: 'rpc', name, action: '', code, detail });
  }

  private async answerC1(clientId: string, args: unknown): Promise<unknown> {
    const { md5Key, spkiPem, outcome } = this.c1Key(args);
    this.checkCapacity(clientId);
    const hostKey = await this.options.hostKey();
    let handshake: Awaited<ReturnType<typeof answerClientHandshake>>;
    try {
      const versions = this.options.channelVersions;
      handshake = await answerClientHandshake({ c1Args: args, clientSpkiPem: spkiPem, hostKey, ...(versions ? { versions } : {}) });
    } catch (err) {
      if (err instanceof HandshakeError && err.reason === 'downgrade') {
        throw new HostadmError('BAD_REQUEST', 'the unprotected bridge channel is refused; use the hsc1 channel');
      }
      if (err instanceof HandshakeError) throw new HostadmError('BAD_REQUEST', `auth_ssl: ${err.message}`);
      throw err;
    }
    // A new handshake replaces whatever this client id had (its old channel and session end).
    this.drop(clientId);
    const client = this.connectionFor(clientId, md5Key);
    this.attach(client, handshake.channel);
    const now = this.options.pipeline.services.clock.now();
    // A client that keeps tickets asks for one in C1; the channel version it negotiated goes into it.
    const wantsTicket = (args as { want_ticket?: unknown }).want_ticket === true;
    const seed = wantsTicket ? { hostKey: hostKey.publicRaw, channel: handshake.version, secret: handshake.resumptionSecret, provenAt: now } : null;
    if (!seed) handshake.resumptionSecret.fill(0);
    client.pending = {
      name: 'auth_ssl',
      verify: handshake.verifyC2,
      complete: (c) => this.afterKeyProof(c, md5Key, outcome, seed),
      deadline: now + C2_WINDOW_MS,
    };
    return handshake.a1Args;
  }

  /**
   * The client key C1 names: registered here, or (when C1 carries its public key) authorized on the
   * host, or unknown but welcome to sign in with a password inside the channel when passwords are on.
   * Anything else is the spec's 401, before any handshake work.
   */
  private c1Key(args: unknown): { md5Key: string; spkiPem: string; outcome: C2Outcome } {
    const field = (name: string) => (args && typeof args === 'object' && name in args ? (args as Record<string, unknown>)[name] : undefined);
    const md5Key = typeof field('md5_key') === 'string' ? (field('md5_key') as string) : '';
    const { keys, config } = this.options.pipeline.services;
    const registered = md5Key ? keys.findByMd5(md5Key) : null;
    if (registered) {
      if (registered.algorithm !== 'rsa') throw new HostadmError('UNAUTHORIZED');
      return { md5Key, spkiPem: registered.spkiPem, outcome: { kind: 'registered', user: registered.user } };
    }
    const pubKey = field('pub_key');
    const authorizedUser = md5Key ? keys.authorizedUser(md5Key) : null;
    if (typeof pubKey !== 'string' || (authorizedUser === null && !config.allowPasswordAuth)) throw new HostadmError('UNAUTHORIZED');
    const parsed = parsePublicKey(pubKey);
    if (parsed.md5Key !== md5Key) throw badRequest('pub_key: its md5_key is not the one C1 names', [{ field: 'pub_key', message: 'does not match md5_key' }]);
    if (parsed.algorithm !== 'rsa') throw badRequest('pub_key: the bridge channel needs an RSA key', [{ field: 'pub_key', message: 'not RSA' }]);
    const outcome: C2Outcome = authorizedUser !== null ? { kind: 'authorized', pubKey, parsed } : { kind: 'password' };
    return { md5Key, spkiPem: parsed.spkiPem, outcome };
  }

  private async handleSealed(client: RelayedClient, frame: string | Uint8Array): Promise<void> {
    const channel = client.channel as SecureChannel;
    let values: unknown[];
    try {
      // Binary frames on node:crypto are opened and served inline (before a later frame is looked at);
      // a text frame on an hsc2/hsc3 channel (or binary on hsc1) kills it.
      const opened = typeof frame === 'string' ? channel.open(frame).then((plain) => [plain]) : openBinaryBody(channel, frame);
      values = (Array.isArray(opened) ? opened : await opened).map((plain) => JSON.parse(plain) as unknown);
    } catch (err) {
      // Replay, gap, tampering or garbage: this channel is dead, and so is its session.
      const reason = err instanceof ChannelError ? err.reason : 'malformed';
      this.options.pipeline.services.logger.warn({ client: client.clientId, reason }, 'bridge channel broken; dropping it');
      this.drop(client.clientId);
      this.options.send(client.clientId, channelClosedNotice(reason));
      return;
    }
    // A record's envelopes are served as that many frames would be: each started in order, none awaiting another.
    await Promise.all(values.map((value) => this.serve(client, value)));
  }

  private async serve(client: RelayedClient, value: unknown): Promise<void> {
    // A record carries up to 1024 requests for one AEAD call: without this bound one client could keep
    // any number of them running at once, where a direct connection gets 429 past the limit.
    const limit = this.options.pipeline.services.config.maxInFlightPerConnection;
    if (client.inFlight >= limit) {
      this.sendSealed(client, inFlightRefusal(value, limit));
      return;
    }
    client.inFlight++;
    try {
      if (client.pending) {
        const proving = this.verifyProof(client, readEnvelope(value));
        client.proving = proving;
        if ((await proving) && client.proving === proving) client.proving = null;
        return;
      }
      // Sent in the proof's flight: served in order once the proof is answered (verifyProof may await
      // the key check and the session), never beside it; after a refused proof, never (the channel is
      // being dropped: its refusal is the answer to the whole flight).
      if (client.proving && !(await client.proving)) return;
      // The pipeline reads the request itself, answering a malformed one with its field errors.
      const reply = await this.options.pipeline.handle(client.connection, value);
      this.sendSealed(client, reply);
    } finally {
      client.inFlight--;
    }
  }

  /** Judges the proof and answers it; true when it verified (the channel goes on, signed in unless `complete` refused). */
  private async verifyProof(client: RelayedClient, envelope: WireEnvelope | null): Promise<boolean> {
    const id = envelope?.id ?? '';
    const pending = client.pending as PendingProof;
    client.pending = null; // the proof is accepted once, right or wrong
    const { services } = this.options.pipeline;
    let refusal: { code: 400 | 401; message: string } = { code: 401, message: 'Unauthorized' };
    let ok = false;
    try {
      ok =
        envelope !== null &&
        envelope.namespace === 'rpc' &&
        envelope.name === pending.name &&
        services.clock.now() <= pending.deadline &&
        (await pending.verify(envelope.args));
    } catch (err) {
      // The client offered a channel version C1 did not bring here: something on the way stripped it.
      if (!(err instanceof HandshakeError)) throw err;
      services.logger.warn({ client: client.clientId, reason: err.reason }, `bridge channel refused: ${err.message}`);
      refusal = { code: 400, message: `channel downgrade detected: ${err.message}` };
    }
    if (!ok) {
      this.auditRefusal(client.clientId, pending.name, refusal.code);
      this.sendSealed(client, errorEnvelope(id, 'rpc', refusal));
      // The key proof failed: nothing more may come over this channel once the refusal is out.
      const dropped = client.channel;
      void client.sender?.drained().then(() => {
        if (this.clients.get(client.clientId)?.channel === dropped) this.drop(client.clientId);
      });
      return false;
    }
    try {
      this.sendSealed(client, responseEnvelope(id, 'rpc', await pending.complete(client)));
    } catch (cause) {
      this.sendSealed(client, errorEnvelope(id, 'rpc', toHostadmError(cause).toArgs()));
    }
    return true;
  }

  /** The C2 reply once the key is proven: a session (`[token, seconds]`), or the invitation to sign in. */
  private async afterKeyProof(client: RelayedClient, md5Key: string, outcome: C2Outcome, seed: Omit<TicketSeed, 'md5Key' | 'user'> | null): Promise<unknown> {
    const { services } = this.options.pipeline;
    const ctx = { services, connection: client.connection, session: null, audit: { detail: '' } };
    const signIn = (user: string) => (seed ? this.signInWithTicket(client, { ...seed, md5Key, user }, 'handshake') : startKeySession(user, md5Key, ctx));
    if (outcome.kind === 'registered') return signIn(outcome.user);
    if (outcome.kind === 'authorized') {
      const user = services.keys.registerAuthorized(md5Key, outcome.pubKey, outcome.parsed);
      if (user === null) throw new HostadmError('UNAUTHORIZED'); // the authorization expired since C1
      services.audit.record({
        user,
        address: client.connection.address,
        transport: 'bridge',
        namespace: 'rpc',
        name: 'register_ssl_cert',
        action: '',
        code: 200,
        detail: `key ${md5Key} authorized on the host`,
      });
      return signIn(user);
    }
    seed?.secret.fill(0);
    // Proven but unknown here: the channel stays open, signed out; only the rpc auth family is served.
    return { signed_in: false, sign_in: ['password'], message: 'this host does not know your key yet: sign in with a password, then register the key' };
  }

  private sendSealed(client: RelayedClient, envelope: unknown): void {
    // Measured by sealableText, so never too large: the sender throws nothing here; a seal that fails drops the client.
    client.sender?.send(sealableText(envelope));
  }

  /** The channel a handshake or resumption made for `client`, and the sender that seals for it. */
  private attach(client: RelayedClient, channel: SecureChannel): void {
    client.channel = channel;
    const broken = (err: unknown) => {
      this.options.pipeline.services.logger.warn({ err, client: client.clientId }, 'sealing for a bridge client failed');
      if (this.clients.get(client.clientId)?.channel === channel) this.drop(client.clientId);
    };
    client.sender = new ChannelSender(channel, utf8Encode(`${client.clientId}\n`), {
      text: (frame) => this.options.send(client.clientId, frame),
      binary: (frame, release) => this.options.sendBinary(frame, release),
      failed: broken,
      releasesFrames: true,
    });
  }

  /**
   * A client's connection. Once its key is known the address is `bridge:<md5_key>`: the blacklist and
   * the password-check limits then follow the key across the client's reconnects (a new connection id
   * each time), not the bridge's address shared by every relayed client.
   */
  private connectionFor(clientId: string, md5Key?: string): RelayedClient {
    const existing = this.clients.get(clientId);
    if (existing) return existing;
    const client: RelayedClient = {
      clientId,
      channel: null,
      pending: null,
      proving: null,
      sender: null,
      inFlight: 0,
      connection: {
        id: `bridge:${clientId}`,
        transport: 'bridge',
        address: md5Key ? `bridge:${md5Key}` : `bridge:${clientId}`,
        token: null,
        push: (envelope) => this.sendSealed(client, envelope),
        close: () => this.drop(clientId),
      },
    };
    this.clients.set(clientId, client);
    return client;
  }

  private drop(clientId: string): void {
    const client = this.clients.get(clientId);
    if (!client) return;
    this.clients.delete(clientId);
    const { services } = this.options.pipeline;
    if (client.connection.token) services.sessions.revoke(client.connection.token);
    services.events.drop(client.connection.id);
    // What this tick queued for it (hsc3) still leaves, as it would have on hsc1 and hsc2.
    client.sender?.flush();
    client.channel?.close();
  }
}
