/**
 * Builds a running agent from options: store, platform, services, pipeline and one HTTP(S) server
 * carrying both WebSocket and REST. Used by `hostadm agent` and by tests (in-process, free port).
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { consoleAssets } from '@hostadm/console/server/assets.ts';
import type { ChannelVersion } from '@hostadm/shared/crypto/index.ts';
import { getRequestListener } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { openStore } from './store/db.ts';
import { createPlatform } from './platforms/index.ts';
import type { PlatformKind, Platform } from './platforms/types.ts';
import { createRunner, type CommandRunner } from './runner/runner.ts';
import { EventBus } from './events/bus.ts';
import { SessionStore } from './server/sessions.ts';
import { Blacklist } from './server/blacklist.ts';
import { SignInGate } from './server/sign-in-gate.ts';
import { SimulatedRunner } from './platforms/sim/simulated-runner.ts';
import { KeyRegistry } from './server/keys.ts';
import { SslChallenges } from './server/ssl-auth.ts';
import { Audit } from './server/audit.ts';
import { Pipeline } from './server/pipeline.ts';
import { WebSocketTransport } from './server/ws-transport.ts';
import { createRestApp } from './server/rest-transport.ts';
import { classes } from './classes/index.ts';
import type { ServedClasses } from './classes/types.ts';
import { loadOrCreateHostKey } from './server/host-key.ts';
import { BridgeLink } from './bridge-link/link.ts';
import { Dispatcher } from './jobs/dispatcher.ts';
import { JobStore } from './jobs/job-store.ts';
import { runJobType } from './jobs/run-job.ts';
import { DEFAULT_DISPATCHER_CONFIG, type DispatcherConfig } from './jobs/types.ts';
import type { AgentConfig, AgentServices, Clock } from './server/context.ts';
import { Background } from './jobs/background.ts';

export interface AgentOptions {
  platform: PlatformKind | 'auto';
  dataDir: string;
  host: string;
  port: number;
  simPassword?: string;
  adminGroup?: string;
  tls?: { certFile: string; keyFile: string };
  config?: Partial<Omit<AgentConfig, 'blacklist' | 'passwordChecks' | 'audit'>> & {
    blacklist?: Partial<AgentConfig['blacklist']>;
    audit?: Partial<AgentConfig['audit']>;
    passwordChecks?: Partial<AgentConfig['passwordChecks']>;
  };
  clock?: Clock;
  logger?: Logger;
  /** sim only: run the dispatcher's commands for real, as the agent's user, instead of simulating them. */
  simHostCommands?: boolean;
  /** Replaces the real runner (tests aim the Linux platform at a namespace this way). */
  runner?: CommandRunner;
  dispatcher?: Partial<DispatcherConfig>;
  /** Dial out to a bridge so clients can reach this host behind NAT (docs/bridge-protocol.md). */
  bridge?: { url: string; joinToken?: string; nickname?: string; channelVersions?: readonly ChannelVersion[] };
  /** Linux: read /proc and /sys from here (tests: a fake tree). */
  procRoot?: string;
  sysRoot?: string;
  /** Linux/FreeBSD: the largest ISO image `vm fetchiso` downloads (default 16 GiB). */
  maxIsoBytes?: number;
  /** Linux: where jails live (default `<data>/jails`), and the cgroup tree their limits go in. */
  jailRoot?: string;
  cgroupRoot?: string;
  /** Linux: whether zpool/zfs are installed (default: looked for on the standard paths). */
  zfsTools?: boolean;
  /** FreeBSD: the bhyve manager behind the vm class (default: vm-bhyve, else iohyve, as installed). */
  freebsdVmTool?: 'vm-bhyve' | 'iohyve' | null;
  /** The classes served (default: the registry, `classes/index.ts`); tests add demonstration classes. */
  classes?: ServedClasses;
}

export interface RunningAgent {
  readonly url: string;
  readonly port: number;
  readonly services: AgentServices;
  readonly pipeline: Pipeline;
  /** The outbound bridge link, when started with `bridge`. */
  readonly bridgeLink: BridgeLink | null;
  close(): Promise<void>;
}

export function defaultConfig(overrides: AgentOptions['config'] = {}): AgentConfig {
  return {
    tokenTtlSeconds: LIMITS.tokenTtlSeconds,
    sslWindowSeconds: LIMITS.sslWindowSeconds,
    idleCloseSeconds: LIMITS.idleCloseSeconds,
    unauthenticatedCloseSeconds: LIMITS.unauthenticatedCloseSeconds,
    maxFrameBytes: LIMITS.maxFrameBytes,
    maxInFlightPerConnection: LIMITS.maxInFlightPerConnection,
    allowPasswordAuth: true,
    strictReplies: false,
    maxConnectionsPerAddress: LIMITS.maxConnectionsPerAddress,
    maxSendBufferBytes: LIMITS.maxSendBufferBytes,
    schedulerTickMs: 20_000,
    ...overrides,
    passwordChecks: {
      maxConcurrent: LIMITS.maxConcurrentPasswordChecks,
      maxQueued: LIMITS.maxQueuedPasswordChecks,
      burst: LIMITS.passwordAttemptBurst,
      perSecond: LIMITS.passwordAttemptsPerSecond,
      ...overrides.passwordChecks,
    },
    audit: {
      maxAgeDays: LIMITS.auditRetentionDays,
      maxRows: LIMITS.auditMaxRows,
      ...overrides.audit,
    },
    blacklist: {
      failures: LIMITS.blacklistFailures,
      windowSeconds: LIMITS.blacklistWindowSeconds,
      blockSeconds: LIMITS.blacklistBlockSeconds,
      exemptLoopback: true,
      ...overrides.blacklist,
    },
  };
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const config = defaultConfig(options.config);
  const clock = options.clock ?? { now: () => Date.now() };
  const logger = options.logger ?? pino({ name: 'hostadm-agent' }, pino.destination(2));
  const store = openStore(options.dataDir);
  if (store.tightened.length > 0) logger.warn({ paths: store.tightened }, 'data directory was readable by others: modes tightened to 0700/0600');
  // The sim platform never touches the host unless told to in so many words (--sim-host-commands).
  const runner = options.runner ?? (options.platform === 'sim' && !options.simHostCommands ? new SimulatedRunner() : createRunner());
  const platform: Platform = await createPlatform(options.platform, {
    dataDir: options.dataDir,
    runner,
    simPassword: options.simPassword,
    adminGroup: options.adminGroup,
    procRoot: options.procRoot,
    sysRoot: options.sysRoot,
    maxIsoBytes: options.maxIsoBytes,
    jailRoot: options.jailRoot,
    cgroupRoot: options.cgroupRoot,
    zfsTools: options.zfsTools,
    freebsdVmTool: options.freebsdVmTool,
  });
  const events = new EventBus();
  const dispatcherConfig = { ...DEFAULT_DISPATCHER_CONFIG, ...options.dispatcher };
  const jobs = new Dispatcher({
    store: new JobStore(store.db, dispatcherConfig),
    runner: platform.runner,
    events,
    clock,
    logger,
    config: dispatcherConfig,
  });
  jobs.register(runJobType);
  const blacklist = new Blacklist(store.db, clock, config.blacklist);
  const services: AgentServices = {
    config,
    clock,
    db: store.db,
    platform,
    logger,
    events,
    jobs,
    background: new Background(logger),
    hostKey: loadOrCreateHostKey(options.dataDir),
    sessions: new SessionStore(clock, config.tokenTtlSeconds),
    blacklist,
    passwordChecks: new SignInGate(config.passwordChecks, clock, blacklist),
    keys: new KeyRegistry(store.db, clock),
    sslChallenges: new SslChallenges(clock, config.sslWindowSeconds),
    audit: new Audit(store.db, clock, config.audit),
  };
  // Classes register their job types while the pipeline builds them; then accepted jobs resume.
  const pipeline = new Pipeline(services, options.classes ?? classes);
  jobs.restore();
  const pruneAudit = () => {
    const removed = services.audit.prune();
    if (removed.log + removed.summary > 0) logger.info(removed, 'audit rows past retention removed');
    const lifted = blacklist.prune();
    if (lifted.blocks + lifted.failures > 0) logger.info(lifted, 'lifted blocks and sign-in failures out of the window removed');
  };
  pruneAudit();
  const auditPruneTimer = setInterval(pruneAudit, 3600_000).unref();
  const ws = new WebSocketTransport(pipeline);
  const rest = createRestApp(pipeline);
  // The web console is served at / beside the REST routes (console/server/assets.ts).
  const serveConsole = consoleAssets();
  const listener = getRequestListener((request, env) => serveConsole(request) ?? rest.fetch(request, env));
  const server: Server = options.tls
    ? createHttpsServer(
        {
          cert: readFileSync(options.tls.certFile),
          key: readFileSync(options.tls.keyFile),
          // A client certificate is asked for, never required or chain-checked: its key, proven by the
          // handshake, is what register_ssl_cert accepts as loaded on the connection (tls-client-key.ts).
          requestCert: true,
          rejectUnauthorized: false,
        },
        listener,
      )
    : createHttpServer(listener);
  server.on('upgrade', (req, socket, head) => ws.handleUpgrade(req, socket, head));

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `${options.tls ? 'wss' : 'ws'}://${host}:${port}`;
  logger.info({ url, platform: platform.kind, dataDir: options.dataDir }, 'agent listening');

  const bridgeLink = options.bridge ? new BridgeLink({ ...options.bridge, pipeline, dataDir: options.dataDir }) : null;
  bridgeLink?.start();

  let closed = false;
  return {
    url,
    port,
    services,
    pipeline,
    bridgeLink,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(auditPruneTimer);
      await services.background.close();
      await bridgeLink?.stop();
      await jobs.close();
      await ws.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await platform.close();
      store.close();
    },
  };
}
