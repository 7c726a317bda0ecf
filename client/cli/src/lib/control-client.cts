/**
 * The caller's half of a persisted session (HOSTADM_PERSIST, like ssh's ControlPersist; the session
 * itself is lib/control-session.ts). `hostadm call` with HOSTADM_PERSIST set comes here from main.cts
 * before commander, zod and the SDK load: when a session for the same connection choices listens on
 * its socket, the call's words go there as one JSON line and its reply (the output the call would
 * print, its exit code) is printed as is. Otherwise (no socket, a stale one, a directory or socket that
 * is not private, a session that declines) the call runs in this process as always, silently.
 * CommonJS and built-in modules only, for the same reason as main.cts.
 *
 * The session process keeps these rules too (control-session.ts: the directory, the privacy check);
 * they are written twice because this file must load without the ES module loader, and the session's
 * socket path is handed over from here (globalThis.hostadmControl) rather than computed again.
 */
const { lstatSync } = require('node:fs') as typeof import('node:fs');
const { connect } = require('node:net') as typeof import('node:net');
const { homedir } = require('node:os') as typeof import('node:os');
const { isAbsolute, join } = require('node:path') as typeof import('node:path');

/** `hostadm call`'s options that take a value; the first six choose where the call goes. */
const CONNECTION_FLAGS = ['--profile', '--url', '--bridge', '--host', '--user', '--key'];
const OTHER_VALUE_FLAGS = ['--host-key', '--join', '--join-file', '--timeout', '--json', '--progress'];
const CONNECTION_ENV = ['HOSTADM_PROFILE', 'HOSTADM_URL', 'HOSTADM_BRIDGE', 'HOSTADM_HOST', 'HOSTADM_USER', 'HOSTADM_KEY'];
/** A reply holds a call's whole output; this only stops a runaway one. */
const MAX_REPLY_BYTES = 256 * 1024 * 1024;
const CONNECTION_LOST = 6;

/** What main.cts hands to the ES modules when the call runs in this process (call.ts starts a session). */
interface ControlHandoff {
  socket: string;
  idleMs: number;
  /** False when a session already holds that socket (it declined this call): nothing to start. */
  start: boolean;
}

/** HOSTADM_PERSIST: `10m`, `90s`, `1h`, `500ms`, or seconds; 0, `no` or `off` turn it off. */
function persistMs(value: string): number | 'off' | 'invalid' {
  if (/^(0|no|off|false)?$/i.test(value.trim())) return 'off';
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!match) return 'invalid';
  const ms = Number(match[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return ms >= 1 && ms <= 7 * 24 * 3_600_000 ? Math.round(ms) : 'invalid';
}

/** $XDG_RUNTIME_DIR/hostadm, else ~/.cache/hostadm/ctl. */
function runtimeDir(): string {
  const runtime = process.env.XDG_RUNTIME_DIR;
  if (runtime && isAbsolute(runtime)) return join(runtime, 'hostadm');
  return join(process.env.HOME || homedir(), '.cache', 'hostadm', 'ctl');
}

/** Owned by this user, nobody else may read, write or enter it, and of the expected kind (no link). */
function isPrivate(path: string, kind: 'directory' | 'socket'): boolean {
  try {
    const stat = lstatSync(path);
    const ofKind = kind === 'directory' ? stat.isDirectory() : stat.isSocket();
    return ofKind && stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/** FNV-1a, 64 bits: a short stable file name; the session checks the full choices on every call. */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) hash = ((hash ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & 0xffffffffffffffffn;
  return hash.toString(16).padStart(16, '0');
}

/** The socket of the session for these connection choices (flags first, then the environment). */
function socketFor(callArgv: readonly string[]): string {
  const chosen: Record<string, string> = {};
  for (let i = 0; i < callArgv.length; i++) {
    const word = callArgv[i]!;
    if (word === '--') break;
    const eq = word.indexOf('=');
    const flag = eq > 0 ? word.slice(0, eq) : word;
    if (!CONNECTION_FLAGS.includes(flag) && !OTHER_VALUE_FLAGS.includes(flag)) continue;
    const value = eq > 0 ? word.slice(eq + 1) : callArgv[++i];
    if (CONNECTION_FLAGS.includes(flag) && value !== undefined) chosen[flag] = value;
  }
  for (const name of CONNECTION_ENV) if (process.env[name] !== undefined) chosen[name] ??= process.env[name]!;
  const key = chosen['--key'] ?? chosen.HOSTADM_KEY;
  const choices = {
    config: process.env.XDG_CONFIG_HOME || join(process.env.HOME || homedir(), '.config'),
    chosen,
    // A relative key path means another file from another directory.
    cwd: key !== undefined && !isAbsolute(key) ? process.cwd() : undefined,
  };
  return join(runtimeDir(), `s-${fnv1a64(JSON.stringify(choices))}.sock`);
}

function callThroughSession(callArgv: string[], ownProcess: () => void): void {
  const setting = persistMs(process.env.HOSTADM_PERSIST ?? '');
  const helpAsked = callArgv.some((word) => word === '-h' || word === '--help');
  if (setting === 'invalid') {
    process.stderr.write(`hostadm: HOSTADM_PERSIST=${process.env.HOSTADM_PERSIST} is not a duration (10m, 90s, 1h, 500ms; 0 or off); not persisting\n`);
  }
  if (setting === 'off' || setting === 'invalid' || helpAsked || process.platform === 'win32') return ownProcess();
  const socket = socketFor(callArgv);
  const handoff: ControlHandoff = { socket, idleMs: setting, start: true };
  (globalThis as { hostadmControl?: ControlHandoff }).hostadmControl = handoff;
  if (!isPrivate(join(socket, '..'), 'directory') || !isPrivate(socket, 'socket')) return ownProcess();

  // Unix sockets tell Node nothing about the peer (no SO_PEERCRED in node:net): what keeps other users
  // out is the directory, 0700 and ours (checked above and by the session), which connect() must enter.
  const conn = connect(socket);
  let sent = false;
  const chunks: Buffer[] = [];
  let size = 0;
  conn.on('error', () => {
    if (!sent) ownProcess();
  });
  conn.once('connect', () => {
    sent = true;
    const env: Record<string, string> = {};
    for (const name of [...CONNECTION_ENV, 'HOSTADM_DEBUG']) if (process.env[name] !== undefined) env[name] = process.env[name]!;
    conn.end(`${JSON.stringify({ v: 1, op: 'call', argv: callArgv, cwd: process.cwd(), env })}\n`);
  });
  conn.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_REPLY_BYTES) conn.destroy(new Error('reply too large'));
    else chunks.push(chunk);
  });
  conn.once('close', () => {
    if (!sent) return;
    let reply: { out?: unknown; err?: unknown; code?: unknown; fallback?: unknown } | undefined;
    try {
      reply = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof reply;
    } catch {
      reply = undefined;
    }
    if (reply && typeof reply.fallback === 'string') {
      // Declined before anything was sent to the host (a queued action, other connection choices).
      handoff.start = false;
      return ownProcess();
    }
    if (!reply || typeof reply.out !== 'string' || typeof reply.err !== 'string' || typeof reply.code !== 'number') {
      process.stderr.write(`hostadm: the persisted session at ${socket} closed without a reply; the call may or may not have run\n`);
      process.exitCode = CONNECTION_LOST;
      return;
    }
    process.stdout.write(reply.out);
    process.stderr.write(reply.err);
    process.exitCode = reply.code;
  });
}

module.exports = { callThroughSession };
