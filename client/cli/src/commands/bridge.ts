/**
 * `hostadm bridge`: run the relay, issue join tokens, list and revoke registered keys
 * (docs/bridge-protocol.md §2). Definitions only at the top; the bridge code loads when a
 * subcommand runs, so other commands do not pay for it.
 *
 *   hostadm bridge --listen HOST:PORT --data DIR [--tls-cert F --tls-key F] [--log-level L]
 *   hostadm bridge token --data DIR --kind agent|client [--nickname N] [--ttl 3600|90m|1h|2d]
 *   hostadm bridge keys list --data DIR [--json]
 *   hostadm bridge keys revoke <key id or md5_key> --data DIR [--url URL]
 */
import { Command, InvalidArgumentError, Option } from 'commander';

const DEFAULT_DATA = '/var/db/hostadm-bridge';

interface ServeOptions {
  listen: { host: string; port: number };
  data: string;
  tlsCert?: string;
  tlsKey?: string;
  logLevel: string;
}

interface TokenOptions {
  data: string;
  kind: 'agent' | 'client';
  nickname?: string;
  ttl: number;
}

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
    .action(async (opts: ServeOptions) => serve(opts));

  bridge
    .command('token')
    .description('Print a one-time join token (JWT) that enrolls one agent or client key')
    .option('--data <dir>', 'the bridge\'s data directory (its join-secret signs the token)', DEFAULT_DATA)
    .addOption(new Option('--kind <kind>', 'what the token enrolls').choices(['agent', 'client']).makeOptionMandatory())
    .option('--nickname <name>', 'name recorded for the key and shown to matched peers')
    .option('--ttl <duration>', 'validity: seconds, or with s/m/h/d (3600, 90m, 1h, 2d)', parseDuration, 3600)
    .action(async (opts: TokenOptions) => {
      const { issueJoinToken, joinSecretKey } = await import('@hostadm/bridge');
      const { userInfo } = await import('node:os');
      const { token } = await issueJoinToken(
        joinSecretKey(opts.data),
        { kind: opts.kind, nickname: opts.nickname, ttlSeconds: opts.ttl, createdBy: userInfo().username },
        Date.now(),
      );
      process.stdout.write(`${token}\n`);
    });

  const keys = bridge.command('keys').description('Keys registered with the bridge');
  keys
    .command('list')
    .description('List registered keys (revoked ones included, marked)')
    .option('--data <dir>', 'the bridge\'s data directory', DEFAULT_DATA)
    .option('--json', 'print JSON')
    .action(async (opts: { data: string; json?: boolean }) => {
      const store = await openStore(opts.data);
      try {
        const rows = (await store.list()).map((k) => ({
          key_id: k.id,
          md5_key: k.md5Key,
          kind: k.kind,
          algorithm: k.algorithm,
          nickname: k.nickname,
          created_by: k.createdBy,
          created_at: iso(k.createdAt),
          last_seen_at: iso(k.lastSeenAt),
          revoked_at: iso(k.revokedAt),
        }));
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
          return;
        }
        if (rows.length === 0) {
          process.stdout.write('no keys registered; enroll one with a token from `hostadm bridge token`\n');
          return;
        }
        const { default: Table } = await import('cli-table3');
        const table = new Table({ head: ['key id', 'kind', 'nickname', 'md5_key', 'algorithm', 'created', 'last seen', 'revoked'] });
        for (const r of rows) {
          table.push([r.key_id, r.kind, r.nickname, r.md5_key, r.algorithm, r.created_at ?? '', r.last_seen_at ?? '', r.revoked_at ?? '']);
        }
        process.stdout.write(`${table.toString()}\n`);
      } finally {
        store.close();
      }
    });
  keys
    .command('revoke')
    .description('Revoke a key: it can no longer sign in, and a running bridge cuts its connections off')
    .argument('<key>', 'key id or md5_key (from `hostadm bridge keys list`)')
    .option('--data <dir>', 'the bridge\'s data directory', DEFAULT_DATA)
    .option('--url <url>', 'the running bridge (default: the address in <data>/bridge.url)')
    .action(async (ref: string, opts: { data: string; url?: string }) => revoke(ref, opts));

  return bridge;
}

async function serve(opts: ServeOptions): Promise<void> {
  if (!!opts.tlsCert !== !!opts.tlsKey) {
    process.stderr.write('error: --tls-cert and --tls-key go together\n');
    process.exit(2);
  }
  const { default: pino } = await import('pino');
  const { startBridge } = await import('@hostadm/bridge');
  const logger = pino({ name: 'hostadm-bridge', level: opts.logLevel }, pino.destination(2));
  const bridge = await startBridge({
    listen: opts.listen,
    dataDir: opts.data,
    tls: opts.tlsCert && opts.tlsKey ? { certFile: opts.tlsCert, keyFile: opts.tlsKey } : undefined,
    logger,
  });
  process.stdout.write(
    [
      `hostadm bridge listening on ${bridge.url}`,
      `  Health: ${bridge.httpUrl}/healthz   Metrics: ${bridge.httpUrl}/metrics`,
      `  Enroll a peer:  hostadm bridge token --data ${opts.data} --kind agent|client`,
      '  Stop with Ctrl-C.',
    ].join('\n') + '\n',
  );
  const stop = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await bridge.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

async function revoke(ref: string, opts: { data: string; url?: string }): Promise<void> {
  const { ADMIN_SECRET_FILE, URL_FILE, readOrCreateSecret } = await import('@hostadm/bridge');
  const { existsSync, readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const store = await openStore(opts.data);
  let key;
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
  const base = opts.url ?? (existsSync(urlFile) ? readFileSync(urlFile, 'utf8').trim() : '');
  if (!base) {
    process.stdout.write('no running bridge known (no --url, no bridge.url): a bridge started later refuses the key\n');
    return;
  }
  const url = `${base.replace(/^ws/, 'http').replace(/\/relay\/?$/, '').replace(/\/+$/, '')}/admin/revoke`;
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
    process.stderr.write(
      `warning: could not tell the bridge at ${base} (${(err as Error).message}); a running bridge re-reads revocations every 5 s\n`,
    );
  }
}

async function openStore(dataDir: string) {
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  if (!existsSync(join(dataDir, 'bridge.db'))) {
    process.stderr.write(`error: no bridge database in ${dataDir} (start the bridge once with --data ${dataDir})\n`);
    process.exit(1);
  }
  const { SqliteKeyStore } = await import('@hostadm/bridge');
  return new SqliteKeyStore(dataDir);
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
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
