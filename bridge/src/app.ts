/**
 * @module The bridge's HTTP surface, shared by every runtime (docs/bridge-protocol.md §2.8):
 *
 * - `GET /healthz` → `{"ok":true}`
 * - `GET /metrics` → the relay's counters (JSON): loopback clients, or `Authorization: Bearer <admin secret>`
 * - `/admin/*` (`Authorization: Bearer <admin secret>`): `GET /admin/keys`, `POST /admin/tokens`,
 *   `POST /admin/revoke` (admin-routes.ts)
 * - `GET /relay`, `/relay/host/<fp>`, `/relay/directory` with `Upgrade: websocket` → handed to the
 *   runtime's `upgrade` with the room the path names (relay/rooms.ts; Node: `ws`; Workers: the room's
 *   Durable Object), after the blacklist check (429); any other path under /relay is a 404
 *
 * No runtime imports here: the runtime passes what differs (how to upgrade, where the peer address is).
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { adminRoutes } from './admin-routes.ts';
import { bearerAuth } from 'hono/bearer-auth';
import { isLoopback, type Relay } from './relay/relay.ts';
import type { MetricsSnapshot } from './relay/metrics.ts';
import { roomOfPath, type RoomName } from './relay/rooms.ts';

export interface BridgeRuntime<E extends object = object> {
  /** The peer's address as the transport reports it (Node: socket address; Workers: cf-connecting-ip). */
  remoteAddress(c: Context<{ Bindings: E }>): string;
  /** Completes the WebSocket upgrade and hands the socket to the relay (`relay.open`) in `room`. */
  upgrade(c: Context<{ Bindings: E }>, address: string, room: RoomName): Response | Promise<Response>;
  /** The bridge-wide counters when they are not all in this relay (Workers: summed over objects). */
  metrics?(): Promise<MetricsSnapshot>;
}

export interface BridgeAppOptions<E extends object> {
  relay: Relay;
  runtime: BridgeRuntime<E>;
  /** Bearer secret for /admin routes (empty: the admin API answers 503). */
  adminSecret: string;
}

export function createBridgeApp<E extends object>(options: BridgeAppOptions<E>): Hono<{ Bindings: E }> {
  const { relay, runtime } = options;
  const app = new Hono<{ Bindings: E }>();

  app.get('/healthz', (c) => c.json({ ok: true }));
  // Counters tell who is connected how often: the operator's, on loopback or with the admin secret.
  const metricsAuth: MiddlewareHandler<{ Bindings: E }> = bearerAuth({
    token: options.adminSecret || crypto.randomUUID(),
    noAuthenticationHeader: { message: { error: 'Unauthorized: /metrics needs Authorization: Bearer <admin secret> (or a loopback client)' } },
    invalidAuthenticationHeader: { message: { error: 'expected Authorization: Bearer <admin secret>' } },
    invalidToken: { message: { error: 'Unauthorized: wrong admin secret' } },
  });
  app.get(
    '/metrics',
    (c, next) => (isLoopback(runtime.remoteAddress(c)) ? next() : metricsAuth(c, next)),
    async (c) => c.json(runtime.metrics ? await runtime.metrics() : relay.snapshot()),
  );

  app.route('/admin', adminRoutes(relay, options.adminSecret));

  const relayUpgrade = async (c: Context<{ Bindings: E }>) => {
    const room = roomOfPath(c.req.path.slice('/relay'.length));
    if (room === null) return c.json({ error: 'no such room: connect to /relay, /relay/host/<host key fingerprint> or /relay/directory' }, 404);
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      return c.text("This is the bridge's WebSocket endpoint: connect with a WebSocket client.\n", 426, { Upgrade: 'websocket' });
    }
    const address = runtime.remoteAddress(c);
    const refusal = await relay.admit(address);
    if (refusal) return c.text(`${refusal}\n`, 429);
    return runtime.upgrade(c, address, room);
  };
  app.get('/relay', relayUpgrade);
  app.get('/relay/*', relayUpgrade);

  app.notFound((c) => c.json({ error: 'not found' }, 404));
  return app;
}
