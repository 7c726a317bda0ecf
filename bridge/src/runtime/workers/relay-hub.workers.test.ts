/**
 * Inside workerd: the RelayHub Durable Object over real hibernatable WebSockets. Peers enroll, sign
 * in, are announced to each other and relay frames; the hub then loses its heap (the test route that
 * revives from attachments, and a real eviction with `evictDurableObject`) and must route on with
 * the same ids, without re-announcing, with its counters. Revocation cuts a peer off at once (4003);
 * a peer that does not sign in is closed (4001). Each test has its own hub (`/_hub/<name>/`).
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import type { MetricsSnapshot } from '../../relay/metrics.ts';
import type { RelayHub } from './relay-hub.ts';
import { adminHeaders, HubPeer, hubFetch, hubJson, hubStub, makeKey, matchedPair, relayBothWays, signedInPeer } from '../../../test-workers/harness.mts';

let hubs = 0;
const newHub = (what: string) => `${what}-${Date.now().toString(36)}-${++hubs}`;
const metrics = (hub: string) => hubJson<MetricsSnapshot>(hub, '/metrics');
/**
 * Lets the hub's alarms run the sweep: under test hooks a hub may sweep only when told to (as the
 * Node harness does). A hub without the `/__test/alarms` route (404) has them on already.
 */
async function alarmsOn(hub: string): Promise<void> {
  const res = await hubFetch(hub, '/__test/alarms', { method: 'POST', body: JSON.stringify({ on: true }) });
  const text = await res.text();
  if (!res.ok && res.status !== 404) throw new Error(`/__test/alarms: HTTP ${res.status} ${text}`);
}

describe('RelayHub', () => {
  it('matches, announces and relays both ways with the sender id as the first line', async () => {
    const hub = newHub('relay');
    const p = await matchedPair(hub);
    expect(p.agentId).toMatch(/^agent-[0-9a-f-]{36}$/);
    expect(p.clientId).toMatch(/^client-[0-9a-f-]{36}$/);
    const { atAgent, atClient } = await relayBothWays(p, 'hello');
    expect(atAgent).toBe(`${p.clientId}\nto agent: hello`);
    expect(atClient).toBe(`${p.agentId}\nto client: hello`);

    // A destination the sender was not offered is dropped, and the sender is told.
    const since = p.client.received.length;
    p.client.sendFrame('agent-00000000-0000-0000-0000-000000000000', 'nobody');
    await expect.poll(() => p.client.eventsSince(since).length).toBe(1);
    expect(JSON.stringify(p.client.eventsSince(since)[0])).toContain('unknown-destination');

    const m = await metrics(hub);
    expect(m.connections).toMatchObject({ agent: 1, client: 1, pending: 0 });
    expect(m.frames_relayed).toBe(2);
    expect(m.signins).toBe(2);
    expect(m.enrollments).toBe(2);
    p.agent.close();
    p.client.close();
  });

  it('keeps routing, ids and counters across a simulated wake-up (heap dropped, revived from attachments)', async () => {
    const hub = newHub('simulated');
    const p = await matchedPair(hub);
    await relayBothWays(p, 'before');
    const before = await metrics(hub);
    const agentSeen = p.agent.received.length;
    const clientSeen = p.client.received.length;

    const res = await hubJson<{ ok: boolean; peers: MetricsSnapshot['connections'] }>(hub, '/__test/hibernate', { method: 'POST' });
    expect(res.peers).toMatchObject({ agent: 1, client: 1, pending: 0 });

    const { atAgent, atClient } = await relayBothWays(p, 'after');
    expect(atAgent).toBe(`${p.clientId}\nto agent: after`);
    expect(atClient).toBe(`${p.agentId}\nto client: after`);
    // Nothing re-announced: each peer still may send where it was told it may.
    expect(p.agent.eventsSince(agentSeen)).toEqual([]);
    expect(p.client.eventsSince(clientSeen)).toEqual([]);

    const after = await metrics(hub);
    expect(after.frames_relayed).toBe(before.frames_relayed + 2);
    expect(after.signins).toBe(before.signins);
    expect(after.connections_opened).toBe(before.connections_opened);
    expect(after.announcements).toBe(before.announcements);

    await newPeerIsAnnounced(hub, p);
  });

  it('keeps routing, ids and counters across a real eviction with hibernated WebSockets', async () => {
    const hub = newHub('evicted');
    const p = await matchedPair(hub);
    await relayBothWays(p, 'before');
    const before = await metrics(hub);
    const agentSeen = p.agent.received.length;
    const clientSeen = p.client.received.length;

    // A mark on the instance in memory: gone after the eviction, so the heap really went.
    const marker = (instance: RelayHub) => (instance as RelayHub & { marker?: string }).marker;
    await runInDurableObject(hubStub(hub), (instance: RelayHub) => void Object.assign(instance, { marker: 'before eviction' }));
    expect(await runInDurableObject(hubStub(hub), marker)).toBe('before eviction');
    await evictDurableObject(hubStub(hub));

    // The first frame wakes the hub (constructor: revive); it must arrive as before.
    const { atAgent, atClient } = await relayBothWays(p, 'after eviction');
    expect(atAgent).toBe(`${p.clientId}\nto agent: after eviction`);
    expect(atClient).toBe(`${p.agentId}\nto client: after eviction`);
    expect(p.agent.eventsSince(agentSeen)).toEqual([]);
    expect(p.client.eventsSince(clientSeen)).toEqual([]);
    expect(await runInDurableObject(hubStub(hub), marker)).toBeUndefined();

    const after = await metrics(hub);
    expect(after.connections).toMatchObject({ agent: 1, client: 1, pending: 0 });
    expect(after.frames_relayed).toBe(before.frames_relayed + 2);
    expect(after.signins).toBe(before.signins);
    expect(after.enrollments).toBe(before.enrollments);

    await newPeerIsAnnounced(hub, p);

    // And once more, now with three peers asleep.
    await evictDurableObject(hubStub(hub));
    const again = await relayBothWays(p, 'second eviction');
    expect(again.atAgent).toBe(`${p.clientId}\nto agent: second eviction`);

    // A peer that goes while the hub sleeps: the close wakes it, and its partner is told.
    await evictDurableObject(hubStub(hub));
    const agentSince = p.agent.received.length;
    p.client.close();
    const told = await p.agent.nextAnnouncement(agentSince);
    expect(told.available_connections).not.toContain(p.clientId);
    expect((await metrics(hub)).connections).toMatchObject({ agent: 1, client: 1, pending: 0 });
  });

  it('relays a 3 MiB frame; a frame over the limit closes its sender (1009)', async () => {
    const hub = newHub('large');
    const p = await matchedPair(hub);
    const body = 'x'.repeat(3 * 1024 * 1024);
    const atAgent = p.agent.nextFrame();
    p.client.sendFrame(p.agentId, body);
    expect((await atAgent).length).toBe(p.clientId.length + 1 + body.length);
    p.client.sendFrame(p.agentId, 'y'.repeat(LIMITS.maxRelayFrameBytes));
    expect((await p.client.closed).code).toBe(1009);
    p.agent.close();
  });

  it('cuts a revoked key off at once (4003): its partner is told, and it cannot sign in again', async () => {
    const hub = newHub('revoke');
    const p = await matchedPair(hub);
    const clientSeen = p.client.received.length;
    const res = await hubFetch(hub, '/admin/revoke', { method: 'POST', headers: adminHeaders(), body: JSON.stringify({ key: p.agentKey.md5 }) });
    expect(res.status).toBe(200);
    const body = await res.json<{ revoked: { md5_key: string }; disconnected: number }>();
    expect(body).toMatchObject({ revoked: { md5_key: p.agentKey.md5 }, disconnected: 1 });
    expect((await p.agent.closed).code).toBe(4003);
    const told = await p.client.nextAnnouncement(clientSeen);
    expect(told).toEqual({ available_connections: [], binary_frames: true, peers: [] });

    // The same key on a new connection: refused (401), and the client cannot reach the old id.
    const again = await HubPeer.connect(hub, 'server', [p.clientKey.md5]);
    const reply = await again.signIn(p.agentKey);
    expect(reply.name).toBe('error');
    expect(JSON.stringify(reply.args)).toContain('401');
    const dropped = p.client.received.length;
    p.client.sendFrame(p.agentId, 'still there?');
    await expect.poll(() => p.client.eventsSince(dropped).length).toBe(1);
    expect((await metrics(hub)).revocation_cutoffs).toBe(1);
    again.close();
    p.client.close();
  });

  it('revocation by key id reaches a hub that slept, and wrong admin secrets are refused', async () => {
    const hub = newHub('revoke-id');
    const p = await matchedPair(hub);
    const keys = await hubJson<{ keys: Array<{ key_id: string; md5_key: string }> }>(hub, '/admin/keys', { headers: adminHeaders() });
    const clientKeyId = keys.keys.find((k) => k.md5_key === p.clientKey.md5)!.key_id;
    const refused = await hubFetch(hub, '/admin/revoke', {
      method: 'POST',
      headers: { ...adminHeaders(), Authorization: 'Bearer wrong' },
      body: JSON.stringify({ key: clientKeyId }),
    });
    expect(refused.status).toBe(401);
    // Read every body: an unread one keeps the request in flight, and eviction waits for it.
    await refused.text();

    await evictDurableObject(hubStub(hub));
    const agentSeen = p.agent.received.length;
    const res = await hubFetch(hub, '/admin/revoke', { method: 'POST', headers: adminHeaders(), body: JSON.stringify({ key: clientKeyId }) });
    expect(await res.json()).toMatchObject({ disconnected: 1 });
    expect((await p.client.closed).code).toBe(4003);
    expect(await p.agent.nextAnnouncement(agentSeen)).toEqual({ available_connections: [], binary_frames: true, peers: [] });
    p.agent.close();
  });

  it("a revocation written to D1 behind the hub's back reaches peers of a hub that sleeps between alarms", async () => {
    const hub = newHub('revoke-d1');
    await alarmsOn(hub);
    const p = await matchedPair(hub);
    await evictDurableObject(hubStub(hub));
    // As `wrangler d1 execute` would: the hub is not told.
    await env.DB.prepare('UPDATE bridge_keys SET revoked_at = ? WHERE md5_key = ?').bind(Date.now(), p.clientKey.md5).run();
    // The re-read is due a minute after the last one; the alarm wakes a fresh instance each time.
    await hubJson(hub, '/__test/advance', { method: 'POST', body: JSON.stringify({ seconds: 61 }) });
    await evictDurableObject(hubStub(hub));
    expect(await runDurableObjectAlarm(hubStub(hub))).toBe(true);
    expect((await p.client.closed).code).toBe(4003);
    p.agent.close();
  });

  it('closes a peer that does not sign in (4001) once the deadline passes: on a test sweep and on the alarm', async () => {
    const hub = newHub('deadline');
    const lazy = await HubPeer.connect(hub, 'client');
    await hubJson(hub, '/__test/sweep', { method: 'POST' });
    await hubJson(hub, '/__test/advance', { method: 'POST', body: JSON.stringify({ seconds: 29 }) });
    await hubJson(hub, '/__test/sweep', { method: 'POST' });
    expect(await Promise.race([lazy.closed, new Promise((r) => setTimeout(() => r('open'), 100))])).toBe('open');
    await hubJson(hub, '/__test/advance', { method: 'POST', body: JSON.stringify({ seconds: 2 }) });
    await hubJson(hub, '/__test/sweep', { method: 'POST' });
    expect((await lazy.closed).code).toBe(4001);

    // The hub's own alarm does the same: it was set for the deadline.
    const hub2 = newHub('deadline-alarm');
    await alarmsOn(hub2);
    const lazy2 = await HubPeer.connect(hub2, 'server');
    const signedIn = await signedInPeer(hub2, 'client', await makeKey('ed25519'));
    await hubJson(hub2, '/__test/advance', { method: 'POST', body: JSON.stringify({ seconds: 31 }) });
    expect(await runDurableObjectAlarm(hubStub(hub2))).toBe(true);
    expect((await lazy2.closed).code).toBe(4001);
    expect((await metrics(hub2)).connections).toMatchObject({ client: 1, agent: 0, pending: 0 });
    signedIn.peer.close();
  });
});

describe('RelayHub store retention', () => {
  it('prunes D1 on its sweep a batch at a time, remembers the last prune across a wake-up, and takes the next batch on its own alarm', async () => {
    const hub = newHub('prune');
    await hubJson(hub, '/__test/config', { method: 'POST', body: JSON.stringify({ pruneBatchRows: 2 }) });
    // This test counts the whole auth_failures table of the D1 all hubs share: start empty.
    await hubJson(hub, '/__test/forget-keys', { method: 'POST' });
    const failures = async () => Number((await env.DB.prepare('SELECT count(*) AS n FROM auth_failures').first<{ n: number }>())?.n);
    /** `n` failures already out of the hub's counting window (600 s). */
    const addOld = async (n: number) => {
      const { now } = await hubJson<{ now: number }>(hub, '/__test/now');
      for (let i = 0; i < n; i++)
        await env.DB.prepare('INSERT INTO auth_failures (address, at) VALUES (?, ?)')
          .bind(`192.0.2.${i}`, now - 601_000)
          .run();
    };
    const sweep = () => hubJson(hub, '/__test/sweep', { method: 'POST' });

    await addOld(5);
    await sweep();
    expect(await failures()).toBe(3);
    // A full batch: the next sweep goes on at once.
    await sweep();
    expect(await failures()).toBe(1);
    await sweep();
    expect(await failures()).toBe(0);

    // Then once per interval (10 minutes), also for a hub that lost its memory in between.
    await addOld(3);
    await sweep();
    expect(await failures()).toBe(3);
    await hubJson(hub, '/__test/hibernate', { method: 'POST' });
    await sweep();
    expect(await failures()).toBe(3);

    // The alarm prunes when due, and while batches come back full it sets the next alarm itself.
    await addOld(2);
    await alarmsOn(hub);
    await hubJson(hub, '/__test/advance', { method: 'POST', body: JSON.stringify({ seconds: 600 }) });
    await runInDurableObject(hubStub(hub), (instance: RelayHub) => instance.alarm());
    expect(await failures()).toBe(3);
    expect(await runDurableObjectAlarm(hubStub(hub))).toBe(true);
    expect(await failures()).toBe(1);
    expect(await runDurableObjectAlarm(hubStub(hub))).toBe(true);
    expect(await failures()).toBe(0);
    // Nothing left and nobody connected: no alarm.
    expect(await runDurableObjectAlarm(hubStub(hub))).toBe(false);
  });
});

/** A third peer (a second client of the agent) joins: the old agent is announced to it and it to the agent. */
async function newPeerIsAnnounced(hub: string, p: Awaited<ReturnType<typeof matchedPair>>): Promise<void> {
  const agentSeen = p.agent.received.length;
  const newKey = await makeKey('ed25519');
  // The agent learns the new key by bridge_keys (what `hostadm` sends when a user is added).
  p.agent.md5Keys = [p.clientKey.md5, newKey.md5];
  expect((await p.agent.request('bridge_keys', { md5_keys: p.agent.md5Keys })).args).toEqual({ result: 'success' });
  const { peer: bob, announcement } = await signedInPeer(hub, 'client', newKey, { nickname: 'bob' });
  expect(announcement.available_connections).toEqual([p.agentId]);
  const seen = await p.agent.nextAnnouncement(agentSeen, (a) => a.available_connections.length === 2);
  const bobId = seen.available_connections.find((id) => id !== p.clientId)!;
  expect(seen.available_connections).toContain(p.clientId);
  const atAgent = p.agent.nextFrame();
  bob.sendFrame(p.agentId, 'hi from bob');
  expect(await atAgent).toBe(`${bobId}\nhi from bob`);
}
