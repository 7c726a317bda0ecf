/**
 * @module The bridge on Node: one HTTP(S) server carries the Hono app (`getRequestListener`) and the
 * `/relay` WebSockets (`ws`, upgraded through the same app). State lives in the data directory:
 * `bridge.db` (keys, used join tokens, blacklist), `join-secret` and `admin-secret` (0600, made at
 * first start), and `bridge.url` while running (so `hostadm bridge keys revoke` can reach it).
 */
import { createHmac } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { consoleAssets } from '@hostadm/console/server/assets.ts';
import pino, { type Logger } from 'pino';
import { createBridgeApp } from '../../app.ts';
import type { RelayConfigOverrides } from '../../relay/config.ts';
import type { MetricsSnapshot } from '../../relay/metrics.ts';
import type { Clock } from '../../relay/ports.ts';
import { PortableKeyCrypto } from '../../relay/key-crypto.ts';
import { Relay } from '../../relay/relay.ts';
import { SqliteKeyStore } from './key-store.ts';
import { ADMIN_SECRET_FILE, joinSecretKey, readOrCreateSecret, URL_FILE } from './secrets.ts';
import { releaseStartupHeap } from './v8-tuning.ts';
import { NodeRelayTransport, type NodeEnv } from './websocket.ts';

export interface BridgeOptions {
  listen: { host: string; port: number };
  dataDir: string;
  tls?: { certFile: string; keyFile: string };
  logger?: Logger;
  clock?: Clock;
  config?: RelayConfigOverrides;
  /** How often the relay's sweep runs (timeouts, heartbeat, revocation re-read); tests may set 0 to drive it by hand. */
  sweepIntervalMs?: number;
  /** What `rpc/identify` on the bridge answers (default: this host's short name). */
  hostname?: string;
}

export interface RunningBridge {
  /** Where peers connect: `ws(s)://host:port/relay`. */
  readonly url: string;
  /** `http(s)://host:port` (healthz, metrics, admin). */
  readonly httpUrl: string;
  readonly port: number;
  readonly relay: Relay;
  readonly store: SqliteKeyStore;
  metrics(): MetricsSnapshot;
  /** Runs the relay's periodic upkeep now, parking idle sockets first (tests with a manual clock). */
  sweep(): Promise<void>;
  close(): Promise<void>;
}

export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  const logger = options.logger ?? pino({ name: 'hostadm-bridge' }, pino.destination(2));
  const clock = options.clock ?? { now: () => Date.now() };
  const store = new SqliteKeyStore(options.dataDir);
  if (store.tightened.length > 0) logger.warn({ paths: store.tightened }, 'data directory was readable by others: modes tightened to 0700/0600');
  const adminSecret = readOrCreateSecret(options.dataDir, ADMIN_SECRET_FILE);
  const relay = new Relay({
    store,
    crypto: new PortableKeyCrypto(),
    clock,
    logger,
    joinSecret: joinSecretKey(options.dataDir),
    // Sign-in tickets: node:crypto's HMAC (a few µs) rather than WebCrypto's (about 40 µs a call).
    hmac: (key, data) => createHmac('sha256', key).update(data).digest(),
    hostname: options.hostname ?? osHostname().split('.')[0] ?? 'bridge',
    config: options.config,
    // Pooled for small frames and not zero-filled: every byte is overwritten by the rewrite.
    allocate: (size) => Buffer.allocUnsafe(size),
  });
  const transport = new NodeRelayTransport(relay);
  const app = createBridgeApp<NodeEnv>({ relay, runtime: transport, adminSecret });
  // The web console is served at / beside the app's routes (console/server/assets.ts); on Workers the
  // same files are static assets (infra/wrangler.jsonc).
  const serveConsole = consoleAssets();
  const listener = getRequestListener((req, env) => serveConsole(req) ?? app.fetch(req, env as NodeEnv));
  const server: Server = options.tls
    ? createHttpsServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, listener)
    : createHttpServer(listener);
  server.on('upgrade', transport.upgradeListener(app));

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.listen.port, options.listen.host, () => resolve());
    });
  } catch (err) {
    store.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;
  const httpUrl = `${options.tls ? 'https' : 'http'}://${host}:${port}`;
  const url = `${options.tls ? 'wss' : 'ws'}://${host}:${port}/relay`;
  // For the CLI on this machine: a wildcard address is reached through loopback.
  const localHost = options.listen.host === '0.0.0.0' ? '127.0.0.1' : options.listen.host === '::' ? '[::1]' : host;
  const localUrl = `${options.tls ? 'https' : 'http'}://${localHost}:${port}`;
  const urlFile = join(options.dataDir, URL_FILE);
  writeFileSync(urlFile, `${localUrl}\n`, { mode: 0o600 });

  // Idle sockets are parked on the sweep's beat (runtime/node/parking.ts), before its heartbeat pings.
  const sweep = () => {
    transport.parking.pass(clock.now());
    return relay.sweep();
  };
  const interval = options.sweepIntervalMs ?? 1000;
  const sweeper = interval > 0 ? setInterval(() => sweep().catch((err: unknown) => logger.error({ err }, 'relay sweep failed')), interval) : null;
  sweeper?.unref();
  releaseStartupHeap();
  logger.info({ url, dataDir: options.dataDir }, 'bridge listening');

  let closed = false;
  return {
    url,
    httpUrl,
    port,
    relay,
    store,
    metrics: () => relay.snapshot(),
    sweep,
    async close() {
      if (closed) return;
      closed = true;
      if (sweeper) clearInterval(sweeper);
      relay.shutdown();
      await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      try {
        if (readFileSync(urlFile, 'utf8').trim() === localUrl) rmSync(urlFile, { force: true });
      } catch {
        // already gone
      }
      store.close();
    },
  };
}
