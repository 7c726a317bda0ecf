/**
 * `hostadm`: one command line for every program. Subcommands load their code lazily so a quick
 * `hostadm call` does not pay for the agent's imports, and `hostadm call`, the command scripts run
 * most, defines only itself: the other definitions (the agent's and the bridge's options, every client
 * command, completion) cost about 5 ms of CPU per command to build (test/bench/cli-start).
 */
import { InvalidArgumentError } from 'commander';
import { registerClientCommands } from './client-commands.ts';
import { newProgram, runCallProgram } from './call-program.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';

const program = newProgram();

/** `hostadm agent` (and `agent keys`) and `hostadm bridge`: definitions only; their code loads when one runs. */
async function registerServerCommands(): Promise<void> {
  const agentCommand = program
    .command('agent')
    .description('Run the agent that administers this host (WebSocket + REST on one port)')
    .option('--platform <kind>', 'required: sim (a simulated host, nothing here changes), or linux, freebsd or auto to administer this machine', parsePlatform)
    .option('--listen <host:port>', 'address to listen on; port 0 picks a free one', parseListen, parseListen('127.0.0.1:12150'))
    .option('--data <dir>', 'data directory (SQLite store, sim host state); default /var/db/hostadm, for root only')
    .option(
      '--sim-password <password>',
      'password of the sim accounts root, admin and operator (default: hostadm); prefer --sim-password-file or HOSTADM_SIM_PASSWORD',
    )
    .option('--sim-password-file <file>', "read the sim accounts' password from the first line of this file")
    .option('--sim-host-commands', "sim only: run dispatcher jobs as real commands on this machine, as the agent's user (default: simulated)")
    .option('--token-ttl <seconds>', 'session token validity without traffic', parsePositiveInt, 300)
    .option('--tls-cert <file>', 'serve wss/https with this PEM certificate')
    .option('--tls-key <file>', 'private key for --tls-cert')
    .option('--admin-group <group>', 'group whose members get full access (default: wheel; sudo on Debian/Ubuntu Linux)')
    .option('--jail-root <dir>', 'linux: where releases and jails live (default: <data>/jails; no , : or spaces)')
    .option('--no-password-auth', 'refuse username/password sign-in (keys and tokens only)')
    .option('--bridge <url>', 'also dial out to this bridge (ws:// or wss://) so clients reach this host through it')
    .option('--join <token>', 'one-time join token from `hostadm bridge token --kind agent` (first connection only); prefer --join-file or HOSTADM_JOIN_TOKEN')
    .option('--join-file <file>', 'read the join token from the first line of this file')
    .option('--nickname <name>', 'name this host shows to clients of the bridge')
    .option('--max-parallel-jobs <n>', 'dispatcher jobs of no_queue that run at once', parsePositiveInt, 4)
    .option('--job-retention <seconds>', 'how long finished jobs stay listed and readable', parsePositiveInt, 86400)
    .option('--max-finished-jobs <n>', 'finished jobs kept at most (the oldest go first)', parsePositiveInt, LIMITS.maxFinishedJobs)
    .option('--max-job-log-bytes <n>', "total bytes of finished jobs' logs kept at most", parsePositiveInt, LIMITS.maxStoredJobLogBytes)
    .option('--max-iso-bytes <n>', 'largest ISO image vm fetchiso downloads', parsePositiveInt, 16 * 1024 ** 3)
    .option(
      '--audit-retention-days <days>',
      'audit rows (changes, sign-ins, refusals, hourly read counts) kept this long',
      parsePositiveInt,
      LIMITS.auditRetentionDays,
    )
    .option('--audit-max-rows <n>', 'rows kept at most in each audit table (the oldest go first)', parsePositiveInt, LIMITS.auditMaxRows)
    .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
    .action(async (opts: AgentCliOptions) => {
      const { runAgentCommand } = await import('./commands/agent.ts');
      await runAgentCommand(opts);
    });

  // `hostadm agent keys authorize|pending`: on the host, let a client key in without a password.
  agentCommand.addCommand((await import('./commands/agent-keys.ts')).agentKeysCommand());

  // `hostadm bridge [serve] | token | keys list | keys revoke`: definitions only; the bridge loads when one runs.
  program.addCommand((await import('./commands/bridge.ts')).bridgeCommand());
}

export interface AgentCliOptions {
  /** No default: a mistyped command must not start administering this machine (client/cli/README.md). */
  platform?: 'sim' | 'linux' | 'freebsd' | 'auto';
  listen: { host: string; port: number };
  /** Default /var/db/hostadm, refused when not root. */
  data?: string;
  simPassword?: string;
  simPasswordFile?: string;
  simHostCommands?: boolean;
  tokenTtl: number;
  tlsCert?: string;
  tlsKey?: string;
  adminGroup?: string;
  jailRoot?: string;
  passwordAuth: boolean;
  maxParallelJobs: number;
  bridge?: string;
  join?: string;
  joinFile?: string;
  nickname?: string;
  jobRetention: number;
  maxFinishedJobs: number;
  maxJobLogBytes: number;
  maxIsoBytes: number;
  auditRetentionDays: number;
  auditMaxRows: number;
  logLevel: string;
}

function parsePlatform(value: string): NonNullable<AgentCliOptions['platform']> {
  if (value === 'sim' || value === 'linux' || value === 'freebsd' || value === 'auto') return value;
  throw new InvalidArgumentError('expected sim, linux, freebsd or auto');
}

function parseListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new InvalidArgumentError('expected HOST:PORT, for example 127.0.0.1:12150 (port 0 picks a free one)');
  return { host: match[1] ?? match[2] ?? '127.0.0.1', port };
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

if (process.argv[2] === 'call') {
  await runCallProgram(process.argv);
} else {
  await registerServerCommands();
  registerClientCommands(program);
  program.addCommand((await import('./commands/completion.ts')).completionCommand(program));
  await program.parseAsync(process.argv);
}
