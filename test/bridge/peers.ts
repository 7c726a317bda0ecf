/**
 * A WebSocket peer on a test bridge (helpers.ts starts one, for either runtime): it answers the
 * bridge's identify and list_ssl_checksums requests the way an agent or a client does, keeps every
 * frame, and waits for replies, announcements and drop notices. Plus the steps most bridge tests
 * share: sign in and wait for the first announcement, find a host's room, an announced peer's id.
 */
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { signatureProof, type TestKey } from '../helpers/keys.ts';
import { until, type TestBridge } from './helpers.ts';

export interface Envelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

export interface Announcement {
  available_connections: string[];
  peers: Array<{ id: string; kind: string; nickname: string; hostname: string; host_key_fingerprint: string | null }>;
}

export function md5Of(key: TestKey): string {
  return createHash('md5').update(Buffer.from(key.pubKeyB64, 'base64')).digest('base64');
}

type Waiter = { match: (msg: Message) => boolean; resolve: (msg: Message) => void };
type Message = { env: Envelope } | { frame: string; binary: boolean };

/**
 * A peer on the bridge. Answers identify with `type`, and list_ssl_checksums with `md5Keys` (a
 * getter, so a test can change what it would answer). Keeps every frame received.
 */
export class TestPeer {
  readonly ws: WebSocket;
  readonly type: 'server' | 'client';
  md5Keys: string[];
  readonly received: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Requests the bridge sent to this peer (identify, list_ssl_checksums). */
  readonly bridgeRequests: Envelope[] = [];
  private readonly waiters: Waiter[] = [];
  private seq = 0;

  private constructor(ws: WebSocket, type: 'server' | 'client', md5Keys: string[], answerIdentify: boolean) {
    this.ws = ws;
    this.type = type;
    this.md5Keys = md5Keys;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on('message', (data, isBinary) => {
      const text = (data as Buffer).toString('utf8');
      const msg: Message = !isBinary && text.startsWith('{') ? { env: JSON.parse(text) as Envelope } : { frame: text, binary: isBinary };
      if ('env' in msg && msg.env.name !== 'response' && msg.env.name !== 'error' && msg.env.name !== 'event') {
        this.bridgeRequests.push(msg.env);
        if (msg.env.id === 'bridge_request_ident' && answerIdentify) {
          this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { type, hostname: `${type}-host` } });
        } else if (msg.env.id === 'bridge_request_list_keys') {
          this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { md5_keys: this.md5Keys } });
        }
      }
      this.received.push(msg);
      for (let i = 0; i < this.waiters.length; i++) {
        const w = this.waiters[i]!;
        if (w.match(msg)) {
          this.waiters.splice(i, 1);
          w.resolve(msg);
          return;
        }
      }
    });
  }

  /** `ca`: the certificate a `wss://` bridge presents, when self-signed. */
  static async connect(url: string, type: 'server' | 'client', md5Keys: string[] = [], answerIdentify = true, ca?: string): Promise<TestPeer> {
    const ws = new WebSocket(url, { perMessageDeflate: false, ...(ca ? { ca } : {}) });
    const peer = new TestPeer(ws, type, md5Keys, answerIdentify);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    });
    // As real peers do: calls start once the bridge asked who is there (on Workers the request may
    // arrive after 'open'; on Node it comes with the handshake).
    if (answerIdentify) await peer.wait((m) => 'env' in m && m.env.id === 'bridge_request_ident');
    return peer;
  }

  send(envelope: unknown): void {
    this.ws.send(JSON.stringify(envelope));
  }

  /** Waits for a message received so far (not yet consumed by a waiter) or later that matches. */
  private wait(match: (msg: Message) => boolean, consumeFrom = 0): Promise<Message> {
    for (let i = consumeFrom; i < this.received.length; i++) {
      const msg = this.received[i]!;
      if (match(msg)) return Promise.resolve(msg);
    }
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  async request(name: string, args?: unknown, id = `req-${++this.seq}`): Promise<Envelope> {
    const from = this.received.length;
    const reply = this.wait((m) => 'env' in m && m.env.id === id && (m.env.name === 'response' || m.env.name === 'error'), from);
    this.send({ id, name, namespace: 'rpc', args });
    return ((await reply) as { env: Envelope }).env;
  }

  async enroll(token: string, key: TestKey, nickname?: string): Promise<Envelope> {
    return this.request('bridge_enroll', { token, pub_key: key.pubKeyB64, ...(nickname ? { nickname } : {}) });
  }

  /** Both auth_ssl stages with the modern signature form; `pin` sends the md5_key stage 1. */
  async signIn(key: TestKey, pin = false): Promise<Envelope> {
    const stage1 = await this.request('auth_ssl', pin ? { action: 'auth_ssl', md5_key: md5Of(key) } : '');
    if (stage1.name !== 'response') return stage1;
    const { test_string } = stage1.args as { test_string: string };
    return this.request('auth_ssl', { signature: signatureProof(key, 'bridge-signin', test_string) });
  }

  /** The n-th announcement from now on (or an earlier one not yet seen, when `since` is given). */
  nextAnnouncement(since = this.received.length, match: (a: Announcement) => boolean = () => true): Promise<Announcement> {
    return this.wait((m) => {
      const a = announcementOf(m);
      return a !== null && match(a);
    }, since).then((m) => announcementOf(m)!);
  }

  /** The latest announcement received so far. */
  lastAnnouncement(): Announcement | null {
    for (let i = this.received.length - 1; i >= 0; i--) {
      const a = announcementOf(this.received[i]!);
      if (a) return a;
    }
    return null;
  }

  nextDropped(since = this.received.length): Promise<{ destination: string; reason: string }> {
    return this.wait((m) => droppedOf(m) !== null, since).then((m) => droppedOf(m)!);
  }

  nextFrame(since = this.received.length): Promise<string> {
    return this.wait((m) => 'frame' in m, since).then((m) => (m as { frame: string }).frame);
  }

  /** The next relay frame with whether it came as a binary message. */
  nextFrameKind(since = this.received.length): Promise<{ frame: string; binary: boolean }> {
    return this.wait((m) => 'frame' in m, since).then((m) => m as { frame: string; binary: boolean });
  }

  close(): void {
    this.ws.terminate();
  }
}

function bridgeEvent(m: Message): Record<string, unknown> | null {
  if (!('env' in m) || m.env.name !== 'event') return null;
  const args = m.env.args as { name: string; args: Record<string, unknown> };
  return args.name === 'bridge' ? args.args : null;
}

function announcementOf(m: Message): Announcement | null {
  const e = bridgeEvent(m);
  return e && 'available_connections' in e ? (e as unknown as Announcement) : null;
}

function droppedOf(m: Message): { destination: string; reason: string } | null {
  const e = bridgeEvent(m);
  return e && 'dropped' in e ? (e.dropped as { destination: string; reason: string }) : null;
}

/**
 * Connects, enrolls `key` with a fresh token, signs in, and waits for the first announcement (the
 * bridge always sends one right after the peer lists its keys).
 */
export async function signedInPeer(
  bridge: TestBridge,
  type: 'server' | 'client',
  key: TestKey,
  options: { md5Keys?: string[]; enroll?: boolean; nickname?: string; url?: string; ca?: string } = {},
): Promise<{ peer: TestPeer; announcement: Announcement }> {
  const kind = type === 'server' ? 'agent' : 'client';
  const peer = await TestPeer.connect(options.url ?? bridge.url, type, options.md5Keys ?? (type === 'client' ? [md5Of(key)] : []), true, options.ca);
  if (options.enroll !== false) {
    const enrolled = await peer.enroll(await bridge.token(kind, { nickname: options.nickname }), key);
    if (enrolled.name !== 'response') throw new Error(`enroll failed: ${JSON.stringify(enrolled.args)}`);
  }
  const since = peer.received.length;
  const reply = await peer.signIn(key, true);
  if (reply.name !== 'response') throw new Error(`sign-in failed: ${JSON.stringify(reply.args)}`);
  const announcement = await peer.nextAnnouncement(since);
  return { peer, announcement };
}

/** A room of the bridge (docs/bridge-protocol.md §2.10): `host/<fp>`, `directory`; '' the shared room. */
export function roomUrl(bridge: TestBridge, room: string): string {
  return room ? `${bridge.url}/${room}` : bridge.url;
}

/**
 * The URL of the room where the directory says host `nickname` is, for `key` (a client key; enrolled
 * first with a fresh token unless `enrolled`), waiting until the directory lists it.
 */
export async function hostRoomUrl(bridge: TestBridge, key: TestKey, nickname: string, enrolled = false): Promise<string> {
  const { peer } = await signedInPeer(bridge, 'client', key, { url: roomUrl(bridge, 'directory'), enroll: !enrolled });
  try {
    await until(() => (peer.lastAnnouncement()?.peers ?? []).some((p) => p.nickname === nickname), `the directory listing ${nickname}`);
    const entry = peer.lastAnnouncement()!.peers.find((p) => p.nickname === nickname)! as { room?: string };
    return roomUrl(bridge, entry.room ?? '');
  } finally {
    peer.close();
  }
}

/** The peer's connection id, as the bridge announced it to `other`. */
export function idOf(announcement: Announcement, hostnameOrNickname: string): string {
  const entry = announcement.peers.find((p) => p.nickname === hostnameOrNickname || p.hostname === hostnameOrNickname);
  if (!entry) throw new Error(`no peer ${hostnameOrNickname} in ${JSON.stringify(announcement)}`);
  return entry.id;
}
