/**
 * Inside workerd: the bridge sharded by host (docs/bridge-protocol.md §2.10). Each host's agent lives
 * in a Durable Object of its own (`/relay/host/<fp>`); a client reaches two hosts at once by joining
 * each one's room; frames are relayed with no call between objects (counted); one host's object
 * sleeps while the other relays; a revocation cuts the key off in every object; the directory
 * (`/relay/directory`, one object per socket) announces hosts coming and going from the D1 index;
 * the counters of all objects are summed by /metrics.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { MetricsSnapshot } from '../../relay/metrics.ts';
import type { RelayHub } from './relay-hub.ts';
import { objectCounters } from './test-hooks.ts';
import { adminHeaders, HubPeer, hubFetch, hubJson, makeKey, roomPath, signedInPeer, type TestKey } from '../../../test-workers/harness.mts';

let scopes = 0;
const newScope = (what: string) => `${what}-${Date.now().toString(36)}-${++scopes}`;
const stubOf = (name: string) => env.RELAY_HUB.get(env.RELAY_HUB.idFromName(name));
const objectOf = (scope: string, key: TestKey) => `${scope}${roomPath(key).slice('/relay'.length)}`;
const callsOf = (object: string) => objectCounters.crossObjectCalls.get(object) ?? 0;

/** An agent in its own room, listing `md5Keys`. */
async function hostIn(scope: string, md5Keys: string[]) {
  const key = await makeKey('ed25519');
  const { peer } = await signedInPeer(scope, 'server', key, { md5Keys, nickname: `web-${crypto.randomUUID().slice(0, 8)}`, path: roomPath(key) });
  return { key, agent: peer, object: objectOf(scope, key) };
}

/** The client joins a host's room (signing in there with its key) and learns the agent's id. */
async function clientIn(scope: string, clientKey: TestKey, host: { key: TestKey }, enroll = false) {
  const { peer, announcement } = await signedInPeer(scope, 'client', clientKey, { path: roomPath(host.key), enroll });
  expect(announcement.peers.map((p) => p.host_key_fingerprint)).toEqual([host.key.fingerprint]);
  return { client: peer, agentId: announcement.available_connections[0]! };
}

async function enrolledClient(scope: string): Promise<TestKey> {
  const key = await makeKey('rsa');
  const peer = await HubPeer.connect(scope, 'client');
  expect((await peer.enroll(key)).name).toBe('response');
  peer.close();
  return key;
}

/** Sends `n` frames client → agent and back through one room; returns what the agent received last. */
async function roundTrips(p: { client: HubPeer; agent: HubPeer; agentId: string }, n: number, label: string) {
  let clientId = '';
  for (let i = 0; i < n; i++) {
    const atAgent = p.agent.nextFrame();
    p.client.sendFrame(p.agentId, `${label} ${i}`);
    const frame = await atAgent;
    clientId = frame.slice(0, frame.indexOf('\n'));
    expect(frame).toBe(`${clientId}\n${label} ${i}`);
    const atClient = p.client.nextFrame();
    p.agent.sendFrame(clientId, `re: ${label} ${i}`);
    expect(await atClient).toBe(`${p.agentId}\nre: ${label} ${i}`);
  }
}

describe('the bridge sharded by host', () => {
  it('puts two hosts in two objects; one client reaches both at once; frames cross no object', async () => {
    const scope = newScope('two-hosts');
    const clientKey = await enrolledClient(scope);
    const a = await hostIn(scope, [clientKey.md5]);
    const b = await hostIn(scope, [clientKey.md5]);
    expect(a.object).not.toBe(b.object);
    const inA = await clientIn(scope, clientKey, a);
    const inB = await clientIn(scope, clientKey, b);
    const before = [callsOf(a.object), callsOf(b.object), callsOf(scope)];
    // Both rooms at once: interleaved round trips, each routed inside its own object.
    await Promise.all([roundTrips({ ...inA, agent: a.agent }, 10, 'to a'), roundTrips({ ...inB, agent: b.agent }, 10, 'to b')]);
    expect([callsOf(a.object), callsOf(b.object), callsOf(scope)]).toEqual(before);
    // Each object counted its own frames; /metrics sums the objects.
    await Promise.all([stubOf(a.object).flushMetrics(), stubOf(b.object).flushMetrics()]);
    const total = await hubJson<MetricsSnapshot & { objects: number }>(scope, '/metrics');
    expect(total.frames_relayed).toBe(40);
    expect(total.connections).toMatchObject({ agent: 2, client: 2 });
    expect(total.objects).toBeGreaterThanOrEqual(3);
    // A client in room A cannot address the agent of room B: that object does not know it.
    const since = inA.client.received.length;
    inA.client.sendFrame(inB.agentId, 'wrong room');
    await expect.poll(() => inA.client.eventsSince(since).length).toBe(1);
    expect(JSON.stringify(inA.client.eventsSince(since)[0])).toContain('unknown-destination');
    for (const p of [a.agent, b.agent, inA.client, inB.client]) p.close();
  });

  it("refuses an agent in another host's room (403, closed) and agents in the directory", async () => {
    const scope = newScope('wrong-room');
    const a = await hostIn(scope, []);
    const other = await makeKey('ed25519');
    const intruder = await HubPeer.connect(scope, 'server', [], undefined, roomPath(a.key));
    expect((await intruder.enroll(other)).name).toBe('response');
    const reply = await intruder.signIn(other);
    expect(reply.name).toBe('error');
    expect(JSON.stringify(reply.args)).toContain('403');
    expect((await intruder.closed).code).toBe(1008);
    const inDirectory = await HubPeer.connect(scope, 'server', [], undefined, '/relay/directory');
    expect(JSON.stringify((await inDirectory.signIn(other)).args)).toContain('403');
    a.agent.close();
  });

  it("lets one host's object sleep while the other relays, and wakes it for its next frame", async () => {
    const scope = newScope('asleep');
    const clientKey = await enrolledClient(scope);
    const a = await hostIn(scope, [clientKey.md5]);
    const b = await hostIn(scope, [clientKey.md5]);
    const inA = await clientIn(scope, clientKey, a);
    const inB = await clientIn(scope, clientKey, b);
    await roundTrips({ ...inA, agent: a.agent }, 1, 'a awake');
    await evictDurableObject(stubOf(a.object));
    const wakeUps = objectCounters.wakeUps.get(a.object) ?? 0;
    await roundTrips({ ...inB, agent: b.agent }, 20, 'b relays');
    expect(objectCounters.wakeUps.get(a.object) ?? 0).toBe(wakeUps);
    // A's sockets stayed open: its next frame wakes it, with the same ids.
    await roundTrips({ ...inA, agent: a.agent }, 2, 'a again');
    expect(objectCounters.wakeUps.get(a.object)).toBe(wakeUps + 1);
    for (const p of [a.agent, b.agent, inA.client, inB.client]) p.close();
  });

  it('cuts a revoked key off in every object it signed in to (4003), counted in the reply', async () => {
    const scope = newScope('revoke');
    const clientKey = await enrolledClient(scope);
    const a = await hostIn(scope, [clientKey.md5]);
    const b = await hostIn(scope, [clientKey.md5]);
    const inA = await clientIn(scope, clientKey, a);
    const inB = await clientIn(scope, clientKey, b);
    const { peer: directory } = await signedInPeer(scope, 'client', clientKey, { path: '/relay/directory', enroll: false });
    const res = await hubFetch(scope, '/admin/revoke', { method: 'POST', headers: adminHeaders(), body: JSON.stringify({ key: clientKey.md5 }) });
    expect(await res.json()).toMatchObject({ revoked: { md5_key: clientKey.md5 }, disconnected: 3 });
    for (const p of [inA.client, inB.client, directory]) expect((await p.closed).code).toBe(4003);
    // The agents are told their client left, and the key cannot sign in again in any room.
    expect((await a.agent.nextAnnouncement(0, (x) => x.available_connections.length === 0)).peers).toEqual([]);
    const again = await HubPeer.connect(scope, 'client', [], undefined, roomPath(b.key));
    expect(JSON.stringify((await again.signIn(clientKey)).args)).toContain('401');
    again.close();
    a.agent.close();
    b.agent.close();
  });

  it('announces hosts coming and going to a directory socket, from the D1 index, with the room of each', async () => {
    const scope = newScope('directory');
    const clientKey = await enrolledClient(scope);
    const { peer: directory, announcement: first } = await signedInPeer(scope, 'client', clientKey, { path: '/relay/directory', enroll: false });
    expect(first).toEqual({ available_connections: [], peers: [] });
    const poll = () => hubJson<{ objects: number; sockets: number }>(scope, '/__test/poll-directories', { method: 'POST' });
    const a = await hostIn(scope, [clientKey.md5]);
    let since = directory.received.length;
    expect(await poll()).toEqual({ objects: 1, sockets: 1 });
    const withA = await directory.nextAnnouncement(since);
    expect(withA.peers).toEqual([
      expect.objectContaining({ kind: 'agent', host_key_fingerprint: a.key.fingerprint, access: 'key', room: roomPath(a.key).slice(7) }),
    ]);
    // Nothing changed: the poll announces nothing (the tag is the same).
    since = directory.received.length;
    await poll();
    const b = await hostIn(scope, [clientKey.md5]);
    // The directory's own alarm does the same poll.
    const [dirObject] = (
      await env.DB.prepare("SELECT object FROM bridge_sessions WHERE scope = ? AND object LIKE '%/directory/%'").bind(scope).all<{ object: string }>()
    ).results;
    // Under test hooks an object sets alarms once told to; then the poll is due directoryPollSeconds on.
    await runInDurableObject(stubOf(dirObject!.object), (instance: RelayHub) => instance.setAlarms(true));
    expect(await runDurableObjectAlarm(stubOf(dirObject!.object))).toBe(true);
    const withBoth = await directory.nextAnnouncement(since);
    expect(withBoth.peers.map((p) => p.host_key_fingerprint)).toEqual([a.key.fingerprint, b.key.fingerprint]);
    expect(directory.eventsSince(since)).toHaveLength(1);
    // A goes: its object removes its rows; the next poll announces B alone.
    since = directory.received.length;
    a.agent.close();
    await a.agent.closed;
    await expect
      .poll(async () => {
        await poll();
        return directory.eventsSince(since).length;
      })
      .toBe(1);
    expect((await directory.nextAnnouncement(since)).peers.map((p) => p.host_key_fingerprint)).toEqual([b.key.fingerprint]);
    // A relay frame on the directory goes nowhere.
    const dropped = directory.received.length;
    directory.sendFrame(withBoth.available_connections[1]!, 'not here');
    await expect.poll(() => directory.eventsSince(dropped).length).toBe(1);
    expect(JSON.stringify(directory.eventsSince(dropped)[0])).toContain('unknown-destination');
    directory.close();
    b.agent.close();
  });
});
