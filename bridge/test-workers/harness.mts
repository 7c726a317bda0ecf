/**
 * Peers for the hub tests inside workerd: keys made with WebCrypto (what a modern client registers:
 * base64 of the SPKI PEM; the proof is base64 of an Ed25519 / RSA-SHA256 signature of the labelled
 * test string), and a WebSocket peer that answers the bridge's identify and list_ssl_checksums requests
 * the way test/bridge/helpers.ts's TestPeer does on Node. Each test talks to its own hub:
 * `/_hub/<name>/...` (HOSTADM_TEST_HOOKS).
 */
import { env, exports } from 'cloudflare:workers';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { issueJoinToken } from '../src/relay/join-token.ts';

export interface TestKey {
  algorithm: 'rsa' | 'ed25519';
  privateKey: CryptoKey;
  /** base64 of the PEM public key: the `pub_key` a peer registers. */
  pubKeyB64: string;
  /** base64 MD5 of the PEM (docs/bridge-protocol.md §1). */
  md5: string;
  /** Ed25519: the host key fingerprint (`SHA256:` + base64url of SHA-256 over the raw key); RSA: ''. */
  fingerprint: string;
}

/** The relay path of the host room of an agent key (`/relay/host/<fp>`). */
export const roomPath = (key: TestKey) => `/relay/host/${key.fingerprint.slice('SHA256:'.length)}`;

const b64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

export async function makeKey(algorithm: 'rsa' | 'ed25519'): Promise<TestKey> {
  const params = algorithm === 'rsa'
    ? { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }
    : { name: 'Ed25519' };
  const pair = (await crypto.subtle.generateKey(params, true, ['sign', 'verify'])) as CryptoKeyPair;
  const spki = (await crypto.subtle.exportKey('spki', pair.publicKey)) as ArrayBuffer;
  const body = b64(spki).replace(/.{1,64}/g, '$&\n');
  const pem = `-----BEGIN PUBLIC KEY-----\n${body}-----END PUBLIC KEY-----\n`;
  const pemBytes = new TextEncoder().encode(pem);
  let fingerprint = '';
  if (algorithm === 'ed25519') {
    const raw = (await crypto.subtle.exportKey('raw', pair.publicKey)) as ArrayBuffer;
    fingerprint = `SHA256:${b64(await crypto.subtle.digest('SHA-256', raw)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')}`;
  }
  return { algorithm, privateKey: pair.privateKey, pubKeyB64: b64(pemBytes), md5: b64(await crypto.subtle.digest('MD5', pemBytes)), fingerprint };
}

/** A bridge sign-in proof: a signature of "hostadm-signin bridge v1\n" ‖ test string (docs/protocol.md "Signatures"). */
export async function signatureProof(key: TestKey, testString: string): Promise<string> {
  const algorithm = key.algorithm === 'rsa' ? 'RSASSA-PKCS1-v1_5' : 'Ed25519';
  return b64(await crypto.subtle.sign(algorithm, key.privateKey, new TextEncoder().encode(signedMessage('bridge-signin', testString))));
}

export async function joinToken(kind: 'agent' | 'client', nickname?: string): Promise<string> {
  const secret = new TextEncoder().encode(env.JOIN_SECRET);
  return (await issueJoinToken(secret, { kind, nickname, ttlSeconds: 600 }, Date.now())).token;
}

/** A request to hub `hub` (a fresh relay per name). */
export function hubFetch(hub: string, path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(`http://bridge/_hub/${hub}${path}`, init);
}

export async function hubJson<T>(hub: string, path: string, init?: RequestInit): Promise<T> {
  // /metrics is for the operator: loopback, or the admin secret (no address reaches the hub here).
  const res = await hubFetch(hub, path, path === '/metrics' ? { ...init, headers: adminHeaders() } : init);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json<T>();
}

export const hubStub = (hub: string) => env.RELAY_HUB.get(env.RELAY_HUB.idFromName(hub));

export interface Envelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

export interface Announcement {
  available_connections: string[];
  peers: Array<{ id: string; kind: string; nickname: string; hostname: string; host_key_fingerprint: string | null; access?: string; room?: string }>;
}

type Message = { env: Envelope } | { frame: string };
type Waiter = { match: (m: Message) => boolean; resolve: (m: Message) => void; reject: (e: Error) => void };

const WAIT_MS = 5000;

export class HubPeer {
  readonly ws: WebSocket;
  readonly received: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  md5Keys: string[];
  private readonly waiters: Waiter[] = [];
  private seq = 0;

  readonly type: 'server' | 'client';

  private constructor(ws: WebSocket, type: 'server' | 'client', md5Keys: string[]) {
    this.ws = ws;
    this.type = type;
    this.md5Keys = md5Keys;
    this.closed = new Promise((resolve) => ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason })));
    ws.addEventListener('message', (e) => this.onMessage(typeof e.data === 'string' ? e.data : new TextDecoder().decode(e.data as ArrayBuffer)));
    ws.accept();
  }

  static async connect(hub: string, type: 'server' | 'client', md5Keys: string[] = [], address = '203.0.113.7', path = '/relay'): Promise<HubPeer> {
    const res = await hubFetch(hub, path, { headers: { Upgrade: 'websocket', 'x-hostadm-test-address': address } });
    if (!res.webSocket) throw new Error(`upgrade refused: HTTP ${res.status} ${await res.text()}`);
    const peer = new HubPeer(res.webSocket, type, md5Keys);
    // A real peer speaks after the bridge asked who it is; here the request can arrive after the
    // test's first call would have been sent, so wait for it (it is answered on arrival).
    await peer.wait((m) => 'env' in m && m.env.id === 'bridge_request_ident', 0, 'the identify request');
    return peer;
  }

  private onMessage(text: string): void {
    const msg: Message = text.startsWith('{') ? { env: JSON.parse(text) as Envelope } : { frame: text };
    if ('env' in msg && msg.env.id === 'bridge_request_ident') {
      this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { type: this.type, hostname: `${this.type}-host` } });
    } else if ('env' in msg && msg.env.id === 'bridge_request_list_keys') {
      this.send({ id: msg.env.id, name: 'response', namespace: 'rpc', args: { md5_keys: this.md5Keys } });
    }
    this.received.push(msg);
    const i = this.waiters.findIndex((w) => w.match(msg));
    if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(msg);
  }

  send(envelope: unknown): void {
    this.ws.send(JSON.stringify(envelope));
  }

  sendFrame(dest: string, body: string): void {
    this.ws.send(`${dest}\n${body}`);
  }

  /** A message received at index ≥ `from` (already here or still to come) that matches. */
  private wait(match: (m: Message) => boolean, from: number, what: string): Promise<Message> {
    const found = this.received.slice(from).find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { match, resolve, reject };
      this.waiters.push(waiter);
      setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          reject(new Error(`${this.type}: timed out waiting for ${what}; received ${JSON.stringify(this.received.slice(from))}`));
        }
      }, WAIT_MS);
    });
  }

  async request(name: string, args?: unknown): Promise<Envelope> {
    const id = `req-${++this.seq}`;
    const reply = this.wait((m) => 'env' in m && m.env.id === id && (m.env.name === 'response' || m.env.name === 'error'), this.received.length, `reply to ${name}`);
    this.send({ id, name, namespace: 'rpc', args });
    return ((await reply) as { env: Envelope }).env;
  }

  async enroll(key: TestKey, nickname?: string): Promise<Envelope> {
    return this.request('bridge_enroll', { token: await joinToken(this.type === 'server' ? 'agent' : 'client', nickname), pub_key: key.pubKeyB64 });
  }

  /** auth_ssl pinned to the key's md5, then the signature proof. */
  async signIn(key: TestKey): Promise<Envelope> {
    const stage1 = await this.request('auth_ssl', { action: 'auth_ssl', md5_key: key.md5 });
    if (stage1.name !== 'response') return stage1;
    const { test_string } = stage1.args as { test_string: string };
    return this.request('auth_ssl', { signature: await signatureProof(key, test_string) });
  }

  nextAnnouncement(from = this.received.length, match: (a: Announcement) => boolean = () => true): Promise<Announcement> {
    return this.wait((m) => announcementOf(m) !== null && match(announcementOf(m)!), from, 'an announcement').then((m) => announcementOf(m)!);
  }

  nextFrame(from = this.received.length): Promise<string> {
    return this.wait((m) => 'frame' in m, from, 'a relay frame').then((m) => (m as { frame: string }).frame);
  }

  /** Bridge events (announcements, drops) received at index ≥ `from`. */
  eventsSince(from: number): Message[] {
    return this.received.slice(from).filter((m) => 'env' in m && m.env.name === 'event');
  }

  close(): void {
    try {
      this.ws.close(1000, 'test done');
    } catch {
      // already closed
    }
  }
}

export function announcementOf(m: Message): Announcement | null {
  if (!('env' in m) || m.env.name !== 'event') return null;
  const args = m.env.args as { name: string; args: Record<string, unknown> };
  return args.name === 'bridge' && 'available_connections' in args.args ? (args.args as unknown as Announcement) : null;
}

/** Connects, enrolls `key` with a fresh token, signs in, and waits for the first announcement. */
export async function signedInPeer(
  hub: string,
  type: 'server' | 'client',
  key: TestKey,
  options: { md5Keys?: string[]; nickname?: string; path?: string; enroll?: boolean } = {},
) {
  const peer = await HubPeer.connect(hub, type, options.md5Keys ?? (type === 'client' ? [key.md5] : []), undefined, options.path);
  if (options.enroll !== false) {
    const enrolled = await peer.enroll(key, options.nickname);
    if (enrolled.name !== 'response') throw new Error(`enroll failed: ${JSON.stringify(enrolled.args)}`);
  }
  const since = peer.received.length;
  const reply = await peer.signIn(key);
  if (reply.name !== 'response') throw new Error(`sign-in failed: ${JSON.stringify(reply.args)}`);
  return { peer, announcement: await peer.nextAnnouncement(since) };
}

/** An agent accepting the client's key and the client, signed in and announced to each other. */
export async function matchedPair(hub: string) {
  const agentKey = await makeKey('ed25519');
  const clientKey = await makeKey('rsa');
  const { peer: agent } = await signedInPeer(hub, 'server', agentKey, { md5Keys: [clientKey.md5], nickname: `web-${crypto.randomUUID().slice(0, 8)}` });
  const { peer: client, announcement } = await signedInPeer(hub, 'client', clientKey, { nickname: `alice-${crypto.randomUUID().slice(0, 8)}` });
  const agentId = announcement.available_connections[0]!;
  const clientId = (await agent.nextAnnouncement(0, (a) => a.available_connections.length === 1)).available_connections[0]!;
  return { agent, client, agentId, clientId, agentKey, clientKey };
}

/** Sends a frame each way and returns what arrived (the first line should be the sender's id). */
export async function relayBothWays(p: { agent: HubPeer; client: HubPeer; agentId: string; clientId: string }, body: string) {
  const atAgent = p.agent.nextFrame();
  p.client.sendFrame(p.agentId, `to agent: ${body}`);
  const atClient = p.client.nextFrame();
  p.agent.sendFrame(p.clientId, `to client: ${body}`);
  return { atAgent: await atAgent, atClient: await atClient };
}

export const adminHeaders = () => ({ Authorization: `Bearer ${env.ADMIN_SECRET}`, 'Content-Type': 'application/json' });
