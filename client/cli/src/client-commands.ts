/**
 * The client side of `hostadm`: `call`, the friendly commands (ps, users, services, jobs, events),
 * login/logout, profiles and keys. Only commander is loaded here; each command's code (and the SDK,
 * the contracts, tables, progress bars) is imported when that command runs, so `hostadm call` starts
 * quickly. Exit codes: see lib/exit.ts and client/cli/README.md.
 */
import { enableCompileCache } from 'node:module';
import { type Command, InvalidArgumentError, type CommanderError } from 'commander';
import { packageVersion } from './lib/version.ts';

// V8's code cache for the modules a command loads lazily (the SDK, the contracts, zod): a repeated
// `hostadm call` starts noticeably faster. Node keeps it in its temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
enableCompileCache();

const EXIT_USAGE = 2;

export interface ConnectionOptions {
  profile?: string;
  url?: string;
  bridge?: string;
  host?: string;
  hostKey?: string;
  user?: string;
  key?: string;
  join?: string;
  joinFile?: string;
  timeout?: number;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number');
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number (0 picks a free one)');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

/** Where and how to connect; every command that talks to a host takes these. */
function withConnection(cmd: Command): Command {
  return cmd
    .option('--profile <name>', 'connection profile (default: the default profile; env HOSTADM_PROFILE)')
    .option('--url <url>', 'agent address ws://HOST:PORT or wss://HOST:PORT (env HOSTADM_URL)')
    .option('--bridge <url>', 'reach the host through this bridge ws://HOST:PORT (env HOSTADM_BRIDGE); needs --host and --key')
    .option('--host <name>', 'the host behind the bridge: nickname, hostname or SHA256:fingerprint (env HOSTADM_HOST)')
    .option('--host-key <fingerprint>', 'expected host key SHA256:... on first use (env HOSTADM_ACCEPT_HOST_KEY)')
    .option('--user <name>', 'user to sign in as (env HOSTADM_USER); password from HOSTADM_PASSWORD or a prompt')
    .option('--key <file>', 'sign in with this private key (env HOSTADM_KEY; through a bridge: default keys/default.key)')
    .option('--join <token>', 'client join token from the bridge operator: enrolls the key at the bridge once (env HOSTADM_JOIN_TOKEN)')
    .option('--join-file <file>', 'read the client join token from the first line of this file')
    .option('--timeout <seconds>', 'seconds to wait for each reply', positiveNumber, 30);
}

/** Usage errors exit 2; help and version exit 0. */
function exitCodes(err: CommanderError): void {
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') process.exit(0);
  process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
}

/** What every command shares: the version, the exit codes, the closing help text. */
export function configureProgram(program: Command): void {
  program.version(packageVersion(), '-V, --version', 'print the hostadm version');
  program.exitOverride(exitCodes);
  program.addHelpText(
    'after',
    `
Connecting: --url/--user (or a profile: hostadm profile add), password from HOSTADM_PASSWORD or a prompt,
or --key FILE. A session token is cached per profile so the next command does not sign in again.
Exit codes: 0 ok, 2 usage, 3 sign-in failed, 4 refused by the host, 5 host error or failed job,
6 connection failure. Details: client/cli/README.md.`,
  );
}

/** The arguments and options of `hostadm call`, on `call` (a command named so). */
function defineCall(call: Command): Command {
  return withConnection(
    call
      .description('call any action: hostadm call <class> <action> [key=value ...] (hostadm call --help)')
      .argument('[class]', 'class, `admin/<class>` (default namespace) or `rpc/<name>`')
      .argument('[action]', 'the action (rpc operations such as rpc/identify have none)')
      .argument('[args...]', 'key=value (string), key:=json (JSON value)')
      .option('--json <object>', 'arguments as a JSON object (key=value pairs apply on top)')
      .option('--no-wait', 'queued actions: print the job id(s) and return at once')
      .option('--progress <mode>', 'queued actions: bar, log, none or auto', 'auto')
      .helpOption(false)
      .option('-h, --help', 'list classes; with a class, its actions and arguments'),
  );
}

/** `hostadm call`: any action of any class. */
export function registerCallCommand(program: Command): void {
  defineCall(program.command('call')).action(async (cls: string | undefined, action: string | undefined, args: string[], opts) => {
    const { runCall } = await import('./commands/call.ts');
    await runCall(cls, action, args, opts);
  });
}

export interface ParsedCall {
  cls: string | undefined;
  action: string | undefined;
  rest: string[];
  opts: import('./commands/call.ts').CallOptions;
}

/**
 * The words after `hostadm call` as `call` reads them, for a persisted session (lib/control-session.ts).
 * Throws (a CommanderError) on what `call` would refuse; prints nothing.
 */
export async function parseCallArgv(argv: readonly string[], commandClass: typeof Command): Promise<ParsedCall> {
  let parsed: ParsedCall | undefined;
  const call = defineCall(new commandClass('call'))
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} })
    .action((cls: string | undefined, action: string | undefined, rest: string[], opts: ParsedCall['opts']) => {
      parsed = { cls, action, rest, opts };
    });
  await call.parseAsync([...argv], { from: 'user' });
  if (!parsed) throw new Error('hostadm call: no arguments parsed');
  return parsed;
}

/** `hostadm session status|stop` and the hidden `session serve` that a call with HOSTADM_PERSIST starts. */
function registerSessionCommands(program: Command): void {
  const session = program.command('session').description('persisted sessions (HOSTADM_PERSIST): status, stop');
  session
    .command('status')
    .description('list the persisted sessions of this user: profile, host, pid, calls served, idle time left')
    .option('--json', 'print one JSON document (an array)')
    .action(async (opts: { json?: boolean }) => {
      const { runSessionStatus } = await import('./commands/session.ts');
      await runSessionStatus(opts);
    });
  session
    .command('stop')
    .description('end every persisted session of this user (the next call opens its own connection)')
    .action(async () => {
      const { runSessionStop } = await import('./commands/session.ts');
      await runSessionStop();
    });
  session
    .command('serve', { hidden: true })
    .description('hold a bridged session for later calls (started by hostadm call when HOSTADM_PERSIST is set)')
    .requiredOption('--socket <path>', 'the control socket to listen on')
    .requiredOption('--idle <ms>', 'exit after this long without a call', positiveInt)
    .argument('[call...]', 'the arguments of the call that started it')
    .allowUnknownOption()
    .action(async (callArgv: string[], opts: { socket: string; idle: number }) => {
      const { serveControlSession } = await import('./lib/control-session.ts');
      await serveControlSession(opts.socket, opts.idle, callArgv);
    });
}

/** Every client command (`call` included): connections, profiles, keys, sessions, `up`. */
export function registerClientCommands(program: Command): void {
  configureProgram(program);
  registerCallCommand(program);
  registerSessionCommands(program);

  // ------------------------------------------------------------------ friendly commands
  withConnection(
    program
      .command('ps')
      .description('list processes on the host')
      .option('--json', 'print one JSON document (an array of processes)')
      .option('--sort <column>', 'pid, cpu, res, time or user', 'pid')
      .option('--filter-user <name>', 'only processes of this user'),
  ).action(async (opts) => {
    const { runPs } = await import('./commands/ps.ts');
    await runPs(opts);
  });

  withConnection(
    program
      .command('users')
      .description('list user accounts (--groups: groups)')
      .option('--json', 'print one JSON document (an array)')
      .option('--groups', 'list groups instead of users'),
  ).action(async (opts) => {
    const { runUsers } = await import('./commands/users.ts');
    await runUsers(opts);
  });

  const services = program.command('services').description('list services; start, stop, restart, enable or disable them');
  withConnection(services.command('list', { isDefault: true }).description('list services').option('--json', 'print one JSON document (an array)')).action(
    async (opts) => {
      const { runServicesList } = await import('./commands/services.ts');
      await runServicesList(opts);
    },
  );
  for (const verb of ['start', 'stop', 'restart', 'enable', 'disable'] as const) {
    withConnection(
      services.command(verb).description(`${verb} services`).argument('<names...>', 'service names').option('--json', 'print the reply as JSON'),
    ).action(async (names: string[], opts) => {
      const { runServicesAction } = await import('./commands/services.ts');
      await runServicesAction(verb, names, opts);
    });
  }

  const jobs = program.command('jobs').description('dispatcher jobs: list, run, wait, log, kill, ack');
  withConnection(jobs.command('list', { isDefault: true }).description('list jobs by queue').option('--json', 'print one JSON document (an array)')).action(
    async (opts) => {
      const { runJobsList } = await import('./commands/jobs.ts');
      await runJobsList(opts);
    },
  );
  withConnection(
    jobs
      .command('run')
      .description('run a command on the host as a dispatcher job and show its output (no shell: no pipes)')
      .argument('<command...>', 'the command and its arguments (put -- before options of the command)')
      .option('--id <id>', 'job id (default: cli-<time>-<random>)')
      .option('--no-wait', 'print the job id and return at once')
      .option('--json', 'print the completion event as one JSON document')
      .option('--progress <mode>', 'bar, log, none or auto', 'auto'),
  ).action(async (command: string[], opts) => {
    const { runJobsRun } = await import('./commands/jobs.ts');
    await runJobsRun(command, opts);
  });
  withConnection(
    jobs
      .command('wait')
      .description('follow a job until it finishes (for example one started with --no-wait)')
      .argument('<id>', 'job id')
      .option('--json', 'print the completion event as one JSON document')
      .option('--progress <mode>', 'bar, log, none or auto', 'auto'),
  ).action(async (id: string, opts) => {
    const { runJobsWait } = await import('./commands/jobs.ts');
    await runJobsWait(id, opts);
  });
  withConnection(jobs.command('log').description("print a job's output").argument('<id>', 'job id').option('--json', "print the job's record as JSON")).action(
    async (id: string, opts) => {
      const { runJobsLog } = await import('./commands/jobs.ts');
      await runJobsLog(id, opts);
    },
  );
  withConnection(
    jobs
      .command('kill')
      .description('cancel pending or running jobs (full access)')
      .argument('<ids...>', 'job ids')
      .option('--json', 'print the reply as JSON'),
  ).action(async (ids: string[], opts) => {
    const { runJobsKill } = await import('./commands/jobs.ts');
    await runJobsKill(ids, opts);
  });
  withConnection(
    jobs.command('ack').description('remove finished jobs from the list').argument('<ids...>', 'job ids').option('--json', 'print the reply as JSON'),
  ).action(async (ids: string[], opts) => {
    const { runJobsAck } = await import('./commands/jobs.ts');
    await runJobsAck(ids, opts);
  });

  withConnection(
    program
      .command('events')
      .description('print events as they arrive (default: dispatcher)')
      .argument('[names...]', 'dispatcher, life-preserver, system-state')
      .option('--json', 'one JSON document per line per event (NDJSON)')
      .option('--count <n>', 'exit after this many events', positiveInt),
  ).action(async (names: string[], opts) => {
    const { runEvents } = await import('./commands/events.ts');
    await runEvents(names, opts);
  });

  // ------------------------------------------------------------------ hosts behind a bridge
  withConnection(
    program
      .command('hosts')
      .description('list the hosts your key may reach through a bridge (nickname, host key, access, online since, pinned)')
      .option('--json', 'print one JSON document'),
  ).action(async (opts) => {
    const { runHosts } = await import('./commands/hosts.ts');
    await runHosts(opts);
  });

  // ------------------------------------------------------------------ sessions
  withConnection(
    program
      .command('login')
      .description(
        'sign in and cache the session token; through a bridge: enroll the key (--join-file), pin the host key, sign in by password once, register the key and save a profile',
      )
      .option('--save-profile <name>', 'through a bridge: the profile to save (default: the --profile name, else the host name)'),
  ).action(async (opts) => {
    const { runLogin } = await import('./commands/login.ts');
    await runLogin(opts);
  });
  withConnection(program.command('logout').description('end the cached session on the host and forget its token')).action(async (opts) => {
    const { runLogout } = await import('./commands/login.ts');
    await runLogout(opts);
  });

  // ------------------------------------------------------------------ up
  program
    .command('up')
    .description('start a bridge and a sim agent joined to it, with a key and a profile to reach it (until Ctrl-C)')
    .option('--port-bridge <n>', 'bridge port on 127.0.0.1 (0: a free one)', nonNegativeInt, 12160)
    .option('--port-agent <n>', 'agent port on 127.0.0.1 (0: a free one)', nonNegativeInt, 12150)
    .option('--data <dir>', 'data directory for the bridge and the agent', '.hostadm')
    .option('--profile <name>', 'profile (and key name) to create for the local user', 'local')
    .option('--log-level <level>', 'trace, debug, info, warn or error', 'warn')
    .action(async (opts) => {
      const { runUp } = await import('./commands/up.ts');
      await runUp(opts);
    });

  // ------------------------------------------------------------------ profiles
  const profile = program.command('profile').description('connection profiles in $XDG_CONFIG_HOME/hostadm/config.json');
  profile
    .command('add')
    .description('add or replace a profile (the first one becomes the default)')
    .argument('<name>', 'profile name')
    .option('--url <url>', 'agent address ws://HOST:PORT or wss://HOST:PORT')
    .option('--bridge <url>', 'through this bridge ws://HOST:PORT instead of --url (with --host and --key)')
    .option('--host <name>', 'the host behind the bridge: nickname, hostname or SHA256:fingerprint')
    .option('--user <name>', 'user to sign in as')
    .option('--key <file>', 'private key for key sign-in')
    .option('--default', 'make it the default profile')
    .action(async (name: string, opts) => {
      const { runProfileAdd } = await import('./commands/profile.ts');
      await runProfileAdd(name, opts);
    });
  profile
    .command('list')
    .description('list profiles')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { runProfileList } = await import('./commands/profile.ts');
      await runProfileList(opts);
    });
  profile
    .command('use')
    .description('make a profile the default')
    .argument('<name>', 'profile name')
    .action(async (name: string) => {
      const { runProfileUse } = await import('./commands/profile.ts');
      await runProfileUse(name);
    });
  profile
    .command('remove')
    .description('remove a profile and its cached token')
    .argument('<name>', 'profile name')
    .action(async (name: string) => {
      const { runProfileRemove } = await import('./commands/profile.ts');
      await runProfileRemove(name);
    });

  // ------------------------------------------------------------------ keys
  const keys = program.command('keys').description('keys for key sign-in: new, register, list, revoke');
  keys
    .command('new')
    .description('create an RSA-2048 key and a self-signed X.509 certificate in the config directory')
    .option('--name <name>', 'key name (files keys/<name>.key and keys/<name>.crt)', 'default')
    .option('--force', 'replace an existing key of that name')
    .action(async (opts) => {
      const { runKeysNew } = await import('./commands/keys.ts');
      await runKeysNew(opts);
    });
  withConnection(
    keys
      .command('register')
      .description('register a key for the signed-in user (proves the key by signing the session token)')
      .option('--name <name>', 'a key made by hostadm keys new', 'default')
      .option('--key-file <file>', 'a private key elsewhere (its certificate next to it: .crt)')
      .option('--nickname <text>', 'a name for the key on the host (default: the key name)')
      .option('--email <address>', 'contact address for the key'),
  ).action(async (opts) => {
    const { runKeysRegister } = await import('./commands/keys.ts');
    await runKeysRegister(opts);
  });
  withConnection(keys.command('list').description('list registered keys (full access: every user)').option('--json', 'print one JSON document')).action(
    async (opts) => {
      const { runKeysList } = await import('./commands/keys.ts');
      await runKeysList(opts);
    },
  );
  withConnection(
    keys
      .command('revoke')
      .description('revoke a registered key: a local key name, a nickname, or an md5 from hostadm keys list')
      .argument('<key>', 'key name, nickname or md5')
      .option('--owner <user>', "the key's owner (full access: another user's key)"),
  ).action(async (key: string, opts) => {
    const { runKeysRevoke } = await import('./commands/keys.ts');
    await runKeysRevoke(key, opts);
  });
}
