/**
 * The relay core without Node: it type-checks with no Node types (what a Workers runtime sees), and
 * it runs over fake sockets that pass strings (a Durable Object receives text frames as strings), with
 * an in-memory KeyStore: the same contract a D1 store will implement.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Relay } from '@hostadm/bridge/relay/relay.ts';
import { issueJoinToken } from '@hostadm/bridge/relay/join-token.ts';
import { headerEnd, headerText, rewrite, encodeHeader } from '@hostadm/bridge/relay/frames.ts';
import type { BlacklistRule, EnrollOutcome, KeyCrypto, KeyRecord, KeyStore, NewKey, PeerKind, PeerSocket } from '@hostadm/bridge/relay/ports.ts';
import type { Peer } from '@hostadm/bridge/relay/peer.ts';
import { until } from './helpers.ts';

const root = new URL('../..', import.meta.url).pathname;

test('app.ts and relay/* type-check without Node types (runtime-independent core)', () => {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'bridge/tsconfig.core.json'], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test('frames: header and rewrite agree for strings and bytes', () => {
  const text = 'agent-1\n{"a":"héllo\\n"}\nmore';
  const bytes = new TextEncoder().encode(text);
  assert.equal(headerEnd(text, 128), 7);
  assert.equal(headerEnd(bytes, 128), 7);
  assert.equal(headerText(text, 7), 'agent-1');
  assert.equal(headerText(bytes, 7), 'agent-1');
  const fromString = rewrite(text, 7, 'client-22', encodeHeader('client-22'));
  const fromBytes = rewrite(bytes, 7, 'client-22', encodeHeader('client-22'));
  assert.equal(fromString, 'client-22\n{"a":"héllo\\n"}\nmore');
  assert.equal(new TextDecoder().decode(fromBytes as Uint8Array), fromString);
  assert.equal(headerEnd(`${'x'.repeat(200)}\nbody`, 128), -1);
  assert.equal(headerText('a b\nc', 3), null);
});

class MemoryKeyStore implements KeyStore {
  keys: KeyRecord[] = [];
  jtis = new Set<string>();
  async getByMd5(md5: string) {
    return this.keys.find((k) => k.md5Key === md5) ?? null;
  }
  async find(ref: string) {
    return this.keys.find((k) => k.id === ref || k.md5Key === ref) ?? null;
  }
  async listActive(kind: PeerKind) {
    return this.keys.filter((k) => k.kind === kind && k.revokedAt === null);
  }
  async list() {
    return [...this.keys];
  }
  async enroll(token: { jti: string }, key: NewKey): Promise<EnrollOutcome> {
    if (this.jtis.has(token.jti)) return { ok: false, reason: 'token-used' };
    const existing = this.keys.find((k) => k.md5Key === key.md5Key);
    if (existing) return { ok: false, reason: existing.revokedAt ? 'key-revoked' : 'key-exists' };
    if (key.kind === 'agent' && this.keys.some((k) => k.kind === 'agent' && k.nickname === key.nickname && k.revokedAt === null))
      return { ok: false, reason: 'nickname-taken' };
    this.jtis.add(token.jti);
    const record = { ...key, lastSeenAt: null, revokedAt: null };
    this.keys.push(record);
    return { ok: true, key: record };
  }
  async revoke(ref: string, now: number) {
    const key = await this.find(ref);
    if (key && key.revokedAt === null) key.revokedAt = now;
    return key;
  }
  async revokedSince(since: number) {
    return this.keys.filter((k) => k.revokedAt !== null && k.revokedAt >= since);
  }
  async touch(id: string, now: number) {
    const key = this.keys.find((k) => k.id === id);
    if (key) key.lastSeenAt = now;
  }
  async isBlocked() {
    return false;
  }
  async recordFailure(_a: string, _n: number, _r: BlacklistRule) {
    return false;
  }
  /** Keeps no blacklist and no token expiries: nothing to prune. */
  async prune() {
    return { usedJoinTokens: 0, blacklist: 0, authFailures: 0 };
  }
}

/** Keys are their own md5 here; a proof is valid when it equals `signed:<purpose>:<challenge>:<md5>`. */
const fakeCrypto: KeyCrypto = {
  parsePublicKey: (b64) => ({
    spkiPem: `-----BEGIN PUBLIC KEY-----\n${Buffer.alloc(44, b64.length).toString('base64')}\n-----END PUBLIC KEY-----\n`,
    algorithm: 'ed25519',
    md5Key: b64,
  }),
  verifyProof: (key, purpose, challenge, proof) => proof === `signed:${purpose}:${challenge}:${key.md5Key}`,
};

class FakeSocket implements PeerSocket {
  sent: string[] = [];
  bufferedAmount = 0;
  closedWith: number | null = null;
  send(data: string | Uint8Array): void {
    assert.equal(typeof data, 'string', 'string frames in, string frames out');
    this.sent.push(data as string);
  }
  close(code: number): void {
    this.closedWith = code;
  }
  json(i: number): { id: string; name: string; args: Record<string, unknown> } {
    if (i < 0) return { id: '', name: '', args: {} };
    return JSON.parse(this.sent[i]!);
  }
  last() {
    return this.json(this.sent.length - 1);
  }
}

test('the core relays string frames through fake sockets and an in-memory store', async () => {
  const secret = new TextEncoder().encode('s'.repeat(43));
  let now = 1_000_000;
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const relay = new Relay({ store: new MemoryKeyStore(), crypto: fakeCrypto, clock: { now: () => now }, logger: silent, joinSecret: secret, hostname: 'edge' });

  async function join(type: 'server' | 'client', key: string, md5Keys: string[]): Promise<{ peer: Peer; socket: FakeSocket }> {
    const socket = new FakeSocket();
    const peer = relay.open(socket, '203.0.113.7');
    // The greeting (its test string), then identify; this peer still asks for a test string (stage 1).
    assert.equal(socket.json(0).args.name, 'bridge_greeting');
    assert.equal(socket.json(1).id, 'bridge_request_ident');
    relay.receive(peer, JSON.stringify({ id: 'bridge_request_ident', name: 'response', namespace: 'rpc', args: { type, hostname: `${type}-h` } }));
    const { token } = await issueJoinToken(secret, { kind: type === 'server' ? 'agent' : 'client', ttlSeconds: 60 }, now);
    relay.receive(peer, JSON.stringify({ id: 'e', name: 'bridge_enroll', namespace: 'rpc', args: { token, pub_key: key } }));
    relay.receive(peer, JSON.stringify({ id: 's1', name: 'auth_ssl', namespace: 'rpc', args: { action: 'auth_ssl', md5_key: key } }));
    await until(() => socket.last().id === 's1', 'stage 1 reply');
    const testString = socket.last().args.test_string as string;
    relay.receive(peer, JSON.stringify({ id: 's2', name: 'auth_ssl', namespace: 'rpc', args: { signature: `signed:bridge-signin:${testString}:${key}` } }));
    await until(() => socket.last().id === 'bridge_request_list_keys', 'the list_ssl_checksums request');
    relay.receive(peer, JSON.stringify({ id: 'bridge_request_list_keys', name: 'response', namespace: 'rpc', args: { md5_keys: md5Keys } }));
    await until(() => socket.last().name === 'event', 'the first announcement');
    return { peer, socket };
  }

  const agent = await join('server', 'AGENTKEY', ['CLIENTKEY']);
  const client = await join('client', 'CLIENTKEY', ['CLIENTKEY']);
  const offer = client.socket.last().args as unknown as { args: { available_connections: string[] } };
  const agentId = offer.args.available_connections[0]!;
  assert.equal(agentId, agent.peer.id);
  relay.receive(client.peer, `${agentId}\n{"opaque":"body ✓"}`);
  assert.equal(agent.socket.sent.at(-1), `${client.peer.id}\n{"opaque":"body ✓"}`);

  // Queue bound, string mode: the Durable Object's socket reports its own bufferedAmount.
  agent.socket.bufferedAmount = relay.config.maxQueueBytes + 1;
  relay.receive(client.peer, `${agentId}\nlost`);
  assert.deepEqual((client.socket.last().args as unknown as { args: unknown }).args, { dropped: { destination: agentId, reason: 'queue-full' } });
  now += 30_000;
  await relay.sweep();
  assert.equal(agent.socket.closedWith, 1013);
  assert.equal(relay.snapshot().frames_relayed, 1);
});

test('frames behind a stage 2 wait for its verdict: forwarded once signed in, at most 16 of them, none after a refusal', async () => {
  const secret = new TextEncoder().encode('s'.repeat(43));
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const store = new MemoryKeyStore();
  const relay = new Relay({ store, crypto: fakeCrypto, clock: { now: () => 1_000_000 }, logger: silent, joinSecret: secret, hostname: 'edge' });
  const enrollAndGreet = async (type: 'server' | 'client', key: string) => {
    const socket = new FakeSocket();
    const peer = relay.open(socket, '203.0.113.9');
    const testString = (socket.json(0).args.args as { test_string: string }).test_string;
    relay.receive(peer, JSON.stringify({ id: 'bridge_request_ident', name: 'response', namespace: 'rpc', args: { type, hostname: `${type}-h` } }));
    const { token } = await issueJoinToken(secret, { kind: type === 'server' ? 'agent' : 'client', ttlSeconds: 60 }, 1_000_000);
    relay.receive(peer, JSON.stringify({ id: 'e', name: 'bridge_enroll', namespace: 'rpc', args: { token, pub_key: key } }));
    await until(() => socket.last().id === 'e', 'enrolled');
    return { peer, socket, testString };
  };
  // Stage 2 over the greeting, the key list with it (an agent lists the client keys it takes).
  const stage2 = (key: string, testString: string, signer = key) =>
    JSON.stringify({
      id: 's2',
      name: 'auth_ssl',
      namespace: 'rpc',
      args: { signature: `signed:bridge-signin:${testString}:${signer}`, keys: { md5_keys: ['CLIENTKEY'] } },
    });

  const agent = await enrollAndGreet('server', 'AGENTKEY');
  relay.receive(agent.peer, stage2('AGENTKEY', agent.testString));
  await until(() => agent.socket.last().name === 'event', "the agent's announcement");

  // Seventeen frames right behind stage 2, in the same turn: sixteen wait and go, the last is dropped.
  const client = await enrollAndGreet('client', 'CLIENTKEY');
  relay.receive(client.peer, stage2('CLIENTKEY', client.testString));
  for (let i = 0; i < 17; i++) relay.receive(client.peer, `${agent.peer.id}\nframe ${i}`);
  const relayedBefore = relay.snapshot().frames_relayed;
  assert.equal(relayedBefore, 0, 'nothing is forwarded before the verdict');
  assert.deepEqual(client.socket.last().args, { name: 'bridge', args: { dropped: { destination: '', reason: 'queue-full' } } });
  await until(() => relay.snapshot().frames_relayed === 16, 'the sixteen held frames forwarded');
  const atAgent = agent.socket.sent.filter((f) => !f.startsWith('{'));
  assert.deepEqual(
    atAgent,
    Array.from({ length: 16 }, (_, i) => `${client.peer.id}\nframe ${i}`),
    'in order, named by the sender',
  );
  const replyAt = client.socket.sent.findIndex((f) => f.includes('"s2"'));
  assert.ok(replyAt > 0 && JSON.parse(client.socket.sent[replyAt]!).name === 'response', 'the client was signed in');

  // Behind a refused stage 2: dropped as from a peer not signed in, none reaches the agent.
  const forger = await enrollAndGreet('client', 'CLIENTKEY');
  relay.receive(forger.peer, stage2('CLIENTKEY', forger.testString, 'OTHERKEY'));
  relay.receive(forger.peer, `${agent.peer.id}\nforged`);
  await until(() => forger.socket.last().name === 'event', 'the drop notice');
  assert.deepEqual(forger.socket.last().args, { name: 'bridge', args: { dropped: { destination: '', reason: 'not-permitted' } } });
  assert.equal(relay.snapshot().frames_relayed, 16);
  assert.ok(!agent.socket.sent.some((f) => f.endsWith('forged')));
});
