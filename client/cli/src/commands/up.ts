/**
 * `hostadm up`: everything on one machine with embedded defaults, to try hostadm end to end. Starts a
 * bridge and a sim agent joined to it (in this process), makes a client key and a `local` profile that
 * reaches the agent through the bridge, registers the key on the agent for `admin`, enrolls it at the
 * bridge, pins the host key, and prints the commands to try. Runs until Ctrl-C (or SIGTERM).
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve, join } from 'node:path';
import pino from 'pino';
import { issueJoinToken, joinSecretKey, startBridge } from '@hostadm/bridge/runtime/node/index.ts';
import { startAgent } from '@hostadm/agent/agent.ts';
import { bridgeTransport, connect, NodeWebSocket } from '../../../sdk/src/node.ts';
import { HostadmRequestError } from '../../../sdk/src/errors.ts';
import { createKeyFiles } from './keys.ts';
import { ensureDir, keyPaths, knownHostEntry, loadConfig, loadKnownHosts, pinHostKey, saveConfig } from '../lib/config.ts';
import { reportError } from '../lib/exit.ts';

export interface UpOptions {
  portBridge: number;
  portAgent: number;
  data: string;
  profile: string;
  logLevel: string;
}

export async function runUp(opts: UpOptions): Promise<void> {
  const logger = pino({ level: opts.logLevel }, pino.destination(2));
  const data = resolve(opts.data);
  const bridgeDir = ensureDir(join(ensureDir(data), 'bridge'));
  const agentDir = ensureDir(join(data, 'agent'));
  const nickname = 'local';
  let closeAll: () => Promise<void> = async () => undefined;
  try {
    const bridge = await startBridge({ listen: { host: '127.0.0.1', port: opts.portBridge }, dataDir: bridgeDir, logger, hostname: 'hostadm-up' });
    const agentToken = await issueJoinToken(joinSecretKey(bridgeDir), { kind: 'agent', nickname, ttlSeconds: 600 }, Date.now());
    const simPassword = randomBytes(12).toString('base64url');
    const agent = await startAgent({
      platform: 'sim',
      dataDir: agentDir,
      host: '127.0.0.1',
      port: opts.portAgent,
      simPassword,
      logger,
      bridge: { url: bridge.url, joinToken: agentToken.token, nickname },
    });
    closeAll = async () => {
      await agent.close();
      await bridge.close();
    };
    await agent.bridgeLink?.ready();

    // The client key and the profile.
    const paths = keyPaths(opts.profile);
    if (!existsSync(paths.key) || !existsSync(paths.cert)) await createKeyFiles(opts.profile);
    const key = { privatePem: readFileSync(paths.key, 'utf8'), certPem: readFileSync(paths.cert, 'utf8') };

    // Register it on the agent for admin (directly, with the sim password of this run).
    const direct = await connect({ url: agent.url, auth: { username: 'admin', password: simPassword }, reconnect: false });
    try {
      await direct.registerKey({ ...key, nickname: `hostadm up ${opts.profile}` });
    } catch (err) {
      if (!(err instanceof HostadmRequestError && err.code === 409)) throw err;
    } finally {
      await direct.close();
    }

    // Enroll it at the bridge (first run) and pin the host key, with one connection through the bridge.
    const pinned = loadKnownHosts()[knownHostEntry(bridge.url, nickname)];
    const hostKey = agent.services.hostKey;
    const attempt = async (joinToken?: string) => {
      const client = await connect({
        transport: bridgeTransport({
          bridgeUrl: bridge.url,
          host: { nickname },
          key,
          ...(pinned && pinned.fingerprint === hostKey.fingerprint ? { pinnedHostKey: pinned.hostKey } : {}),
          // The agent runs in this process: its key is known first hand.
          onHostKey: (fingerprint) => fingerprint === hostKey.fingerprint,
          ...(joinToken ? { joinToken } : {}),
          webSocket: NodeWebSocket,
        }),
        reconnect: false,
      });
      await client.query();
      await client.close();
    };
    try {
      await attempt();
    } catch {
      await attempt((await issueJoinToken(joinSecretKey(bridgeDir), { kind: 'client', nickname: opts.profile, ttlSeconds: 600 }, Date.now())).token);
    }
    pinHostKey(bridge.url, nickname, hostKey.publicRaw, hostKey.fingerprint);

    const config = loadConfig();
    config.profiles[opts.profile] = { bridge: bridge.url, host: nickname, user: 'admin', key: paths.key };
    if (!config.default || !config.profiles[config.default]) config.default = opts.profile;
    saveConfig(config);

    process.stdout.write(
      [
        `hostadm up: bridge ${bridge.url} (data ${bridgeDir})`,
        `            sim agent ${agent.url} joined as "${nickname}", host key ${hostKey.fingerprint}`,
        `            profile ${opts.profile}: key ${paths.key}, signed in as admin through the bridge`,
        '',
        'try:',
        `  hostadm ps --profile ${opts.profile}`,
        `  hostadm call systemmanager memorystats --profile ${opts.profile}`,
        `  hostadm events dispatcher --profile ${opts.profile}`,
        '',
        'Ctrl-C stops the bridge and the agent.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.exitCode = reportError(err);
    await closeAll().catch(() => undefined);
    setTimeout(() => process.exit(process.exitCode), 500).unref();
    return;
  }

  await new Promise<void>((done) => {
    const stop = () => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  process.stdout.write('hostadm up: stopping\n');
  await closeAll().catch((err: unknown) => logger.error({ err }, 'stopping failed'));
  process.exitCode = 0;
  setTimeout(() => process.exit(0), 1000).unref();
}
