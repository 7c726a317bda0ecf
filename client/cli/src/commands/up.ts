/**
 * `hostadm up`: everything on one machine with embedded defaults, to try hostadm end to end. Starts a
 * bridge and a sim agent joined to it (in this process), makes a client key and a `local` profile that
 * reaches the agent through the bridge, registers the key on the agent for `admin`, enrolls it at the
 * bridge, pins the host key, and prints the commands to try. Runs until Ctrl-C (or SIGTERM).
 */
import { accessSync, constants, rmSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve, join, relative, isAbsolute } from 'node:path';
import pino from 'pino';
import { loadDrizzleWithoutPackageJsonReparse } from '@hostadm/shared/node/drizzle-load-hook.ts';
import { bridgeTransport, connect, NodeWebSocket } from '../../../sdk/src/node.ts';
import { HostadmRequestError } from '../../../sdk/src/errors.ts';
import { createKeyFiles } from './keys.ts';
import { ensureDir, keyPaths, knownHostEntry, loadConfig, loadKnownHosts, pinHostKey, saveConfig } from '../lib/config.ts';
import { reportError } from '../lib/exit.ts';
import { exitIfAddressInUse } from '../lib/port-in-use.ts';
import { restartWithoutTypeStripper, shouldRestartWithoutTypeStripper } from '../lib/type-stripper-restart.ts';

export interface UpOptions {
  portBridge: number;
  portAgent: number;
  data: string;
  profile: string;
  logLevel: string;
}

export async function runUp(opts: UpOptions): Promise<void> {
  // Before the bridge's and the agent's modules (and drizzle-orm with them) load: see the hook's module.
  loadDrizzleWithoutPackageJsonReparse();
  const { issueJoinToken, joinSecretKey, startBridge } = await import('@hostadm/bridge/runtime/node/index.ts');
  const { startAgent } = await import('@hostadm/agent/agent.ts');
  // From the TypeScript sources with a cold compile cache: begin again without the type stripper
  // (~16 MiB less for as long as `up` runs; type-stripper-restart.ts), once everything `up` loads is
  // loaded: the sim platform (startAgent loads it by platform name) and the SDK's argument checks (its
  // client loads them at the first call it checks: `up` signs its profile in through the bridge).
  if (shouldRestartWithoutTypeStripper()) {
    await Promise.all([import('@hostadm/agent/platforms/sim/index.ts'), import('../../../sdk/src/validate.ts')]);
    restartWithoutTypeStripper();
  }
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

    // The sim accounts' password of this run: kept for the user in a 0600 file, never printed.
    const passwordFile = join(data, 'admin-password');
    rmSync(passwordFile, { force: true });
    writeFileSync(passwordFile, `${simPassword}\n`, { mode: 0o600 });

    // A one-time client join token for the web console's browser key, kept like the password (0600, never printed).
    const consoleTokenFile = join(data, 'console-join-token');
    const consoleToken = await issueJoinToken(joinSecretKey(bridgeDir), { kind: 'client', nickname: 'browser', ttlSeconds: 3600 }, Date.now());
    rmSync(consoleTokenFile, { force: true });
    writeFileSync(consoleTokenFile, `${consoleToken.token}\n`, { mode: 0o600 });

    const hostadm = commandThatWorksHere();
    process.stdout.write(
      [
        `hostadm up: bridge ${bridge.url} (data ${bridgeDir})`,
        `            sim agent ${agent.url} joined as "${nickname}", host key ${hostKey.fingerprint}`,
        `            profile ${opts.profile}: key ${paths.key}, signed in as admin through the bridge`,
        `            direct: ${agent.url} as admin, password in ${passwordFile} (mode 0600, new each run)`,
        '',
        `web console: ${bridge.httpUrl}/  (make a key there, enroll it with the join token in ${consoleTokenFile}, valid 1 h;`,
        `             sign in to "${nickname}" as admin with the password above once, then with the key)`,
        '',
        'try:',
        `  ${hostadm} ps --profile ${opts.profile}`,
        `  ${hostadm} call systemmanager memorystats --profile ${opts.profile}`,
        `  ${hostadm} events dispatcher --profile ${opts.profile}`,
        `  HOSTADM_PASSWORD="$(cat ${passwordFile})" ${hostadm} ps --url ${agent.url} --user admin`,
        '',
        'Ctrl-C stops the bridge and the agent.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    await exitIfAddressInUse(err, 'stop it, or choose other ports with --port-bridge N --port-agent N (0 picks free ones)');
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

/**
 * How to run hostadm from where the user is: `hostadm` when it is installed on PATH (npm scripts add
 * node_modules/.bin, which does not count), `npx hostadm` inside this checkout, else the checkout's
 * client/bin/hostadm by its full path (npx elsewhere would look for a package of that name).
 */
function commandThatWorksHere(): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir || /\/node_modules\/\.bin\/?$/.test(dir)) continue;
    try {
      accessSync(join(dir, 'hostadm'), constants.X_OK);
      return 'hostadm';
    } catch {
      // not in this directory
    }
  }
  const root = new URL('../../../../', import.meta.url).pathname;
  const fromRoot = relative(root, process.cwd());
  const insideCheckout = !fromRoot.startsWith('..') && !isAbsolute(fromRoot);
  if (insideCheckout && existsSync(join(root, 'node_modules', '.bin', 'hostadm'))) return 'npx hostadm';
  return join(root, 'client', 'bin', 'hostadm');
}
