/**
 * @module Test-only routes of a hub, mounted only when `HOSTADM_TEST_HOOKS` is "1" (never in the
 * shipped wrangler configuration). They give the shared bridge tests on workerd what the Node
 * harness has in-process: a manual clock, a sweep on demand, per-hub config overrides, and a way to
 * force the wake-up path (drop the heap, revive from attachments and storage), and an empty store. Alarms (the
 * automatic sweep) are off until `/__test/alarms {on: true}`, as the Node harness sweeps by hand.
 */
import { drizzle } from 'drizzle-orm/d1';
import type { Hono } from 'hono';
import { authFailures, blacklist, bridgeKeys, bridgeSessions, hostIndex, objectMetrics, usedJoinTokens } from '../../db/schema.ts';
import type { RelayConfigOverrides } from '../../relay/config.ts';
import type { BridgeEnv } from './env.ts';
import type { RelayHub } from './relay-hub.ts';

/**
 * Under test hooks, per object name: how often an instance was constructed (a wake-up), and how many
 * calls it made to or took from another object. Module state: the tests run in the same isolate.
 */
export const objectCounters = { wakeUps: new Map<string, number>(), crossObjectCalls: new Map<string, number>() };

export function countFor(map: Map<string, number>, object: string): void {
  map.set(object, (map.get(object) ?? 0) + 1);
}

/** Lets a test give each connection its own address (the blacklist is per address). */
export const TEST_ADDRESS_HEADER = 'x-hostadm-test-address';

export function testRoutes(app: Hono<{ Bindings: BridgeEnv }>, hub: RelayHub): void {
  app.post('/__test/advance', async (c) => {
    const { seconds } = await c.req.json<{ seconds: number }>();
    if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return c.json({ error: 'seconds: number' }, 400);
    hub.advanceClock(seconds);
    return c.json({ now: hub.relay.clock.now() });
  });

  app.get('/__test/now', (c) => c.json({ now: hub.relay.clock.now() }));

  app.post('/__test/sweep', async (c) => {
    await hub.relay.sweep();
    return c.json({ ok: true });
  });

  app.post('/__test/config', async (c) => {
    const overrides = await c.req.json<RelayConfigOverrides>();
    if (!hub.reconfigure(overrides)) return c.json({ error: 'peers are connected: configure a hub before using it' }, 409);
    return c.json({ ok: true });
  });

  app.post('/__test/alarms', async (c) => {
    const { on } = await c.req.json<{ on: boolean }>();
    if (typeof on !== 'boolean') return c.json({ error: 'on: boolean' }, 400);
    hub.setAlarms(on);
    return c.json({ ok: true });
  });

  // A fresh bridge database per test, as the Node harness gives each test its own data directory
  // (one workerd, hence one D1, serves every test of a file; a host nickname is unique across it).
  app.post('/__test/forget-keys', async (c) => {
    const db = drizzle(c.env.DB);
    await db.batch([
      db.delete(bridgeKeys),
      db.delete(usedJoinTokens),
      db.delete(authFailures),
      db.delete(blacklist),
      db.delete(hostIndex),
      db.delete(bridgeSessions),
      db.delete(objectMetrics),
    ]);
    return c.json({ ok: true });
  });

  // The directory objects of this scope re-read the host index now (what their alarm does every
  // directoryPollSeconds); found through the session index, as a revocation finds objects.
  app.post('/__test/poll-directories', async (c) => {
    const names = await hub.sessions.objectsNamed('directory/');
    const sockets = await Promise.all(names.map((n) => c.env.RELAY_HUB.get(c.env.RELAY_HUB.idFromName(n)).pollDirectory()));
    return c.json({ objects: names.length, sockets: sockets.reduce((a, b) => a + b, 0) });
  });

  app.post('/__test/hibernate', (c) => {
    hub.reload();
    return c.json({ ok: true, peers: hub.relay.snapshot().connections });
  });
}
