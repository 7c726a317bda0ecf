import pino from 'pino';
import type { startAgent as StartAgent } from '@hostadm/agent/agent.ts';
import { loadDrizzleWithoutPackageJsonReparse } from '@hostadm/shared/node/drizzle-load-hook.ts';
import { DEFAULT_SIM_PASSWORD } from '@hostadm/agent/platforms/sim/accounts.ts';
import type { AgentCliOptions } from '../program.ts';
import { reportError } from '../lib/exit.ts';
import { readSecret } from '../lib/secrets.ts';
import { exitIfAddressInUse } from '../lib/port-in-use.ts';
import { restartWithoutTypeStripper, shouldRestartWithoutTypeStripper } from '../lib/type-stripper-restart.ts';
import { resolve } from 'node:path';

/** Where a real agent keeps its data when --data is not given (root only, see below). */
export const DEFAULT_AGENT_DATA = '/var/db/hostadm';

export async function runAgentCommand(opts: AgentCliOptions): Promise<void> {
  // No default platform: `hostadm agent` typed by mistake (or meaning `up`) must not start
  // administering this machine. The message says what auto would pick.
  const platformChoice = opts.platform;
  if (platformChoice === undefined) {
    const { detectPlatform } = await import('@hostadm/agent/platforms/index.ts');
    process.stderr.write(
      'hostadm: choose what the agent administers with --platform: sim (a simulated host; nothing on this machine changes), ' +
        `or linux, freebsd or auto to administer this machine (auto detects: ${detectPlatform()})\n`,
    );
    process.exit(2);
  }
  // The default data directory is a system one; a user who did not choose it gets told, not EACCES.
  const dataDir = opts.data ?? DEFAULT_AGENT_DATA;
  if (opts.data === undefined && process.getuid?.() !== 0) {
    process.stderr.write(
      `hostadm: the default data directory ${DEFAULT_AGENT_DATA} is for an agent run as root; give --data DIR (for example --data ~/.hostadm/agent)\n`,
    );
    process.exit(2);
  }
  try {
    opts.simPassword = readSecret({
      flag: ['--sim-password', opts.simPassword],
      file: ['--sim-password-file', opts.simPasswordFile],
      env: 'HOSTADM_SIM_PASSWORD',
    });
    opts.join = readSecret({ flag: ['--join', opts.join], file: ['--join-file', opts.joinFile], env: 'HOSTADM_JOIN_TOKEN' });
  } catch (err) {
    process.exitCode = reportError(err);
    return;
  }
  if (opts.simHostCommands && platformChoice !== 'sim') {
    process.stderr.write('error: --sim-host-commands is for --platform sim only\n');
    process.exit(2);
  }
  const { host, port } = opts.listen;
  if (!!opts.tlsCert !== !!opts.tlsKey) {
    process.stderr.write('error: --tls-cert and --tls-key go together\n');
    process.exit(2);
  }
  // The sim host's default password is printed in the README, so it is only good for loopback.
  if (platformChoice === 'sim' && opts.simPassword === undefined && !isLoopbackHost(host)) {
    process.stderr.write(`error: a sim agent on ${host} needs --sim-password (the default password is public)\n`);
    process.exit(2);
  }
  // The agent's modules (drizzle-orm among them) load after the hook is in place: see drizzle-load-hook.ts.
  loadDrizzleWithoutPackageJsonReparse();
  const { startAgent } = await import('@hostadm/agent/agent.ts');
  // From the TypeScript sources with a cold compile cache: begin again without the type stripper once
  // the agent's modules, its platform's included, are loaded (type-stripper-restart.ts).
  if (shouldRestartWithoutTypeStripper()) {
    await (await import('@hostadm/agent/platforms/index.ts')).loadPlatformModules(platformChoice);
    restartWithoutTypeStripper();
  }
  const logger = pino({ name: 'hostadm-agent', level: opts.logLevel }, pino.destination(2));
  let agent: Awaited<ReturnType<typeof StartAgent>>;
  try {
    agent = await startAgent({
      platform: platformChoice,
      dataDir,
      host,
      port,
      simPassword: opts.simPassword,
      simHostCommands: opts.simHostCommands,
      maxIsoBytes: opts.maxIsoBytes,
      adminGroup: opts.adminGroup,
      jailRoot: opts.jailRoot,
      tls: opts.tlsCert && opts.tlsKey ? { certFile: opts.tlsCert, keyFile: opts.tlsKey } : undefined,
      config: {
        tokenTtlSeconds: opts.tokenTtl,
        allowPasswordAuth: opts.passwordAuth,
        audit: { maxAgeDays: opts.auditRetentionDays, maxRows: opts.auditMaxRows },
      },
      dispatcher: {
        noQueueConcurrency: opts.maxParallelJobs,
        retentionSeconds: opts.jobRetention,
        maxFinishedJobs: opts.maxFinishedJobs,
        maxStoredLogBytes: opts.maxJobLogBytes,
      },
      bridge: opts.bridge ? { url: opts.bridge, joinToken: opts.join, nickname: opts.nickname } : undefined,
      logger,
    });
  } catch (err) {
    await exitIfAddressInUse(err, 'stop it, or choose another port with --listen HOST:PORT (port 0 picks a free one)');
    process.exit(reportError(err));
  }
  const restUrl = agent.url.replace(/^ws/, 'http');
  const lines = [
    `hostadm agent (${agent.services.platform.kind}) listening on ${agent.url}`,
    `  WebSocket: ${agent.url}   REST: PUT ${restUrl}/admin/<class>, PUT ${restUrl}/rpc/<name>`,
    `  Platform: ${agent.services.platform.kind} (${platformChoice === 'auto' ? 'detected by --platform auto' : '--platform'})${agent.services.platform.kind === 'sim' ? ', a simulated host' : ', administering THIS machine'}   Data: ${resolve(dataDir)}`,
    `  Host key: ${agent.services.hostKey.fingerprint}`,
  ];
  if (agent.services.platform.kind === 'sim') {
    const pw = opts.simPassword ?? DEFAULT_SIM_PASSWORD;
    lines.push(
      `  Accounts: admin (full access), operator (limited), root; password: ${opts.simPassword ? '(as given)' : pw}`,
      `  Dispatcher jobs: ${opts.simHostCommands ? 'REAL commands on this machine (--sim-host-commands)' : 'simulated (nothing runs on this machine)'}`,
      `  Try:  curl -s -u admin:${opts.simPassword ? '<password>' : pw} -X PUT ${restUrl}/rpc/query`,
      `        curl -s -X PUT ${restUrl}/rpc/identify`,
    );
  }
  if (opts.bridge) lines.push(`  Bridge: ${opts.bridge} (dialing out; clients pick this host by its key)`);
  lines.push('  Stop with Ctrl-C.');
  process.stdout.write(`${lines.join('\n')}\n`);

  const stop = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await agent.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
