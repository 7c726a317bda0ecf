/**
 * `hostadm bridge token|keys list|keys revoke --url URL`: the operator commands against a remote
 * bridge's admin API (docs/bridge-protocol.md §2.8), on any runtime (Node or Workers), with the
 * admin secret from `--admin-secret-file`, `HOSTADM_BRIDGE_ADMIN_SECRET` or `<data>/admin-secret`.
 * Also the key table both modes print. Loaded only when one of those commands runs.
 */
import { CliError, EXIT, usageError } from '../lib/exit.ts';

export const SECRET_ENV = 'HOSTADM_BRIDGE_ADMIN_SECRET';
const TIMEOUT_MS = 10_000;

/** A key row as `keys list` prints it (both modes, same fields in the same order). */
export interface KeyRow {
  key_id: string;
  md5_key: string;
  kind: string;
  algorithm: string;
  nickname: string;
  created_by: string;
  created_at: string | null;
  last_seen_at: string | null;
  revoked_at: string | null;
}

export function keyRow(k: KeyRow): KeyRow {
  const { key_id, md5_key, kind, algorithm, nickname, created_by, created_at, last_seen_at, revoked_at } = k;
  return { key_id, md5_key, kind, algorithm, nickname, created_by, created_at, last_seen_at, revoked_at };
}

export async function printKeys(rows: KeyRow[], json: boolean | undefined, enrollHint: string): Promise<void> {
  if (json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write(`no keys registered; enroll one with a token from \`${enrollHint}\`\n`);
    return;
  }
  const rowsOut = rows.map((r) => [r.key_id, r.kind, r.nickname, r.md5_key, r.algorithm, r.created_at ?? '', r.last_seen_at ?? '', r.revoked_at ?? '']);
  const head = ['key id', 'kind', 'nickname', 'md5_key', 'algorithm', 'created', 'last seen', 'revoked'];
  // Lines and colours only for a person at a terminal who has not asked for none (https://no-color.org).
  if (!process.stdout.isTTY || process.env.NO_COLOR) {
    const { printTable } = await import('../lib/output.ts');
    await printTable(head, rowsOut);
    return;
  }
  const { default: Table } = await import('cli-table3');
  const table = new Table({ head });
  for (const row of rowsOut) table.push(row);
  process.stdout.write(`${table.toString()}\n`);
}

/** What the nickname must look like (the bridge's rule, checked before anything is signed or sent). */
export async function checkNickname(nickname: string | undefined): Promise<void> {
  if (nickname === undefined) return;
  const { NICKNAME_PATTERN, NICKNAME_RULE } = await import('@hostadm/bridge/admin-routes.ts');
  if (!NICKNAME_PATTERN.test(nickname)) throw usageError(`--nickname ${JSON.stringify(nickname)}: expected ${NICKNAME_RULE}`);
}

export interface RemoteOptions {
  url: string;
  adminSecretFile?: string;
  data: string;
}

interface Remote {
  /** `http(s)://host[:port][/prefix]` without a trailing slash. */
  base: string;
  secret: string;
  /** Where the secret came from, for the 401 message. */
  source: string;
}

/** The bridge's HTTP base: http(s) as given, ws(s) turned into http(s); a trailing `/relay` dropped. */
export function bridgeBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(`--url ${JSON.stringify(url)}: expected the bridge's address, https://HOST[:PORT] (or http://, ws://, wss://)`);
  }
  const scheme = { 'http:': 'http:', 'https:': 'https:', 'ws:': 'http:', 'wss:': 'https:' }[parsed.protocol];
  if (!scheme) throw usageError(`--url ${JSON.stringify(url)}: expected an http(s) or ws(s) URL`);
  if (parsed.username || parsed.password) throw usageError('--url: no credentials in the URL; the admin secret goes in --admin-secret-file');
  parsed.protocol = scheme;
  parsed.search = '';
  parsed.hash = '';
  return parsed
    .toString()
    .replace(/\/relay\/?$/, '')
    .replace(/\/+$/, '');
}

async function resolveRemote(opts: RemoteOptions): Promise<Remote> {
  const base = bridgeBase(opts.url);
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  let secret: string;
  let source: string;
  if (opts.adminSecretFile) {
    source = opts.adminSecretFile;
    try {
      secret = readFileSync(opts.adminSecretFile, 'utf8').trim();
    } catch (err) {
      throw usageError(`--admin-secret-file ${opts.adminSecretFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!secret) throw usageError(`--admin-secret-file ${opts.adminSecretFile} is empty`);
  } else if (process.env[SECRET_ENV]?.trim()) {
    secret = process.env[SECRET_ENV].trim();
    source = SECRET_ENV;
  } else {
    source = join(opts.data, 'admin-secret');
    try {
      secret = readFileSync(source, 'utf8').trim();
    } catch {
      secret = '';
    }
    if (!secret) {
      throw usageError(
        `no admin secret for ${base}`,
        `pass --admin-secret-file FILE or set ${SECRET_ENV} (the bridge's <data>/admin-secret, or its Workers secret ADMIN_SECRET)`,
      );
    }
  }
  return { base, secret, source };
}

/** One admin API call; HTTP failures become CliErrors with the CLI's exit codes. */
async function call<T>(remote: Remote, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const url = `${remote.base}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${remote.secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = e.name === 'TimeoutError' ? `no answer in ${TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new CliError(EXIT.connection, `cannot reach the bridge at ${remote.base} (${why})`);
  }
  const text = await res.text();
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    reply = undefined;
  }
  const error = reply && typeof reply === 'object' && 'error' in reply && typeof reply.error === 'string' ? reply.error : undefined;
  if (res.ok && reply !== undefined) return reply as T;
  if (res.status === 401) {
    throw new CliError(EXIT.auth, `401 Unauthorized: the bridge at ${remote.base} refused the admin secret from ${remote.source}`);
  }
  if (error === undefined) {
    throw new CliError(res.status >= 500 ? EXIT.host : EXIT.refused, `${method} ${url}: HTTP ${res.status}, not a hostadm bridge's admin API reply`);
  }
  if (res.status === 404 && error === 'not found') {
    throw new CliError(EXIT.refused, `the bridge at ${remote.base} has no ${path} (an older bridge, or not a hostadm bridge)`);
  }
  throw new CliError(res.status >= 500 ? EXIT.host : EXIT.refused, `${res.status}: ${error}`);
}

export async function remoteToken(opts: RemoteOptions & { kind: 'agent' | 'client'; nickname?: string; ttl: number }): Promise<void> {
  await checkNickname(opts.nickname);
  const remote = await resolveRemote(opts);
  const { NICKNAME_PATTERN } = await import('@hostadm/bridge/admin-routes.ts');
  const { userInfo } = await import('node:os');
  const user = userInfo().username;
  const reply = await call<{ token: string }>(remote, 'POST', '/admin/tokens', {
    kind: opts.kind,
    ...(opts.nickname ? { nickname: opts.nickname } : {}),
    ttl_seconds: opts.ttl,
    // Who issued it, recorded on the key; a name the bridge would refuse is left to its default.
    ...(NICKNAME_PATTERN.test(user) ? { created_by: user } : {}),
  });
  process.stdout.write(`${reply.token}\n`);
}

export async function remoteKeysList(opts: RemoteOptions & { json?: boolean }): Promise<void> {
  const remote = await resolveRemote(opts);
  const reply = await call<{ keys: KeyRow[] }>(remote, 'GET', '/admin/keys');
  await printKeys(reply.keys.map(keyRow), opts.json, `hostadm bridge token --url ${remote.base}`);
}

export async function remoteRevoke(ref: string, opts: RemoteOptions): Promise<void> {
  const remote = await resolveRemote(opts);
  const reply = await call<{ revoked: { key_id: string; kind: string; nickname: string; md5_key: string }; disconnected: number }>(
    remote,
    'POST',
    '/admin/revoke',
    { key: ref },
  );
  const key = reply.revoked;
  process.stdout.write(`revoked ${key.key_id} (${key.kind} ${key.nickname || key.md5_key})\n`);
  process.stdout.write(`bridge at ${remote.base} cut off ${reply.disconnected} connection(s)\n`);
}
