/**
 * A persisted session (HOSTADM_PERSIST, like ssh's ControlMaster/ControlPersist): a detached
 * `hostadm session serve` that holds one signed-in bridged connection (one profile + host) and
 * answers later `hostadm call`s over a unix socket, so they skip loading the SDK and opening a channel
 * (client/cli/README.md "Persisted sessions"). The caller's half is control-client.cts.
 *
 * Wire, one connection per request: the caller sends one JSON line (at most MAX_REQUEST_BYTES, counted
 * before parsing) and half-closes; the session answers one JSON document and closes:
 *   {v:1, op:"call", argv, cwd, env} → {out, err, code} (what `hostadm call` prints, its exit code)
 *                                      or {fallback: reason}: declined, nothing was sent to the host
 *   {v:1, op:"status"} → SessionStatus        {v:1, op:"stop"} → {stopping: true}, then it exits
 * It exits after the idle time without a call, when its connection to the host ends, on `stop`, or on
 * SIGTERM/SIGINT, removing its socket.
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Command } from 'commander';
import { z } from 'zod';
import { parseCallArgv } from '../client-commands.ts';
import { callThrough, NeedsOwnProcess, type CallVia } from '../commands/call.ts';
import { reportError } from './exit.ts';
import { openClient, resolveTarget, type OpenClient, type Target } from './session.ts';

const MAX_REQUEST_BYTES = 1024 * 1024;
/** A caller that connects and sends nothing is dropped after this long. */
const REQUEST_WAIT_MS = 10_000;
export const SOCKET_NAME = /^s-[0-9a-f]{16}\.sock$/;

const Request = z.discriminatedUnion('op', [
  z.object({
    v: z.literal(1),
    op: z.literal('call'),
    argv: z.array(z.string()).max(10_000),
    cwd: z.string(),
    env: z.record(z.string(), z.string()),
  }),
  z.object({ v: z.literal(1), op: z.literal('status') }),
  z.object({ v: z.literal(1), op: z.literal('stop') }),
]);

export const SessionStatus = z.object({
  pid: z.number(),
  profile: z.string().nullable(),
  target: z.string(),
  user: z.string().nullable(),
  startedAt: z.string(),
  calls: z.number(),
  idleSeconds: z.number(),
  exitsInSeconds: z.number(),
});
export type SessionStatus = z.infer<typeof SessionStatus>;

/** What main.cts's control-client.cts hands over when a call runs in its own process. */
interface ControlHandoff {
  socket: string;
  idleMs: number;
  start: boolean;
}

/** $XDG_RUNTIME_DIR/hostadm, else ~/.cache/hostadm/ctl (as control-client.cts). */
export function runtimeDir(): string {
  const runtime = process.env.XDG_RUNTIME_DIR;
  if (runtime && isAbsolute(runtime)) return join(runtime, 'hostadm');
  return join(process.env.HOME || homedir(), '.cache', 'hostadm', 'ctl');
}

/** Owned by this user, closed to everyone else, of the expected kind (a link is neither). */
export function isPrivate(path: string, kind: 'directory' | 'socket'): boolean {
  try {
    const stat = lstatSync(path);
    const ofKind = kind === 'directory' ? stat.isDirectory() : stat.isSocket();
    return ofKind && stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/**
 * After a bridged call opened its own connection: starts the session for its socket, detached (its
 * stdio closed, so `$(hostadm call ...)` returns at once), unless one already holds that socket.
 */
export function startControlSession(target: Target): void {
  const handoff = (globalThis as { hostadmControl?: ControlHandoff }).hostadmControl;
  if (!handoff?.start || !target.bridge) return;
  handoff.start = false;
  // A directory the session would refuse: starting one on every call would only cost a process each time.
  const dir = dirname(handoff.socket);
  if (existsSync(dir) && !isPrivate(dir, 'directory')) return;
  const entry = process.argv[1];
  if (!entry) return;
  const child = spawn(
    process.execPath,
    [...process.execArgv, entry, 'session', 'serve', '--socket', handoff.socket, '--idle', String(handoff.idleMs), '--', ...process.argv.slice(3)],
    { detached: true, stdio: 'ignore' },
  );
  child.on('error', () => {});
  child.unref();
}

/** Sends one request to the session at `socket`; resolves its reply, or undefined when none answers. */
export function askSession(socket: string, request: { op: 'status' | 'stop' }): Promise<unknown> {
  return new Promise((done) => {
    const conn = connect(socket);
    const chunks: Buffer[] = [];
    conn.on('error', () => done(undefined));
    conn.on('connect', () => conn.end(`${JSON.stringify({ v: 1, ...request })}\n`));
    conn.on('data', (chunk: Buffer) => chunks.push(chunk));
    conn.on('close', () => {
      try {
        done(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        done(undefined);
      }
    });
  });
}

/** The sockets in the runtime directory (none when it is missing or not private). */
export function sessionSockets(): string[] {
  const dir = runtimeDir();
  if (!isPrivate(dir, 'directory')) return [];
  return readdirSync(dir)
    .filter((name) => SOCKET_NAME.test(name))
    .map((name) => join(dir, name))
    .filter((path) => isPrivate(path, 'socket'));
}

/** What identifies a target, paths made absolute against the caller's directory. */
function targetIdentity(target: Target, cwd: string): string {
  return JSON.stringify([target.profile ?? null, target.url, target.user ?? null, target.keyPath === undefined ? null : resolve(cwd, target.keyPath)]);
}

/** `hostadm session serve`: runs until idle, disconnected or stopped; exits quietly when it cannot start. */
export async function serveControlSession(socket: string, idleMs: number, callArgv: string[]): Promise<void> {
  const dir = dirname(socket);
  if (!SOCKET_NAME.test(socket.slice(dir.length + 1))) return;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A directory someone else owns or may enter is refused, not repaired: it is not ours to change.
  if (!isPrivate(dir, 'directory')) return;
  if ((await askSession(socket, { op: 'status' })) !== undefined) return; // another session holds it
  try {
    if (isPrivate(socket, 'socket')) unlinkSync(socket); // stale: its session is gone
  } catch {
    return;
  }

  let held: OpenClient;
  try {
    held = await openClient((await parseCallArgv(callArgv, Command)).opts);
  } catch {
    process.exitCode = 1;
    return;
  }
  if (!held.target.bridge) return void (await held.close());
  const heldIdentity = targetIdentity(held.target, process.cwd());
  // Not to pin the caller's directory (an unmount) for as long as it runs; nothing after this reads a relative path.
  process.chdir(dir);
  const startedAt = Date.now();
  let lastCallAt = startedAt;
  let calls = 0;
  let closing = false;
  let inFlight = 0;
  let queue: Promise<void> = Promise.resolve();

  const server = createServer({ allowHalfOpen: true });
  server.maxConnections = 32;
  let idleTimer: NodeJS.Timeout | undefined;
  const stillIdle = () => {
    clearTimeout(idleTimer);
    // A call still running is not idleness: the request timeout bounds it.
    idleTimer = setTimeout(() => (inFlight > 0 ? stillIdle() : void shutdown()), idleMs);
  };
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    clearTimeout(idleTimer);
    server.close();
    try {
      unlinkSync(socket);
    } catch {
      // already gone
    }
    // A call under way gets its reply (an error, when the connection is what ended) before the exit.
    await queue;
    await new Promise((r) => setImmediate(r));
    await held.close().catch(() => {});
    process.exit(0);
  };
  held.client.on('disconnect', () => void shutdown());
  held.client.on('close', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());

  const serveCall = async (request: Extract<z.infer<typeof Request>, { op: 'call' }>): Promise<object> => {
    let parsed: Awaited<ReturnType<typeof parseCallArgv>>;
    try {
      parsed = await parseCallArgv(request.argv, Command);
      if (targetIdentity(resolveTarget(parsed.opts, request.env), request.cwd) !== heldIdentity) return { fallback: 'another target' };
    } catch {
      return { fallback: 'arguments or target this session cannot judge' };
    }
    let out = '';
    let err = '';
    const via: CallVia = {
      out: (text) => void (out += text),
      err: (text) => void (err += text),
      open: async () => ({ client: held.client, target: held.target, close: async () => {} }),
      oneShotOnly: true,
    };
    let code: number;
    try {
      code = await callThrough(via, parsed.cls, parsed.action, parsed.rest, parsed.opts);
    } catch (error) {
      if (error instanceof NeedsOwnProcess) return { fallback: error.message };
      code = reportError(error, via.err);
    }
    calls++;
    return { out, err, code };
  };

  const answer = async (conn: Socket, text: string): Promise<object> => {
    const request = Request.safeParse(JSON.parse(text));
    if (!request.success) return { fallback: 'not a request' };
    if (closing) return { fallback: 'closing' };
    if (request.data.op === 'stop') {
      conn.once('close', () => void shutdown());
      return { stopping: true };
    }
    if (request.data.op === 'status') {
      const now = Date.now();
      return {
        pid: process.pid,
        profile: held.target.profile ?? null,
        target: held.target.url,
        user: held.target.user ?? null,
        startedAt: new Date(startedAt).toISOString(),
        calls,
        idleSeconds: Math.round((now - lastCallAt) / 1000),
        exitsInSeconds: Math.max(0, Math.round((lastCallAt + idleMs - now) / 1000)),
      } satisfies SessionStatus;
    }
    const call = request.data;
    // One call at a time on the one connection, in the order they came.
    inFlight++;
    const result = queue.then(() => serveCall(call));
    queue = result
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        inFlight--;
        lastCallAt = Date.now();
        stillIdle();
      });
    return result;
  };

  server.on('connection', (conn) => {
    const chunks: Buffer[] = [];
    let size = 0;
    conn.setTimeout(REQUEST_WAIT_MS, () => conn.destroy());
    conn.on('error', () => {});
    conn.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        conn.end(`${JSON.stringify({ fallback: 'request too large' })}\n`);
        conn.removeAllListeners('data');
        conn.resume();
      } else chunks.push(chunk);
    });
    conn.on('end', () => {
      if (size > MAX_REQUEST_BYTES) return;
      conn.setTimeout(0);
      answer(conn, Buffer.concat(chunks).toString('utf8'))
        .catch(() => ({ fallback: 'not a request' }))
        .then((reply) => conn.end(`${JSON.stringify(reply)}\n`));
    });
  });

  // The socket is created 0600 (no window where it is wider); the directory is what keeps others out.
  process.umask(0o077);
  await new Promise<void>((listening, failed) => {
    server.once('error', failed);
    server.listen(socket, () => listening());
  }).catch(async () => {
    await held.close().catch(() => {});
    process.exit(0); // another session took the socket first
  });
  stillIdle();
}
