/**
 * End to end through the bridge on loopback: a real bridge, a real agent (sim) that dials out to it,
 * and a client that speaks the hsc1 channel. Sign-in, a request, an event, a queued job; then what a
 * bridge sees (no plaintext) and what happens when frames are altered or replayed.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startClientHandshake, ChannelError, parseChannelClosedNotice, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { agentFor, clientFor } from '../helpers/agent.ts';
import { rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { nodeOnly, startTestBridge, until } from '../bridge/helpers.ts';
import { idOf, hostRoomUrl, signedInPeer, type TestPeer } from '../bridge/peers.ts';

interface Sealed {
  channel: SecureChannel;
  agentId: string;
  peer: TestPeer;
  /** Every relay frame body the client sent or received (what the bridge carried). */
  carried: string[];
  /** Events opened while waiting for replies. */
  events: Array<Record<string, unknown>>;
  /** The sealed C2 arguments (the key proof) to send first. */
  c2: unknown;
  /** Index in `peer.received` of the next frame to open: every sealed frame is opened once, in order. */
  cursor: number;
  hostFingerprint: string;
}

function pem(key: TestKey) {
  return {
    clientKeyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    clientSpkiPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
  };
}

/** Bridge + agent joined to it + an RSA client key registered for `admin` on the agent and the bridge. */
async function setup(t: TestContext) {
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  const admin = await clientFor(t, agent, 'admin');
  const token = (await admin.request('rpc', 'auth_token', { token: '' })).name === 'error' ? await admin.login('admin') : '';
  const registered = await admin.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof: signatureProof(key, 'register-proof', token) });
  assert.equal(registered.name, 'response', JSON.stringify(registered.args));
  return { bridge, agent, key };
}

/** A client in the host room of the bridge's one agent (docs/bridge-protocol.md §2.10), found through the directory. */
async function openChannel(t: TestContext, bridge: Awaited<ReturnType<typeof startTestBridge>>, key: TestKey, enroll = true): Promise<Sealed> {
  const { peer } = await signedInPeer(bridge, 'client', key, { enroll: false, url: await hostRoomUrl(bridge, key, 'simhost', !enroll) });
  t.after(() => peer.close());
  const carried: string[] = [];
  await until(() => (peer.lastAnnouncement()?.peers ?? []).some((p) => p.nickname === 'simhost'), 'the agent announced to the client');
  const agentId = idOf(peer.lastAnnouncement()!, 'simhost');
  const hs = await startClientHandshake(pem(key));
  const c1 = JSON.stringify({ id: 'c1', name: 'auth_ssl', namespace: 'rpc', args: hs.c1Args });
  carried.push(c1);
  const a1Frame = peer.nextFrame();
  peer.ws.send(`${agentId}\n${c1}`);
  const a1Text = (await a1Frame).split('\n').slice(1).join('\n');
  carried.push(a1Text);
  const a1 = JSON.parse(a1Text) as { name: string; args: unknown };
  assert.equal(a1.name, 'response', a1Text);
  const result = await hs.finish(a1.args);
  return {
    channel: result.channel,
    agentId,
    peer,
    carried,
    events: [],
    hostFingerprint: result.hostKeyFingerprint,
    c2: result.c2Args,
    cursor: peer.received.length,
  };
}

/** The next sealed frame from the agent, opened (frames are opened once each, in arrival order). */
async function nextSealed(s: Sealed): Promise<Record<string, unknown>> {
  const frame = await s.peer.nextFrame(s.cursor);
  s.cursor = s.peer.received.findIndex((m, i) => i >= s.cursor && 'frame' in m && m.frame === frame) + 1;
  const body = frame.split('\n').slice(1).join('\n');
  s.carried.push(body);
  return JSON.parse(await s.channel.open(body)) as Record<string, unknown>;
}

/** Sends a sealed request and opens frames until its reply; events on the way are kept. */
async function sealedRequest(s: Sealed, envelope: Record<string, unknown>): Promise<Record<string, unknown>> {
  const frame = await s.channel.seal(JSON.stringify(envelope));
  s.carried.push(frame);
  s.peer.ws.send(`${s.agentId}\n${frame}`);
  for (;;) {
    const opened = await nextSealed(s);
    if (opened.id === envelope.id && opened.name !== 'event') return opened;
    s.events.push(opened);
  }
}

test('through the bridge: the channel signs in, serves a request, a queued job and its events', async (t) => {
  const { bridge, agent, key } = await setup(t);
  const s = await openChannel(t, bridge, key);
  assert.equal(s.hostFingerprint, agent.services.hostKey.fingerprint, "the client sees the agent's real host key");
  const signIn = await sealedRequest(s, { id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: s.c2 });
  assert.equal(signIn.name, 'response', JSON.stringify(signIn));
  assert.equal((signIn.args as [string, number])[1], 300);

  const query = await sealedRequest(s, { id: 'q', name: 'query', namespace: 'rpc', args: {} });
  assert.equal((query.args as Record<string, string>)['admin/users'], 'read/write', "signed in as admin (the key's owner)");

  const subscribed = await sealedRequest(s, { id: 'sub', name: 'subscribe', namespace: 'events', args: ['dispatcher'] });
  assert.deepEqual(subscribed.args, { subscribe: ['dispatcher'] });

  const MARKER = 'PLAINTEXT-MARKER-7f3a';
  const run = await sealedRequest(s, { id: 'run', name: 'dispatcher', namespace: 'rpc', args: { action: 'run', bridged: `echo ${MARKER}` } });
  assert.deepEqual(run.args, { started: ['bridged'] });
  const finished = (e: Record<string, unknown>) => {
    const payload = (e.args as { args?: Record<string, unknown> }).args;
    return e.name === 'event' && payload?.proc_id === 'bridged' && payload.state === 'finished' ? payload : null;
  };
  let done = s.events.map(finished).find((p) => p !== null) ?? null;
  while (!done) done = finished(await nextSealed(s));
  assert.equal(done.log, `${MARKER}\n`);
  assert.equal(done.success, 'true');

  // What the bridge carried: sealed frames only after the handshake, and no plaintext of the job.
  assert.ok(
    s.carried.slice(2).every((b) => b.startsWith('hsc1.')),
    'every frame after the handshake is sealed',
  );
  assert.ok(!s.carried.some((b) => b.includes(MARKER) || b.includes('dispatcher')), 'the bridge never saw the command, its output or the class');
  const audit = agent.services.audit.recent(10).find((r) => r.transport === 'bridge' && r.action === 'run');
  assert.equal(audit?.user, 'admin');
});

test('a parked agent (Node: idle sockets parked, docs/bridge-protocol.md §2.7) serves a sealed request as when awake', {
  skip: nodeOnly('parking is how the Node bridge keeps idle sockets small'),
}, async (t) => {
  const { bridge, key } = await setup(t);
  const s = await openChannel(t, bridge, key);
  await sealedRequest(s, { id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: s.c2 });
  await bridge.clock.advance(6);
  await bridge.sweep();
  const parked = await bridge.metrics();
  assert.equal(parked.parking.parked, parked.connections.agent + parked.connections.client, 'the agent and the client are parked');
  assert.ok(parked.connections.agent === 1 && parked.parking.parked >= 2);

  const query = await sealedRequest(s, { id: 'q', name: 'query', namespace: 'rpc', args: {} });
  assert.equal((query.args as Record<string, string>)['admin/users'], 'read/write');
  const woken = await bridge.metrics();
  assert.equal(woken.parking.wakes - parked.parking.wakes, 2, 'the client woke by its frame, the agent by the frame for it');
});

test('a bridge that alters, replays or drops a frame kills the channel visibly', async (t) => {
  const { bridge, key } = await setup(t);
  const s = await openChannel(t, bridge, key);
  await sealedRequest(s, { id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: s.c2 });

  // Replay: the client sends an earlier frame again (as a bridge would); the agent drops the channel,
  // says so in one plain notice, and answers nothing more on it.
  const frame = await s.channel.seal(JSON.stringify({ id: 'q1', name: 'query', namespace: 'rpc', args: {} }));
  const first = s.peer.nextFrame();
  s.peer.ws.send(`${s.agentId}\n${frame}`);
  await s.channel.open((await first).split('\n').slice(1).join('\n'));
  s.peer.ws.send(`${s.agentId}\n${frame}`);
  const after = await s.channel.seal(JSON.stringify({ id: 'q2', name: 'query', namespace: 'rpc', args: {} }));
  const since = s.peer.received.length;
  s.peer.ws.send(`${s.agentId}\n${after}`);
  await new Promise((r) => setTimeout(r, 300));
  const frames = s.peer.received
    .slice(since)
    .filter((m) => 'frame' in m)
    .map((m) => (m as { frame: string }).frame.split('\n').slice(1).join('\n'));
  assert.equal(frames.filter((f) => f.startsWith('hsc1.')).length, 0, 'a replay ends the channel: no more replies');
  assert.equal(parseChannelClosedNotice(frames[0] ?? ''), 'the host closed the secure channel: a frame from you arrived twice (replayed on the way)');
  assert.ok(
    frames.every((f) => parseChannelClosedNotice(f) !== null),
    'later frames get the same plain notice, nothing else',
  );

  // Tampering on the way back: a fresh channel; the client detects a flipped bit in a reply.
  const t2 = await openChannel(t, bridge, key, false);
  const c2 = await t2.channel.seal(JSON.stringify({ id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: t2.c2 }));
  const reply = t2.peer.nextFrame();
  t2.peer.ws.send(`${t2.agentId}\n${c2}`);
  const body = (await reply).split('\n').slice(1).join('\n');
  const raw = Buffer.from(body.slice(5), 'base64');
  raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
  await assert.rejects(t2.channel.open(`hsc1.${raw.toString('base64')}`), (e: unknown) => e instanceof ChannelError && e.reason === 'tampered');
});

test('the agent refuses the unprotected (downgraded) bridge form', async (t) => {
  const { bridge, key } = await setup(t);
  const { peer } = await signedInPeer(bridge, 'client', key, { enroll: false, url: await hostRoomUrl(bridge, key, 'simhost') });
  t.after(() => peer.close());
  await until(() => (peer.lastAnnouncement()?.peers ?? []).some((p) => p.nickname === 'simhost'), 'the agent announced');
  const agentId = idOf(peer.lastAnnouncement()!, 'simhost');
  const reply = peer.nextFrame();
  peer.ws.send(
    `${agentId}\n${JSON.stringify({ id: 'old', name: 'auth_ssl', namespace: 'rpc', args: { action: 'auth_ssl', md5_key: (await import('../bridge/peers.ts')).md5Of(key) } })}`,
  );
  const answer = JSON.parse((await reply).split('\n').slice(1).join('\n')) as { name: string; args: { code: number } };
  assert.equal(answer.name, 'error');
  assert.equal(answer.args.code, 400);
});
