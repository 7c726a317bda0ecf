/**
 * The agent's outbound link to a bridge (docs/bridge-protocol.md §2): one WebSocket, kept up with
 * jittered exponential backoff and heartbeats. The agent identifies as a server, enrolls its host key
 * once with a join token, signs in with that key, tells the bridge which user keys it accepts, and
 * serves the clients the bridge announces through RelayedClients.
 */
import { createHash, createPublicKey, sign } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { hostKeyFromPem, type ChannelVersion, type HostKey as ChannelHostKey } from '@hostadm/shared/crypto/index.ts';
import { isChallengeShaped, signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { backoffDelay } from '@hostadm/shared/net/backoff.ts';
import { Heartbeat } from '@hostadm/shared/net/heartbeat.ts';
import { sweepMessage } from '@hostadm/shared/node/read-sweep.ts';
import { bridgeRequestOf, greetingChallengeOf } from '@hostadm/shared/protocol/bridge-requests.ts';
import { isReply, parseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { RelaySenders } from '@hostadm/shared/protocol/relay-sender.ts';
import type { Pipeline } from '../server/pipeline.ts';
import { RelayedClients } from './relayed-clients.ts';

export interface BridgeLinkOptions {
  url: string;
  joinToken?: string;
  nickname?: string;
  pipeline: Pipeline;
  dataDir: string;
  /** Backoff bounds for reconnecting. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Channel versions beyond hsc1 answered to relayed clients (default every one; tests pose as an older agent). */
  channelVersions?: readonly ChannelVersion[];
}

/**
 * The link's states, in order: connecting → identifying (the bridge asks who we are) → enrolling
 * (once, with a join token) → signing-in (asked for a test string; skipped when the bridge's greeting
 * gave one) → proving (the signature sent) → ready (relaying; the bridge asks for the key list) →
 * connecting again after a drop; stopped is final.
 * A reply is taken only in the state that sent its request, and only with that request's id.
 */
export type LinkState = 'connecting' | 'identifying' | 'enrolling' | 'signing-in' | 'proving' | 'ready' | 'stopped';

/** The id of the one request each waiting state has in flight (the wire's ids, fixed since the first release). */
const REQUEST_ID = { enrolling: 'agent-enroll', 'signing-in': 'agent-auth-1', proving: 'agent-auth-2' } as const;
type WaitingState = keyof typeof REQUEST_ID;

const isWaiting = (state: LinkState): state is WaitingState => state in REQUEST_ID;

const HEARTBEAT_MS = 20_000;
/** A greeting's test string is used only this long after it came (the bridge keeps it 30 s). */
const GREETING_USE_MS = 20_000;

/** The wait before reconnect attempt `attempt` (0-based): at once, then jittered exponential backoff (shared/src/net/backoff.ts). */
export function reconnectDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  return backoffDelay(attempt, { initialMs: minMs, maxMs }, random);
}

export class BridgeLink {
  private readonly options: BridgeLinkOptions;
  private readonly clients: RelayedClients;
  private ws: WebSocket | null = null;
  private state: LinkState = 'connecting';
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: Heartbeat | null = null;
  private channelHostKey: Promise<ChannelHostKey> | null = null;
  private stopKeyWatch: (() => void) | null = null;
  private readyWaiters: Array<() => void> = [];
  /** The test string of this connection's greeting (docs/bridge-protocol.md §2.3) and when it came; used once. */
  private greeting: { testString: string; at: number } | null = null;
  /** The host key's md5_key, named beside a proof over a greeting's test string (computed once). */
  private hostMd5: string | null = null;
  /** The sender ids of binary frames (onBinaryFrame). */
  private readonly senders = new RelaySenders();

  constructor(options: BridgeLinkOptions) {
    this.options = options;
    const { hostKey } = options.pipeline.services;
    this.clients = new RelayedClients({
      pipeline: options.pipeline,
      hostKey: () => (this.channelHostKey ??= hostKeyFromPem(hostKey.privatePem, hostKey.publicRaw)),
      send: (clientId, body) => this.sendRaw(`${clientId}\n${body}`),
      sendBinary: (frame, release) => this.sendRaw(frame, release),
      ...(options.channelVersions ? { channelVersions: options.channelVersions } : {}),
    });
  }

  get status(): LinkState {
    return this.state;
  }

  /** Resolves once signed in to the bridge (tests, `hostadm up`). */
  ready(): Promise<void> {
    if (this.state === 'ready') return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  start(): void {
    const { keys } = this.options.pipeline.services;
    const stopListening = keys.onChange(() => this.announceKeys());
    // `hostadm agent keys authorize` writes from another process; the bridge must hear of it too.
    const stopWatching = keys.watchOtherWriters(2000);
    this.stopKeyWatch = () => {
      stopListening();
      stopWatching();
    };
    this.connect();
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    this.stopKeyWatch?.();
    if (this.timer) clearTimeout(this.timer);
    this.heartbeat?.stop();
    this.clients.dropAll();
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'agent stopping');
        setTimeout(() => {
          ws.terminate();
          resolve();
        }, 2000).unref();
      });
    }
  }

  private get log() {
    return this.options.pipeline.services.logger;
  }

  private connect(): void {
    if (this.state === 'stopped') return;
    this.state = 'connecting';
    // Accept the bridge's base URL or its relay URL (`ws://bridge:port` or `ws://bridge:port/relay`);
    // the agent lives in its own host room, named by its host key (docs/bridge-protocol.md §2.10).
    const base = new URL(this.options.url);
    if (!base.pathname.endsWith('/relay')) base.pathname = `${base.pathname.replace(/\/$/, '')}/relay`;
    base.pathname += `/host/${this.options.pipeline.services.hostKey.fingerprint.replace(/^SHA256:/, '')}`;
    const url = base.toString();
    const ws = new WebSocket(url, { maxPayload: LIMITS.maxRelayFrameBytes, handshakeTimeout: 10_000 });
    this.ws = ws;
    this.greeting = null;
    ws.on('open', () => {
      this.state = 'identifying';
      this.heartbeat = new Heartbeat(ws, HEARTBEAT_MS);
      this.log.info({ bridge: this.options.url }, 'connected to bridge');
    });
    ws.on('pong', () => this.heartbeat?.seen());
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      this.heartbeat?.seen();
      sweepMessage(data);
      if (isBinary) {
        // Only relay frames come binary (hsc2 sealed frames, hsc3 records): opened from the bytes, never decoded as text.
        if (this.state === 'ready') this.onBinaryFrame(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
        return;
      }
      const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString('utf8');
      void this.onFrame(text).catch((err: unknown) => this.log.error({ err }, 'bridge frame failed'));
    });
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return; // an old socket, already replaced
      this.heartbeat?.stop();
      this.clients.dropAll();
      this.ws = null;
      if (this.state === 'stopped') return;
      this.state = 'connecting';
      this.log.warn({ code, reason: reason.toString() }, 'bridge connection closed; reconnecting');
      this.scheduleReconnect();
    });
    ws.on('error', (err) => this.log.warn({ err: err.message }, 'bridge connection error'));
  }

  /**
   * The first retry comes at once (0–250 ms: a bridge that restarted is usually back by then), the next
   * ones with jittered exponential backoff capped at 10 s, so an agent is never long away from a bridge
   * that came back; the jitter spreads many agents' retries.
   */
  private scheduleReconnect(): void {
    const min = this.options.minDelayMs ?? 500;
    const max = this.options.maxDelayMs ?? 10_000;
    this.timer = setTimeout(() => this.connect(), reconnectDelay(this.attempt++, min, max));
    this.timer.unref();
  }

  /** `<client id>\n<hsc2 or hsc3 body>`; a frame without a valid sender id (relay-sender.ts) is ignored. */
  private onBinaryFrame(frame: Buffer): void {
    const newline = frame.indexOf(0x0a);
    const clientId = this.senders.senderOf(frame, newline);
    if (clientId === null) return;
    void this.clients.handleBinary(clientId, frame.subarray(newline + 1)).catch((err: unknown) => this.log.error({ err }, 'bridge frame failed'));
  }

  /**
   * `release` (a sealed frame's buffer back to its pool) runs in `ws`'s send callback, once the socket
   * has written the frame (or failed to), however `ws` got there; at once when the frame is not sent.
   */
  private sendRaw(text: string | Uint8Array, release?: () => void): void {
    const ws = this.ws;
    if (ws?.readyState !== WebSocket.OPEN) return release?.();
    // A bridge that stops reading would make the agent buffer every reply: drop the link and redial.
    if (ws.bufferedAmount > this.options.pipeline.services.config.maxSendBufferBytes) {
      this.log.warn({ bridge: this.options.url, buffered: ws.bufferedAmount }, 'the bridge is not reading; reconnecting');
      ws.terminate();
      return release?.();
    }
    if (release) ws.send(text, () => release());
    else ws.send(text);
  }

  private send(envelope: WireEnvelope): void {
    this.sendRaw(JSON.stringify(envelope));
  }

  private async onFrame(text: string): Promise<void> {
    if (!text.startsWith('{')) {
      const newline = text.indexOf('\n');
      if (newline <= 0 || this.state !== 'ready') return;
      await this.clients.handle(text.slice(0, newline), text.slice(newline + 1));
      return;
    }
    const env = parseEnvelope(text);
    if (!env) return;
    if (isReply(env)) return this.onReply(env);
    if (env.namespace === 'events' && env.name === 'event') {
      // The greeting comes before identify: a test string for stage 2, so no stage 1 is asked for.
      const testString = greetingChallengeOf(env);
      if (testString === null) return this.onBridgeEvent(env.args);
      if (this.state === 'identifying') this.greeting = { testString, at: Date.now() };
      return;
    }
    const request = bridgeRequestOf(env);
    if (request === 'identify' && this.state === 'identifying') {
      const { services } = this.options.pipeline;
      this.send({
        id: env.id,
        name: 'response',
        namespace: 'rpc',
        args: {
          type: 'server',
          hostname: await services.platform.hostname(),
          host_key: services.hostKey.publicRaw,
          host_key_fingerprint: services.hostKey.fingerprint,
        },
      });
      this.afterIdentify();
    } else if (request === 'list-keys' && this.state === 'ready') {
      this.send({ id: env.id, name: 'response', namespace: 'rpc', args: this.keyList() });
    }
    // Anything else the bridge might send is not a request the agent serves on this link.
  }

  private afterIdentify(): void {
    if (this.state !== 'identifying') return;
    if (this.options.joinToken && !this.enrolled()) {
      const spkiPem = this.hostKeySpkiPem();
      this.request('enrolling', 'bridge_enroll', {
        token: this.options.joinToken,
        pub_key: Buffer.from(spkiPem).toString('base64'),
        nickname: this.options.nickname ?? '',
      });
      return;
    }
    this.signIn();
  }

  /** Stage 2 over the greeting's test string when there is a fresh one (once), else stage 1 first. */
  private signIn(): void {
    const greeting = this.greeting;
    this.greeting = null;
    if (greeting && Date.now() - greeting.at < GREETING_USE_MS) this.proveKey({ test_string: greeting.testString }, true);
    else this.request('signing-in', 'auth_ssl', '');
  }

  /** Enters a waiting state and sends the one request it waits for. */
  private request(state: WaitingState, name: string, args: unknown): void {
    this.state = state;
    this.send({ id: REQUEST_ID[state], name, namespace: 'rpc', args });
  }

  /** A reply: taken only when it answers the request of the state the link is in. */
  private onReply(env: WireEnvelope): void {
    const state = this.state;
    if (!isWaiting(state) || env.id !== REQUEST_ID[state]) {
      if (env.name === 'error') this.log.warn({ state, id: env.id, error: env.args }, 'the bridge refused a request of the agent');
      return;
    }
    if (env.name === 'error' && state === 'enrolling' && errorCode(env.args) === 409) {
      // The bridge knows this host key already: enrolled before under another address of the same
      // bridge (a new port, a lost enrollment file). Signing in settles it: a revoked key is refused there.
      this.log.info({ bridge: this.options.url, error: env.args }, 'the bridge already knows this host key; signing in');
      this.signIn();
      return;
    }
    if (env.name === 'error') {
      this.log.error({ state, error: env.args }, 'the bridge refused the agent');
      this.ws?.close(1000, 'sign-in refused');
      return;
    }
    switch (state) {
      case 'enrolling':
        this.recordEnrollment(env.args);
        this.signIn();
        return;
      case 'signing-in':
        this.proveKey(env.args);
        return;
      case 'proving':
        if (this.options.joinToken && !this.enrolled()) this.recordEnrollment(null);
        this.state = 'ready';
        this.attempt = 0;
        this.log.info({ bridge: this.options.url }, 'signed in to bridge');
        for (const resolve of this.readyWaiters.splice(0)) resolve();
        return;
    }
  }

  /** `greeted`: the test string is the greeting's, pinned to no key: the proof names the host key's md5_key. */
  private proveKey(args: unknown, greeted = false): void {
    const testString = typeof args === 'object' && args !== null ? (args as { test_string?: unknown }).test_string : undefined;
    // The host key also signs channel handshakes: it signs only label ‖ a test string of the shape
    // bridges issue, never bytes the bridge chose freely (docs/protocol.md "Signatures").
    if (typeof testString !== 'string' || !isChallengeShaped('bridge-signin', testString)) {
      this.log.error({ bridge: this.options.url }, 'the bridge sent a sign-in test string that is not 32 letters and digits; refusing to sign it');
      this.ws?.close(1008, 'malformed sign-in challenge');
      return;
    }
    const message = signedMessage('bridge-signin', testString);
    const signature = sign(null, Buffer.from(message), this.options.pipeline.services.hostKey.privateKey).toString('base64');
    this.request('proving', 'auth_ssl', greeted ? { signature, md5_key: this.hostKeyMd5() } : { signature });
  }

  private onBridgeEvent(args: unknown): void {
    const event = args as { name?: unknown; args?: { available_connections?: unknown; dropped?: unknown } };
    if (event.name !== 'bridge' || !event.args) return;
    if (Array.isArray(event.args.available_connections)) {
      this.clients.retainOnly(new Set(event.args.available_connections.filter((x): x is string => typeof x === 'string')));
    }
    if (event.args.dropped) this.log.warn({ dropped: event.args.dropped }, 'the bridge dropped a frame');
  }

  /** base64(MD5(SPKI PEM)) of the host key: the md5_key the bridge registered it under (docs/bridge-protocol.md §1). */
  private hostKeyMd5(): string {
    this.hostMd5 ??= createHash('md5').update(this.hostKeySpkiPem()).digest('base64');
    return this.hostMd5;
  }

  private hostKeySpkiPem(): string {
    return createPublicKey(this.options.pipeline.services.hostKey.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  }

  /** A key was registered or revoked here: the bridge re-matches clients. */
  private announceKeys(): void {
    if (this.state !== 'ready') return;
    this.send({ id: '', name: 'bridge_keys', namespace: 'rpc', args: this.keyList() });
  }

  /**
   * The keys this host accepts (registered and authorized on the host), and whether a client whose key
   * it does not know yet may open a channel to sign in with a password (docs/bridge-protocol.md §2.4).
   */
  private keyList(): { md5_keys: string[]; password_signin: boolean } {
    const { keys, config } = this.options.pipeline.services;
    return { md5_keys: keys.bridgeChecksums(), password_signin: config.allowPasswordAuth };
  }

  /** `registered` is the bridge's enrollment reply, or null when the bridge had the key already. */
  private recordEnrollment(registered: unknown): void {
    writeFileSync(this.enrollmentFile(), JSON.stringify({ url: this.options.url, registered }), { mode: 0o600 });
  }

  private enrollmentFile(): string {
    return join(this.options.dataDir, 'bridge-enrollment.json');
  }

  private enrolled(): boolean {
    const file = this.enrollmentFile();
    if (!existsSync(file)) return false;
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { url?: string }).url === this.options.url;
    } catch {
      return false;
    }
  }
}

function errorCode(args: unknown): unknown {
  return typeof args === 'object' && args !== null ? (args as { code?: unknown }).code : undefined;
}
