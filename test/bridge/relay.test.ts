/**
 * Bridge conformance, part 2 (docs/bridge-protocol.md §2.5–§2.8) over real sockets: matching and
 * announcements, relay framing, drops and their reasons, limits (frame size, send queue), agent
 * replacement, heartbeat, and the HTTP endpoints.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes } from 'node:crypto';
import { ed25519Key, rsaKey, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, until, type TestBridge, nodeOnly } from './helpers.ts';
import { md5Of, signedInPeer } from './peers.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { WebSocket } from 'ws';

function fingerprint(key: TestKey): string {
  const pem = Buffer.from(key.pubKeyB64, 'base64').toString();
  const raw = Buffer.from(createPublicKey(pem).export({ format: 'jwk' }).x!, 'base64url');
  return `SHA256:${createHash('sha256').update(raw).digest('base64url')}`;
}

/** An agent accepting `clientKey` and a client holding it, signed in and matched. */
async function pair(t: Parameters<typeof startTestBridge>[0], bridge: TestBridge) {
  const agentKey = ed25519Key();
  const clientKey = rsaKey();
  const { peer: agent } = await signedInPeer(bridge, 'server', agentKey, { md5Keys: [md5Of(clientKey)], nickname: 'web-1' });
  t.after(() => agent.close());
  const { peer: client, announcement } = await signedInPeer(bridge, 'client', clientKey, { nickname: 'alice' });
  t.after(() => client.close());
  const agentId = announcement.available_connections[0]!;
  const clientAnnouncement = await agent.nextAnnouncement(0, (a) => a.available_connections.length === 1);
  const clientId = clientAnnouncement.available_connections[0]!;
  return { agent, client, agentId, clientId, agentKey, clientKey };
}

test('announcements: matching peers of the opposite kind only, with their details; updates as peers come, go and change keys', async (t) => {
  const bridge = await startTestBridge(t);
  const key1 = rsaKey();
  const key2 = rsaKey();
  const agentKey = ed25519Key();
  const { peer: agent, announcement: first } = await signedInPeer(bridge, 'server', agentKey, { md5Keys: [md5Of(key1)], nickname: 'web-1' });
  t.after(() => agent.close());
  assert.deepEqual(first, { available_connections: [], binary_frames: true, peers: [] }, 'an empty offer is still announced once keys are listed');

  const { peer: c1, announcement: a1 } = await signedInPeer(bridge, 'client', key1, { nickname: 'alice' });
  t.after(() => c1.close());
  assert.equal(a1.available_connections.length, 1);
  const agentId = a1.available_connections[0]!;
  assert.match(agentId, /^agent-[0-9a-f-]{36}$/);
  const [announced] = a1.peers as Array<{ online_since?: string }>;
  assert.match(announced?.online_since ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'when the host came online');
  assert.deepEqual(a1.peers, [
    {
      id: agentId,
      kind: 'agent',
      nickname: 'web-1',
      hostname: 'server-host',
      host_key_fingerprint: fingerprint(agentKey),
      access: 'key',
      online_since: announced!.online_since,
    },
  ]);
  const seenByAgent = await agent.nextAnnouncement(0, (a) => a.available_connections.length === 1);
  const c1Id = seenByAgent.available_connections[0]!;
  assert.match(c1Id, /^client-[0-9a-f-]{36}$/);
  const seenClient = (seenByAgent.peers as Array<{ online_since?: string }>)[0]!;
  assert.deepEqual(seenByAgent.peers, [
    { id: c1Id, kind: 'client', nickname: 'alice', hostname: 'client-host', host_key_fingerprint: null, access: 'key', online_since: seenClient.online_since },
  ]);

  // A client whose key the agent does not accept sees nothing, and the agent is not told about it.
  const agentSeen = agent.received.length;
  const { peer: c2, announcement: a2 } = await signedInPeer(bridge, 'client', key2, { nickname: 'bob' });
  t.after(() => c2.close());
  assert.deepEqual(a2, { available_connections: [], binary_frames: true, peers: [] });
  // A client cannot match through someone else's md5_key: only the key it signed in with counts.
  const { peer: c3, announcement: a3 } = await signedInPeer(bridge, 'client', rsaKey(), { md5Keys: [md5Of(key1)] });
  t.after(() => c3.close());
  assert.deepEqual(a3.available_connections, []);
  assert.equal(agent.received.slice(agentSeen).filter((m) => 'env' in m && m.env.name === 'event').length, 0);

  // The agent registers key2 (bridge_keys, unsolicited): bob is offered the agent, the agent both clients.
  const bobSince = c2.received.length;
  const agentSince = agent.received.length;
  agent.send({ name: 'bridge_keys', namespace: 'rpc', args: { md5_keys: [md5Of(key1), md5Of(key2)] } });
  assert.deepEqual((await c2.nextAnnouncement(bobSince)).available_connections, [agentId]);
  const both = await agent.nextAnnouncement(agentSince);
  assert.equal(both.available_connections.length, 2);
  assert.ok(both.available_connections.includes(c1Id));

  // With an id, bridge_keys is answered.
  const ack = await agent.request('bridge_keys', { md5_keys: [md5Of(key2)] });
  assert.deepEqual(ack.args, { result: 'success' });
  await until(() => c1.lastAnnouncement()?.available_connections.length === 0, 'alice loses the agent');

  // A second agent comes: bob is offered both; when it goes, bob is told again.
  const agent2Key = ed25519Key();
  const since2 = c2.received.length;
  const { peer: agent2 } = await signedInPeer(bridge, 'server', agent2Key, { md5Keys: [md5Of(key2)], nickname: 'db-1' });
  const withTwo = await c2.nextAnnouncement(since2);
  assert.equal(withTwo.available_connections.length, 2);
  assert.deepEqual(withTwo.peers.map((p) => p.nickname).sort(), ['db-1', 'web-1']);
  const since3 = c2.received.length;
  agent2.close();
  assert.deepEqual((await c2.nextAnnouncement(since3)).available_connections, [agentId]);
  assert.ok((await bridge.metrics()).announcements >= 8);
});

test('relay frames: the first line becomes the sender id, and the body arrives byte-identical, never parsed', async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client, agentId, clientId } = await pair(t, bridge);
  const bodies = [
    '{"id":"1","name":"auth_ssl","namespace":"rpc","args":{"md5_key":"x"}}',
    `hsc1.${randomBytes(3000).toString('base64')}`,
    'héllo ✓ 𝄞 — not ASCII',
    'line one\nline two\n\nline four\n',
    '',
    '{',
    randomBytes(2048)
      .toString('latin1')
      .replace(/[\ud800-\udfff]/g, '?'),
    // Frame sizes around the bridge's write paths (joined below 8 KiB; 16-bit and 64-bit lengths).
    'a'.repeat(8 * 1024 - 50),
    `{"big":"${randomBytes(15_000).toString('base64')}"}`,
    'z'.repeat(70_000),
  ];
  for (const body of bodies) {
    const since = agent.received.length;
    client.ws.send(`${agentId}\n${body}`);
    assert.equal(await agent.nextFrame(since), `${clientId}\n${body}`);
    const back = client.received.length;
    agent.ws.send(Buffer.from(`${clientId}\n${body}`, 'utf8'), { binary: false });
    assert.equal(await client.nextFrame(back), `${agentId}\n${body}`);
  }
  const m = await bridge.metrics();
  assert.equal(m.frames_relayed, bodies.length * 2);
  const expectedBytes = bodies.reduce((n, b) => n + Buffer.byteLength(`${clientId}\n${b}`) + Buffer.byteLength(`${agentId}\n${b}`), 0);
  assert.equal(m.bytes_relayed, expectedBytes);
  assert.equal(
    Object.values(m.drops).reduce((a, b) => a + b, 0),
    0,
  );
});

test('drops: unknown destination, not announced, malformed; the sender is told and the counters move', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, agentId } = await pair(t, bridge);
  const { peer: stranger } = await signedInPeer(bridge, 'client', rsaKey());
  t.after(() => stranger.close());

  let since = stranger.received.length;
  stranger.ws.send(`${agentId}\n{"id":"x"}`);
  assert.deepEqual(await stranger.nextDropped(since), { destination: agentId, reason: 'not-permitted' });

  const ghost = 'agent-00000000-0000-4000-8000-000000000000';
  since = client.received.length;
  client.ws.send(`${ghost}\nhello`);
  assert.deepEqual(await client.nextDropped(since), { destination: ghost, reason: 'unknown-destination' });

  for (const bad of ['no newline at all', `\nempty destination`, `${'a'.repeat(200)}\nheader too long`, 'bad id\nspace in it']) {
    since = client.received.length;
    client.ws.send(bad);
    assert.deepEqual(await client.nextDropped(since), { destination: '', reason: 'malformed' });
  }
  // Binary frames are relay frames too (hsc2), judged by the same first line.
  since = client.received.length;
  client.ws.send(Buffer.from('bad id\nbinary'), { binary: true });
  assert.deepEqual(await client.nextDropped(since), { destination: '', reason: 'malformed' });
  since = stranger.received.length;
  stranger.ws.send(Buffer.from(`${agentId}\nbinary`), { binary: true });
  assert.deepEqual(await stranger.nextDropped(since), { destination: agentId, reason: 'not-permitted' });

  const { drops } = await bridge.metrics();
  assert.deepEqual(drops, { 'unknown-destination': 1, 'not-permitted': 2, 'queue-full': 0, 'too-large': 0, malformed: 5 });
});

test('binary relay frames (hsc2) leave as binary with the first line rewritten and the body byte for byte; a peer not signed in gets none through', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, agent, agentId, clientId } = await pair(t, bridge);
  // Bytes that are not UTF-8 (a sealed frame's are random): a text frame could not carry them.
  const body = Buffer.from([0x00, 0xff, 0xfe, 0x0a, 0x80, 0xc3, 0x28, 0x7b]);
  for (const size of [body.length, 20_000]) {
    const payload = Buffer.concat([body, Buffer.alloc(size - body.length, 0xa5)]);
    let since = agent.received.length;
    client.ws.send(Buffer.concat([Buffer.from(`${agentId}\n`), payload]), { binary: true });
    const toAgent = (await agent.nextFrameKind(since)) as { frame: string; binary: boolean };
    assert.equal(toAgent.binary, true, 'a binary frame stays binary');
    const raw = agent.received.slice(since).find((m) => 'frame' in m) as { frame: string };
    assert.equal(raw.frame.slice(0, clientId.length + 1), `${clientId}\n`, 'the first line names the sender');
    since = client.received.length;
    agent.ws.send(Buffer.concat([Buffer.from(`${clientId}\n`), payload]), { binary: true });
    assert.equal((await client.nextFrameKind(since)).binary, true);
  }
  // The payload arrives byte for byte: checked on a raw socket listener of the agent.
  const exact = new Promise<Buffer>((resolve) => agent.ws.once('message', (data, isBinary) => isBinary && resolve(data as Buffer)));
  client.ws.send(Buffer.concat([Buffer.from(`${agentId}\n`), body]), { binary: true });
  assert.deepEqual(await exact, Buffer.concat([Buffer.from(`${clientId}\n`), body]));

  // Before sign-in a binary frame is neither relayed nor parsed: dropped as not permitted; a big one closes the sender.
  const early = new WebSocket(bridge.url);
  const dropped = new Promise<string>((resolve) => early.on('message', (d) => String(d).includes('dropped') && resolve(String(d))));
  await new Promise((r) => early.once('open', r));
  early.send(Buffer.from(`${agentId}\nearly`), { binary: true });
  assert.match(await dropped, /not-permitted/);
  const closed = new Promise<number>((resolve) => early.once('close', (code) => resolve(code)));
  early.send(Buffer.concat([Buffer.from(`${agentId}\n`), Buffer.alloc(20_000)]), { binary: true });
  assert.equal(await closed, 1009);
});

test('frame size: over the relay limit (4 MiB + 128 bytes) closes the sender (1009); a frame that would grow past it when relayed is dropped (too-large)', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, agent, agentId, clientId } = await pair(t, bridge);
  const limit = LIMITS.maxRelayFrameBytes;
  // agent-<uuid> is one character shorter than client-<uuid>: agent → client shrinks by one byte.
  const toClient = `${clientId}\n${'x'.repeat(limit - clientId.length - 1)}`;
  let since = client.received.length;
  agent.ws.send(toClient);
  assert.equal((await client.nextFrame(since)).length, limit - 1);
  // client → agent at the limit would arrive one byte over it: dropped, the sender told, not closed.
  const toAgent = `${agentId}\n${'x'.repeat(limit - agentId.length - 1)}`;
  since = client.received.length;
  client.ws.send(toAgent);
  assert.deepEqual(await client.nextDropped(since), { destination: agentId, reason: 'too-large' });
  // One byte over the limit: the sender is closed.
  client.ws.send(`${toAgent}y`);
  assert.equal((await client.closed).code, 1009);
  await until(async () => (await bridge.metrics()).drops['too-large'] === 2, 'too-large counted');
  await agent.nextAnnouncement(0, (a) => a.available_connections.length === 0);
});

test('a receiver that does not read: frames for it are dropped (queue-full), and after 30 s over the bound it is closed (1013)', {
  skip: nodeOnly('Workers sockets expose no bufferedAmount; the runtime applies back-pressure'),
}, async (t) => {
  const bridge = await startTestBridge(t, { config: { maxQueueBytes: 256 * 1024 } });
  const { client, agent, agentId } = await pair(t, bridge);
  // The agent stops reading its socket: kernel buffers fill, then the bridge's send queue for it.
  (agent.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  const chunk = `${agentId}\n${'q'.repeat(128 * 1024)}`;
  const since = client.received.length;
  let sent = 0;
  for (let batch = 0; batch < 400 && (await bridge.metrics()).drops['queue-full'] === 0; batch++) {
    for (let i = 0; i < 8; i++, sent++) client.ws.send(chunk);
    await until(async () => (await bridge.metrics()).frames_relayed + (await bridge.metrics()).drops['queue-full'] >= sent, 'the bridge to handle the batch');
  }
  assert.ok((await bridge.metrics()).drops['queue-full'] > 0, 'queue-full reached');
  assert.deepEqual(await client.nextDropped(since), { destination: agentId, reason: 'queue-full' });

  await bridge.clock.advance(29);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).connections.agent, 1);
  await bridge.clock.advance(1);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).closes['1013'], 1);
  assert.equal((await bridge.metrics()).connections.agent, 0);
  // The client is told the agent is gone.
  await client.nextAnnouncement(since, (a) => a.available_connections.length === 0);
});

test('a second connection with the same agent key replaces the first (4009); clients may hold several', async (t) => {
  const bridge = await startTestBridge(t);
  const { agent: first, client, agentId, agentKey, clientKey } = await pair(t, bridge);
  const since = client.received.length;
  const { peer: second } = await signedInPeer(bridge, 'server', agentKey, { md5Keys: [md5Of(clientKey)], enroll: false });
  t.after(() => second.close());
  assert.equal((await first.closed).code, 4009);
  const now = await client.nextAnnouncement(since, (a) => a.available_connections.length === 1);
  assert.notEqual(now.available_connections[0], agentId, 'the new connection has a new id');
  assert.equal((await bridge.metrics()).connections.agent, 1);

  const { peer: again } = await signedInPeer(bridge, 'client', clientKey, { enroll: false });
  t.after(() => again.close());
  assert.equal((await bridge.metrics()).connections.client, 2);
  assert.equal((await bridge.metrics()).closes['4009'], 1);
});

test('heartbeat: pings every 20 s; a peer that answers stays, one silent for 60 s is closed (4000)', {
  skip: nodeOnly("a Durable Object cannot send pings; workerd answers peers' pings itself"),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent, client } = await pair(t, bridge);
  let pings = 0;
  client.ws.on('ping', () => pings++);
  // The agent stops reading: it neither sees the pings nor answers them.
  (agent.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  const since = client.received.length;

  await bridge.clock.advance(19);
  await bridge.sweep();
  await bridge.clock.advance(1);
  await bridge.sweep();
  await until(async () => pings === 1 && (await bridge.metrics()).pongs === 1, 'the client to be pinged and answer');
  await bridge.clock.advance(39);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).connections.agent, 1, 'not yet 60 s');
  await bridge.clock.advance(1);
  await bridge.sweep();
  assert.equal((await bridge.metrics()).closes['4000'], 1);
  assert.equal((await bridge.metrics()).connections.agent, 0, 'the silent agent is closed');
  assert.equal((await bridge.metrics()).connections.client, 1, 'the client answered the ping at t=20 s');
  await client.nextAnnouncement(since, (a) => a.available_connections.length === 0);
  await until(() => pings === 2, 'the second ping (t=59 s, 39 s after the first)');
});

test("a peer's ping is answered with its payload (the agent's heartbeat), and counts as no relayed frame", async (t) => {
  const bridge = await startTestBridge(t);
  const { agent } = await pair(t, bridge);
  const payload = randomBytes(16);
  const pong = new Promise<Buffer>((resolve) => agent.ws.once('pong', resolve));
  agent.ws.ping(payload);
  assert.deepEqual(await pong, payload);
  assert.equal((await bridge.metrics()).frames_relayed, 0);
});

test('closing the bridge also ends a socket that connected during its shutdown grace', {
  skip: nodeOnly('the Node bridge process closes its own sockets'),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const { agent } = await pair(t, bridge);
  // The agent stops reading, so the bridge waits its whole grace for the agent's close handshake.
  (agent.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  const closing = bridge.close();
  const late = new WebSocket(bridge.url);
  const lateClosed = new Promise<number>((resolve) => late.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    late.once('open', () => resolve());
    late.once('error', reject);
  });
  await closing;
  await lateClosed;
  assert.equal(late.readyState, WebSocket.CLOSED);
});

test('GET /healthz and /metrics', async (t) => {
  const bridge = await startTestBridge(t);
  const { client, agent, agentId } = await pair(t, bridge);
  const since = agent.received.length;
  client.ws.send(`${agentId}\nping`);
  await agent.nextFrame(since);

  const health = await fetch(`${bridge.httpUrl}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { ok: true });

  // /metrics is the operator's: with the admin secret from anywhere (Node also serves loopback without it).
  const metrics = (await (await fetch(`${bridge.httpUrl}/metrics`, { headers: { authorization: `Bearer ${bridge.adminSecret}` } })).json()) as Record<
    string,
    unknown
  >;
  assert.deepEqual(metrics.connections, { agent: 1, client: 1, pending: 0 });
  assert.equal(metrics.connections_opened, 2);
  assert.equal(metrics.frames_relayed, 1);
  assert.equal(metrics.bytes_relayed, Buffer.byteLength(`client-00000000-0000-0000-0000-000000000000\nping`));
  assert.deepEqual(metrics.drops, { 'unknown-destination': 0, 'not-permitted': 0, 'queue-full': 0, 'too-large': 0, malformed: 0 });
  assert.equal(metrics.signins, 2);
  assert.equal(metrics.enrollments, 2);
  assert.equal(metrics.signin_failures, 0);
  assert.equal(typeof metrics.uptime_seconds, 'number');

  const relayOverHttp = await fetch(`${bridge.httpUrl}/relay`);
  assert.equal(relayOverHttp.status, 426);
  assert.equal((await fetch(`${bridge.httpUrl}/nope`)).status, 404);
});
