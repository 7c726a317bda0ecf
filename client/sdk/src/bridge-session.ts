/**
 * A client's session with a bridge (docs/bridge-protocol.md §2), without any channel: one WebSocket to
 * `/relay`, identify, enrollment with a join token (once), sign-in with the client's key, the key list
 * (and the host names to reach for a password sign-in), then the bridge's announcements. The channel to
 * a host (bridge-transport.ts) and the host listing (bridge-directory.ts) are built on it.
 *
 * States: connecting → identifying → (enrolling) → signing-in → (listing) → ready → closed. `ready`
 * means the bridge has answered the key list with its first announcement, so `peers` is what this key
 * may reach now, not a list still on its way (the list goes with stage 2; a bridge that does not take it
 * there asks for it: `listing`).
 *
 * Runtime-neutral (WebCrypto only); the WebSocket constructor is passed in or taken from globalThis.
 */
import { md5Key, spkiDerFromPem, spkiPemFromDer } from '@hostadm/shared/crypto/index.ts';
import { bridgeRequestOf, greetingOf, ROOM_HOST_DESTINATION } from '@hostadm/shared/protocol/bridge-requests.ts';
import { RelaySenders } from '@hostadm/shared/protocol/relay-sender.ts';
import { isReply, parseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { ConnectionError } from './errors.ts';
import { errorText, messageOf, refusal } from './bridge-replies.ts';
import { privateKeyOf, textToBase64, type PrivateKeyMaterial } from './key-auth.ts';
import { signInToBridge, type BridgeTicketStore } from './bridge-signin.ts';
import { relayUrl, type AnnouncedPeer } from './bridge-hosts.ts';
import { memoized } from './memo.ts';
import type { CloseInfo } from './transport.ts';
import { globalWebSocket, type WebSocketConstructor, type WebSocketLike } from './websocket.ts';

export interface BridgeSessionOptions {
  /** `ws(s)://bridge:port` (the `/relay` path is added when missing). */
  bridgeUrl: string;
  /** The room to join (docs/bridge-protocol.md §2.10): `directory`, `host/<fp>`; '' the shared room. */
  room?: string;
  /** The client's RSA key: PKCS#8 (or PKCS#1) private key PEM (or WebCrypto keys) and its certificate or SPKI public key PEM. */
  key: PrivateKeyMaterial & { certPem?: string; publicPem?: string };
  /** A client join token: enroll the key at the bridge before signing in. */
  joinToken?: string;
  /** Nickname to enroll with. */
  nickname?: string;
  /** Called once the bridge has enrolled the key with the join token (a caller may remember it). */
  onEnrolled?: () => void;
  /** Host nicknames to reach for a password sign-in although they do not know this key yet. */
  reach?: readonly string[];
  /** The hostname reported to the bridge's identify. Default `hostadm-sdk`. */
  clientHostname?: string;
  webSocket?: WebSocketConstructor;
  /** Sign-in tickets (§2.3): sign in with a kept one instead of RSA, and keep the one a key sign-in gives. */
  signInTickets?: BridgeTicketStore;
  /** The bridge refused a kept ticket (the key sign-in follows): for logs and debug output. */
  onSignInTicketRefused?: (message: string) => void;
  /**
   * A frame for this room's host, sent right behind stage 2 so that it reaches the host one round trip
   * earlier (docs/bridge-protocol.md §2.3, "Relay in the sign-in's flight"): asked for once, when the
   * bridge's greeting says it holds such frames for the sign-in's verdict (`early_relay`); the body
   * for ROOM_HOST_DESTINATION, or undefined for none. `earlyRelaySent` says whether it left and was
   * not reported dropped.
   */
  behindSignIn?: () => Promise<string | undefined>;
}

export type BridgeSessionState = 'connecting' | 'identifying' | 'enrolling' | 'signing-in' | 'listing' | 'ready' | 'closed';

const OPEN = 1;
/** A greeting's test string is used this long after it came (the bridge keeps it 30 s); later, stage 1. */
const GREETING_USE_MS = 20_000;
/** Closing waits this long for the bridge's close frame, then drops the socket (Node's ws waits ~10 s). */
const CLOSE_GRACE_MS = 1000;
/** Relay frames kept for a handler not yet set (`onRelay`): an answer to the early frame may come with the announcement. */
const UNCLAIMED_MAX = 8;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The md5_key and SPKI PEM of the client key's public half. */
export async function clientKeyIds(key: BridgeSessionOptions['key']): Promise<{ publicPem: string; spkiPem: string; md5: string }> {
  const publicPem = key.certPem ?? key.publicPem;
  if (!publicPem) throw new ConnectionError('the bridge needs key.certPem or key.publicPem');
  return keyIdsOf(publicPem);
}

const keyIdsOf = memoized(async (publicPem: string) => {
  const spkiPem = spkiPemFromDer(spkiDerFromPem(publicPem));
  return { publicPem, spkiPem, md5: await md5Key(spkiPem) };
});

export class BridgeSession {
  readonly url: string;
  state: BridgeSessionState = 'connecting';
  /** What the bridge last announced: the hosts this key may reach. */
  peers: AnnouncedPeer[] = [];
  /** Relay frames from a peer (by connection id). Until set, the first few are kept (`takeUnclaimed`): an answer to the early frame may come in the announcement's read. */
  onRelay: (from: string, body: string) => void = (from, body) => {
    if (this.unclaimed.length < UNCLAIMED_MAX) this.unclaimed.push([from, body]);
  };
  /** Whether a frame went to the room's host behind stage 2 (`behindSignIn`). */
  earlyRelaySent = false;
  /** Binary relay frames from a peer (hsc2 sealed frames, hsc3 records); `body` is a view, valid during the call. */
  onRelayBinary: (from: string, body: Uint8Array) => void = () => {};
  /** Whether the bridge relays binary frames as binary (it says so in its announcements): hsc2 and hsc3 may be offered. */
  binaryFrames = false;
  /** The sender ids of binary frames (onBinary). */
  private readonly senders = new RelaySenders();
  /** A later announcement (after `ready`). */
  onPeers: () => void = () => {};
  /** The bridge dropped one of our frames. Until set: a drop of the early frame (to ROOM_HOST_DESTINATION, or '' if refused) unmarks it. */
  onDropped: (destination: string, reason: string) => void = (destination) => {
    if (destination === ROOM_HOST_DESTINATION || destination === '') this.earlyRelaySent = false;
  };
  /** Once, when the session ends after `ready`. */
  onClose: (info: CloseInfo) => void = () => {};

  private readonly options: BridgeSessionOptions;
  private readonly socket: WebSocketLike;
  private readonly pending = new Map<string, (env: WireEnvelope) => void>();
  private seq = 0;
  private md5 = '';
  private lastError: string | undefined;
  /** The bridge's greeting (docs/bridge-protocol.md §2.3): its test string, when it came, whether it holds early frames. */
  private greeting: { testString: string; at: number; earlyRelay: boolean } | null = null;
  private readonly unclaimed: Array<[from: string, body: string]> = [];
  private settle: { resolve: () => void; reject: (err: ConnectionError) => void } | null = null;

  private constructor(options: BridgeSessionOptions, socket: WebSocketLike) {
    this.options = options;
    this.url = relayUrl(options.bridgeUrl, options.room);
    this.socket = socket;
  }

  /**
   * Connects, enrolls when given a token, signs in and waits for the first announcement; gives up
   * (closing the socket) after `timeoutMs` or when `signal` aborts.
   */
  static async open(options: BridgeSessionOptions, limits: { signal?: AbortSignal; timeoutMs: number }): Promise<BridgeSession> {
    const url = relayUrl(options.bridgeUrl, options.room);
    const Ctor = options.webSocket ?? globalWebSocket();
    if (!Ctor) throw new ConnectionError("no WebSocket implementation: pass `webSocket` (in Node: the `ws` package, or use the SDK's Node entry)");
    let socket: WebSocketLike;
    try {
      socket = new Ctor(url);
    } catch (cause) {
      throw new ConnectionError(`cannot connect to the bridge ${url}: ${messageOf(cause)}`, { cause });
    }
    const session = new BridgeSession(options, socket);
    const giveUp = (reason: string) => session.close({ code: 4000, reason }, new ConnectionError(reason));
    const timer = setTimeout(
      () => giveUp(`the bridge ${url} did not sign this key in within ${limits.timeoutMs} ms (state: ${session.state})`),
      limits.timeoutMs,
    );
    const onAbort = () => giveUp(`connecting to the bridge ${url} was cancelled`);
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await session.start();
    } finally {
      clearTimeout(timer);
      limits.signal?.removeEventListener('abort', onAbort);
    }
    return session;
  }

  /** Sends `<destination>\n<body>` through the bridge. */
  sendRelay(destination: string, body: string): void {
    if (this.state === 'closed' || this.socket.readyState !== OPEN) throw new ConnectionError(`the connection to the bridge ${this.url} is not open`);
    this.socket.send(`${destination}\n${body}`);
  }

  /** The relay frames that came before `onRelay` was set, oldest first (each given once). */
  takeUnclaimed(): Array<[from: string, body: string]> {
    return this.unclaimed.splice(0);
  }

  /** Whether the socket says when it has written a frame: `ws`'s send callback; a WHATWG WebSocket cannot. */
  get tellsWhenWritten(): boolean {
    return typeof (this.socket as { terminate?: unknown }).terminate === 'function';
  }

  /** Sends a binary relay frame, `<destination>\n` and the body already in `frame`; `written` runs once the socket is done with it (tellsWhenWritten). */
  sendRelayBinary(frame: Uint8Array, written?: () => void): void {
    if (this.state === 'closed' || this.socket.readyState !== OPEN) throw new ConnectionError(`the connection to the bridge ${this.url} is not open`);
    if (written && this.tellsWhenWritten) (this.socket as { send(data: Uint8Array, done: () => void): void }).send(frame, () => written());
    else this.socket.send(frame);
  }

  /** Ends the session (before `ready`, `open` rejects with `info.reason`). */
  close(info: CloseInfo, err?: ConnectionError): void {
    if (this.state === 'closed') return;
    const wasReady = this.state === 'ready';
    this.state = 'closed';
    try {
      this.socket.close(info.code >= 3000 && info.code < 5000 ? info.code : 1000, info.reason.slice(0, 120));
    } catch {
      // already closing
    }
    // A bridge that never answers the close frame must not keep the process alive.
    const terminate = (this.socket as { terminate?: () => void }).terminate;
    if (typeof terminate === 'function') {
      const timer = setTimeout(() => {
        try {
          terminate.call(this.socket);
        } catch {
          // gone
        }
      }, CLOSE_GRACE_MS);
      (timer as { unref?: () => void }).unref?.();
    }
    for (const resolve of this.pending.values()) resolve({ id: '', name: 'error', namespace: 'rpc', args: { code: 503, message: info.reason } });
    this.pending.clear();
    if (this.settle) {
      const { reject } = this.settle;
      this.settle = null;
      reject(err ?? new ConnectionError(`bridge ${this.url}: ${info.reason}`, { closeCode: info.code }));
    } else if (wasReady) this.onClose(info);
  }

  private start(): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    if (this.socket.binaryType === 'blob') this.socket.binaryType = 'arraybuffer';
    this.socket.addEventListener('message', (event) => this.onMessage(event.data));
    this.socket.addEventListener('error', (event) => {
      this.lastError = event.message || (event.error instanceof Error ? event.error.message : undefined) || 'WebSocket error';
    });
    this.socket.addEventListener('close', (event) => {
      const reason = `the bridge closed the connection (code ${event.code}${event.reason ? `: ${event.reason}` : ''})`;
      const info: CloseInfo = { code: event.code, reason: event.reason || reason };
      if (this.lastError !== undefined) info.error = this.lastError;
      this.close(info, new ConnectionError(`cannot connect through ${this.url}: ${this.lastError ?? reason}`, { closeCode: event.code }));
    });
    this.socket.addEventListener('open', () => {
      this.state = 'identifying';
    });
    return ready;
  }

  private onMessage(data: unknown): void {
    if (this.state === 'closed') return;
    if (typeof data !== 'string') {
      // Binary: only relay frames come so (hsc2, hsc3); `ws` hands Buffers, browsers ArrayBuffers.
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : ArrayBuffer.isView(data) ? (data as Uint8Array) : null;
      if (bytes && this.state === 'ready') this.onBinary(bytes);
      return;
    }
    const text = data;
    if (!text.startsWith('{')) {
      const nl = text.indexOf('\n');
      if (nl > 0 && this.state === 'ready') this.onRelay(text.slice(0, nl), text.slice(nl + 1));
      return;
    }
    const env = parseEnvelope(text);
    if (!env) return;
    if (isReply(env)) {
      const resolve = this.pending.get(env.id);
      if (resolve) {
        this.pending.delete(env.id);
        resolve(env);
      }
      return;
    }
    if (env.name === 'event') {
      // The greeting comes before identify and is taken only then; without one (an older bridge), stage 1.
      const greeting = greetingOf(env);
      if (greeting === null) return this.onEvent(env.args);
      if (this.state === 'identifying' || this.state === 'connecting') this.greeting = { ...greeting, at: Date.now() };
      return;
    }
    // The bridge's own requests, and only those.
    const request = bridgeRequestOf(env);
    if (request === 'identify' && this.state === 'identifying') {
      this.sendJson({ id: env.id, name: 'response', namespace: 'rpc', args: { type: 'client', hostname: this.options.clientHostname ?? 'hostadm-sdk' } });
      const greeting = this.greeting;
      this.greeting = null;
      void this.signIn(greeting).catch((cause: unknown) => {
        const err = cause instanceof ConnectionError ? cause : new ConnectionError(`cannot sign in at ${this.url}: ${messageOf(cause)}`, { cause });
        this.close({ code: err.closeCode ?? 4000, reason: err.message }, err);
      });
    } else if (request === 'list-keys' && this.state === 'signing-in') {
      this.state = 'listing';
      const reach = this.options.reach?.length ? { reach: [...this.options.reach] } : {};
      this.sendJson({ id: env.id, name: 'response', namespace: 'rpc', args: { md5_keys: [this.md5], ...reach } });
    }
  }

  /** `<sender id>\n<body>` as bytes: the sender checked (relay-sender.ts), the body handed on as a view. */
  private onBinary(bytes: Uint8Array): void {
    const nl = bytes.indexOf(0x0a);
    const from = this.senders.senderOf(bytes, nl);
    if (from !== null) this.onRelayBinary(from, bytes.subarray(nl + 1));
  }

  private onEvent(args: unknown): void {
    const ev = args as { name?: string; args?: Record<string, unknown> } | undefined;
    if (ev?.name !== 'bridge' || !isRecord(ev.args)) return;
    if (Array.isArray(ev.args.peers)) {
      this.binaryFrames = ev.args.binary_frames === true;
      this.peers = (ev.args.peers as unknown[]).filter((p): p is AnnouncedPeer => isRecord(p) && typeof p.id === 'string');
      // The answer to our key list (asked for, or given with stage 2: then it comes while signing in, even
      // before the sign-in reply's continuation ran): from now on `peers` is what this key may reach.
      if ((this.state === 'listing' || this.state === 'signing-in') && this.settle) {
        this.state = 'ready';
        const { resolve } = this.settle;
        this.settle = null;
        resolve();
        return;
      }
      if (this.state === 'ready') this.onPeers();
    } else if (isRecord(ev.args.dropped)) {
      const d = ev.args.dropped as { destination?: string; reason?: string };
      this.onDropped(d.destination ?? '', d.reason ?? 'unknown reason');
    }
  }

  private async signIn(greeting: { testString: string; at: number; earlyRelay: boolean } | null): Promise<void> {
    const usable = greeting && Date.now() - greeting.at < GREETING_USE_MS ? greeting : null;
    const early = usable?.earlyRelay ? await this.options.behindSignIn?.() : undefined;
    const ids = await clientKeyIds(this.options.key);
    this.md5 = ids.md5;
    if (this.options.joinToken !== undefined) {
      this.state = 'enrolling';
      const nickname = this.options.nickname ? { nickname: this.options.nickname } : {};
      const reply = await this.request('bridge_enroll', { token: this.options.joinToken, pub_key: textToBase64(ids.publicPem), ...nickname });
      if (reply.name !== 'response')
        throw new ConnectionError(`the bridge refused to enroll the key: ${errorText(reply)}`, { closeCode: 4401, cause: refusal(reply, 'bridge_enroll') });
      this.options.onEnrolled?.();
    }
    this.state = 'signing-in';
    await signInToBridge({
      request: (name, args) => this.request(name, args),
      privateKey: privateKeyOf(this.options.key),
      md5: this.md5,
      bridge: relayUrl(this.options.bridgeUrl),
      tickets: this.options.signInTickets ?? null,
      onTicketRefused: this.options.onSignInTicketRefused,
      keys: { md5_keys: [this.md5], ...(this.options.reach?.length ? { reach: [...this.options.reach] } : {}) },
      errorText,
      refusal: (env) => refusal(env, 'auth_ssl'),
      greeting: usable?.testString ?? null,
      ...(early !== undefined ? { afterStage2: () => this.sendEarly(early) } : {}),
    });
    // The bridge now asks for the key list (onMessage answers it); `ready` follows its announcement.
  }

  /**
   * The frame for the room's host, right behind stage 2 (the bridge holds it for the verdict). Sent
   * again behind a later stage 2 only when the bridge said it dropped it (a refused ticket: onDropped).
   */
  private sendEarly(body: string): void {
    if (this.earlyRelaySent || this.socket.readyState !== OPEN) return;
    this.earlyRelaySent = true;
    this.socket.send(`${ROOM_HOST_DESTINATION}\n${body}`);
  }

  private request(name: string, args: unknown): Promise<WireEnvelope> {
    const id = `bt-${++this.seq}`;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.sendJson({ id, name, namespace: 'rpc', args });
    });
  }

  private sendJson(env: WireEnvelope): void {
    if (this.socket.readyState !== OPEN) throw new ConnectionError(`the connection to the bridge ${this.url} is not open`);
    this.socket.send(JSON.stringify(env));
  }
}
