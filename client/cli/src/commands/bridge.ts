/**
 * `hostadm bridge`: run the relay, issue join tokens, list and revoke registered keys
 * (docs/bridge-protocol.md §2). Definitions only at the top; the bridge code loads when a
 * subcommand runs, so other commands do not pay for it.
 *
 *   hostadm bridge --listen HOST:PORT --data DIR [--tls-cert F --tls-key F] [--log-level L]
 *   hostadm bridge token --data DIR --kind agent|client [--nickname N] [--ttl 3600|90m|1h|2d]
 *   hostadm bridge keys list --data DIR [--json]
 *   hostadm bridge keys revoke <key id or md5_key> --data DIR
 *
 * With `--url URL` (and `--admin-secret-file F` or HOSTADM_BRIDGE_ADMIN_SECRET), token, keys list and
 * keys revoke call the bridge's admin API instead of the data directory (bridge-admin.ts), so they
 * work against a remote bridge on any runtime.
 */
import { Command, InvalidArgumentError, Option } from 'commander';

const DEFAULT_DATA = '/var/db/hostadm-bridge';

interface ServeOptions {
  listen: { host: string; port: number };
  data: string;
  tlsCert?: string;
  tlsKey?: string;
  logLevel: string;
  maxConnectionsPerAddress: number;
}

interface AdminOptions {
  data: string;
  url?: string;
  adminSecretFile?: string;
}

interface TokenOptions extends AdminOptions {
  kind: 'agent' | 'client';
  nickname?: string;
  ttl: number;
}

const URL_HELP = "the bridge's address (https://HOST[:PORT]): use its admin API instead of --data";
const SECRET_FILE_HELP = 'with --url: file holding the admin secret (default: env HOSTADM_BRIDGE_ADMIN_SECRET, else <data>/admin-secret)';

export function bridgeCommand(): Command {
  const bridge = new Command('bridge').description('Run the bridge that hosts behind NAT and clients meet at; manage its keys');

  bridge
    .command('serve', { isDefault: true })
    .description('Run the bridge (the default: `hostadm bridge --listen ... --data ...`)')
    .option('--listen <host:port>', 'address to listen on; port 0 picks a free one', parseListen, parseListen('127.0.0.1:12149'))
    .option('--data <dir>', 'data directory (bridge.db, join-secret, admin-secret)', DEFAULT_DATA)
    .option('--tls-cert <file>', 'serve wss/https with this PEM certificate')
    .option('--tls-key <file>', 'private key for --tls-cert')
    .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
    .option('--max-connections-per-address <n>', 'sockets one address may hold at once (a NAT or proxy in front may need more)', parseCount, 256)
    .action(async (opts: ServeOptions) => serve(opts));

  bridge
    .command('token')
    .description('Print a one-time join token (JWT) that enrolls one agent or client key')
    .option('--data <dir>', "the bridge's data directory (its join-secret signs the token)", DEFAULT_DATA)
    .addOption(new Option('--kind <kind>', 'what the token enrolls').choices(['agent', 'client']).makeOptionMandatory())
    .option('--nickname <name>', 'name recorded for the key and shown to matched peers')
    .option('--ttl <duration>', 'validity: seconds, or with s/m/h/d (3600, 90m, 1h, 2d)', parseDuration, 3600)
    .option('--url <url>', URL_HELP)
    .option('--admin-secret-file <file>', SECRET_FILE_HELP)
    .action(async (opts: TokenOptions) => {
      const { checkNickname, remoteToken } = await import('./bridge-admin.ts');
      if (opts.url || opts.adminSecretFile) return remoteCommand(opts, (url) => remoteToken({ ...opts, url }));
      const { runCommand } = await import('../lib/exit.ts');
      await runCommand(async () => {
        await checkNickname(opts.nickname);
        const { issueJoinToken, joinSecretKey } = await loadBridge();
        const { userInfo } = await import('node:os');
        const { token } = await issueJoinToken(
          joinSecretKey(opts.data),
          { kind: opts.kind, nickname: opts.nickname, ttlSeconds: opts.ttl, createdBy: userInfo().username },
          Date.now(),
        );
        process.stdout.write(`${token}\n`);
      });
    });

  const keys = bridge.command('keys').description('Keys registered with the bridge');
  keys
    .command('list')
    .description('List registered keys (revoked ones included, marked)')
    .option('--data <dir>', "the bridge's data directory", DEFAULT_DATA)
    .option('--json', 'print JSON')
    .option('--url <url>', URL_HELP)
    .option('--admin-secret-file <file>', SECRET_FILE_HELP)
    .action(async (opts: AdminOptions & { json?: boolean }) => {
      const { keyRow, printKeys, remoteKeysList } = await import('./bridge-admin.ts');
      if (opts.url || opts.adminSecretFile) return remoteCommand(opts, (url) => remoteKeysList({ ...opts, url }));
      const store = await openStore(opts.data);
      try {
        const { keyJson } = await import('@hostadm/bridge/admin-routes.ts');
        await printKeys(
          (await store.list()).map((k) => keyRow(keyJson(k))),
          opts.json,
          'hostadm bridge token',
        );
      } finally {
        store.close();
      }
    });
  keys
    .command('revoke')
    .description('Revoke a key: it can no longer sign in, and a running bridge cuts its connections off')
    .argument('<key>', 'key id or md5_key (from `hostadm bridge keys list`)')
    .option('--data <dir>', "the bridge's data directory", DEFAULT_DATA)
    .option('--url <url>', `${URL_HELP} (without it: revoke in --data, then tell the bridge in <data>/bridge.url)`)
    .option('--admin-secret-file <file>', SECRET_FILE_HELP)
    .action(async (ref: string, opts: AdminOptions) => {
      if (!opts.url && !opts.adminSecretFile) return revoke(ref, opts);
      const { remoteRevoke } = await import('./bridge-admin.ts');
      return remoteCommand(opts, (url) => remoteRevoke(ref, { ...opts, url }));
    });

  return bridge;
}

async function serve(opts: ServeOptions): Promise<void> {
  if (!!opts.tlsCert !== !!opts.tlsKey) {
    process.stderr.write('error: --tls-cert and --tls-key go together\n');
    process.exit(2);
  }
  const { default: pino } = await import('pino');
  const { startBridge } = await loadBridge();
  // From the TypeScript sources with a cold compile cache: begin again without the type stripper (type-stripper-restart.ts).
  const restart = await import('../lib/type-stripper-restart.ts');
  if (restart.shouldRestartWithoutTypeStripper()) restart.restartWithoutTypeStripper();
  const logger = pino({ name: 'hostadm-bridge', level: opts.logLevel }, pino.destination(2));
  const bridge = await startBridge({
    listen: opts.listen,
    dataDir: opts.data,
    tls: opts.tlsCert && opts.tlsKey ? { certFile: opts.tlsCert, keyFile: opts.tlsKey } : undefined,
    logger,
    config: { maxConnectionsPerAddress: opts.maxConnectionsPerAddress },
  }).catch(async (err: unknown) => {
    const { exitIfAddressInUse } = await import('../lib/port-in-use.ts');
    await exitIfAddressInUse(err, 'stop it, or choose another port with --listen HOST:PORT (port 0 picks a free one)');
    throw err;
  });
  process.stdout.write(
    `${[
      `hostadm bridge listening on ${bridge.url}`,
      `  Health: ${bridge.httpUrl}/healthz   Metrics: ${bridge.httpUrl}/metrics`,
      `  Enroll a peer:  hostadm bridge token --data ${opts.data} --kind agent|client`,
      '  Stop with Ctrl-C.',
    ].join('\n')}\n`,
  );
  const stop = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await bridge.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

/** URL mode (bridge-admin.ts): errors become one line and the CLI's exit codes (lib/exit.ts). */
async function remoteCommand(opts: AdminOptions, body: (url: string) => Promise<void>): Promise<void> {
  const { runCommand, usageError } = await import('../lib/exit.ts');
  await runCommand(async () => {
    if (!opts.url) throw usageError('--admin-secret-file goes with --url');
    await body(opts.url);
  });
}

async function revoke(ref: string, opts: { data: string }): Promise<void> {
  const { ADMIN_SECRET_FILE, URL_FILE, readOrCreateSecret } = await loadBridge();
  const { existsSync, readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const store = await openStore(opts.data);
  let key: Awaited<ReturnType<typeof store.revoke>>;
  try {
    key = await store.revoke(ref, Date.now());
  } finally {
    store.close();
  }
  if (!key) {
    process.stderr.write(`error: no key ${ref} (see hostadm bridge keys list --data ${opts.data})\n`);
    process.exit(1);
  }
  process.stdout.write(`revoked ${key.id} (${key.kind} ${key.nickname || key.md5Key})\n`);

  const urlFile = join(opts.data, URL_FILE);
  const base = existsSync(urlFile) ? readFileSync(urlFile, 'utf8').trim() : '';
  if (!base) {
    process.stdout.write('no running bridge known (no bridge.url): a bridge started later refuses the key\n');
    return;
  }
  const url = `${base
    .replace(/^ws/, 'http')
    .replace(/\/relay\/?$/, '')
    .replace(/\/+$/, '')}/admin/revoke`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${readOrCreateSecret(opts.data, ADMIN_SECRET_FILE)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: key.id }),
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`HTTP ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { disconnected: number };
    process.stdout.write(`bridge at ${base} cut off ${body.disconnected} connection(s)\n`);
  } catch (err) {
    process.stderr.write(`warning: could not tell the bridge at ${base} (${(err as Error).message}); a running bridge re-reads revocations every 5 s\n`);
  }
}

async function openStore(dataDir: string) {
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  if (!existsSync(join(dataDir, 'bridge.db'))) {
    process.stderr.write(`error: no bridge database in ${dataDir} (start the bridge once with --data ${dataDir})\n`);
    process.exit(1);
  }
  const { SqliteKeyStore } = await loadBridge();
  return new SqliteKeyStore(dataDir);
}

function parseCount(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected a whole number of at least 1, not ${JSON.stringify(text)}`);
  return n;
}

function parseListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new InvalidArgumentError('expected HOST:PORT, for example 0.0.0.0:12149 (port 0 picks a free one)');
  return { host: match[1] ?? match[2] ?? '127.0.0.1', port };
}

function parseDuration(value: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(value.trim());
  const n = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive duration: 3600, 90m, 1h or 2d');
  const seconds = n * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (seconds > 365 * 86400) throw new InvalidArgumentError('at most a year');
  return seconds;
}

/**
 * The bridge's modules, drizzle-orm among them, loaded after drizzle-load-hook.ts is in place (without
 * it Node re-parses drizzle-orm's 175 KB exports map for each of its modules: a peak of ~170 MB more).
 */
async function loadBridge(): Promise<typeof import('@hostadm/bridge')> {
  const { loadDrizzleWithoutPackageJsonReparse } = await import('@hostadm/shared/node/drizzle-load-hook.ts');
  loadDrizzleWithoutPackageJsonReparse();
  return import('@hostadm/bridge');
}
