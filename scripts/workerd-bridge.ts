/**
 * Runs the Workers bridge locally in workerd (`wrangler dev`, offline) for `npm run dev:edge`, the
 * bridge tests on Workers and the relay benchmark: applies the D1 migrations to a local state
 * directory, starts `wrangler dev` in its own process group on a free port, and waits until the
 * Worker answers. Wrangler is quietened for an offline machine (no metrics, no Request.cf fetch).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ensureConsoleBuilt } from './build-console.ts';

const root = new URL('..', import.meta.url).pathname;
const wrangler = join(root, 'node_modules/wrangler/bin/wrangler.js');
const config = join(root, 'infra/wrangler.jsonc');

/** What wrangler needs to stay offline and quiet (../shared/reference/toolchain.md §3). */
export const WRANGLER_ENV: Record<string, string> = {
  CI: 'true',
  WRANGLER_SEND_METRICS: 'false',
  WRANGLER_SEND_ERROR_REPORTS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  DO_NOT_TRACK: '1',
};

export interface WorkerdBridgeOptions {
  /** Where D1 and Durable Object state persist (default: a new temporary directory, removed on stop). */
  stateDir?: string;
  port?: number;
  /** Enables the test routes and per-test hubs (`/_hub/<name>/...`). */
  testHooks?: boolean;
  adminSecret?: string;
  joinSecret?: string;
  /** What `rpc/identify` on the bridge answers as hostname (default: the wrangler.jsonc var). */
  hostname?: string;
  /** Echo wrangler's output (default: kept, shown only when start-up fails). */
  verbose?: boolean;
}

export interface WorkerdBridge {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly httpUrl: string;
  readonly stateDir: string;
  readonly adminSecret: string;
  readonly joinSecret: string;
  /** The workerd process serving the Worker (for CPU figures), or the wrangler process when not found. */
  workerdPid(): number;
  /** wrangler's process, which leads the process group workerd runs in. */
  readonly wranglerPid: number;
  /** Stops workerd; the state directory stays (unless it was a temporary one and `keepState` is false). */
  stop(keepState?: boolean): Promise<void>;
  /** Stops and starts again on the same port and state (a bridge restart). */
  restart(): Promise<WorkerdBridge>;
}

/** Whether a process of group `pgrp` still runs (zombies excluded: they write nothing). Linux /proc. */
function groupRunning(pgrp: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , group] = fields.slice(fields.lastIndexOf(')') + 2).split(' ');
      if (Number(group) === pgrp && state !== 'Z') return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

/**
 * Kills wrangler's process group (workerd included) and waits until none of it runs, at most `ms`:
 * synchronously, since exit hooks cannot wait for events.
 */
function killGroupNow(pgrp: number, ms = 3000): void {
  try {
    process.kill(-pgrp, 'SIGKILL');
  } catch {
    return; // no such group: all gone
  }
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + ms;
  while (groupRunning(pgrp) && Date.now() < deadline) Atomics.wait(pause, 0, 0, 10);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function runWrangler(args: string[], verbose: boolean): ChildProcess {
  return spawn(process.execPath, [wrangler, ...args], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    // wrangler spawns `node` for esbuild helpers: the project's Node first on PATH.
    env: { ...process.env, ...WRANGLER_ENV, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, ...(verbose ? {} : { WRANGLER_LOG: 'warn' }) },
  });
}

async function finished(child: ChildProcess, what: string, output: () => string): Promise<void> {
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${what} failed (exit ${code}):\n${output()}`);
}

export async function applyMigrations(stateDir: string, verbose = false): Promise<void> {
  const child = runWrangler(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', stateDir, '-c', config], verbose);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await finished(child, 'wrangler d1 migrations apply', () => out);
}

const PORT_TAKEN = /Address already in use/;

/**
 * `ownsStateDir`: the state directory is this bridge's to remove (made here, or handed on by
 * `restart`): removed by `stop` unless kept, and when the process ends without `stop`.
 */
export async function startWorkerdBridge(options: WorkerdBridgeOptions = {}, ownsStateDir = !options.stateDir): Promise<WorkerdBridge> {
  const temporary = ownsStateDir;
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'hostadm-workerd-'));
  // wrangler.jsonc serves console/dist as static assets: it must exist before wrangler starts.
  ensureConsoleBuilt({ quiet: true });
  await applyMigrations(stateDir, options.verbose ?? false);
  const settled = {
    ...options,
    stateDir,
    adminSecret: options.adminSecret ?? randomBytes(32).toString('base64url'),
    joinSecret: options.joinSecret ?? randomBytes(32).toString('base64url'),
  };
  // A free port found here can be taken by a parallel test before workerd binds it: with ports of our
  // own choosing, that is retried on fresh ones; a port the caller named is not.
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await launch(settled, port, temporary);
    } catch (error) {
      if (options.port !== undefined || attempt >= 5 || !PORT_TAKEN.test(String(error))) {
        if (temporary) rmSync(stateDir, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

type SettledOptions = WorkerdBridgeOptions & { stateDir: string; adminSecret: string; joinSecret: string };

async function launch(options: SettledOptions, port: number, temporary: boolean): Promise<WorkerdBridge> {
  const { stateDir, adminSecret, joinSecret } = options;
  const verbose = options.verbose ?? false;
  const args = [
    'dev',
    '-c',
    config,
    '--local',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--persist-to',
    stateDir,
    '--show-interactive-dev-session=false',
    '--inspector-port',
    String(await freePort()),
  ];
  const vars: Record<string, string> = {
    ADMIN_SECRET: adminSecret,
    JOIN_SECRET: joinSecret,
    ...(options.testHooks ? { HOSTADM_TEST_HOOKS: '1' } : {}),
    ...(options.hostname ? { BRIDGE_HOSTNAME: options.hostname } : {}),
    ...(verbose ? { LOG_LEVEL: 'debug' } : {}),
  };
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`);
  const child = runWrangler(args, verbose);
  let out = '';
  const collect = (d: Buffer) => {
    out += d.toString();
    if (verbose) process.stderr.write(d);
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  // A running workerd does not keep the caller alive; the exit hook below stops it.
  child.unref();
  (child.stdout as unknown as { unref(): void }).unref();
  (child.stderr as unknown as { unref(): void }).unref();
  const kill = () => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  // A test process that ends without stopping us must not leave workerd running, nor its temporary
  // state (a few MB of SQLite per run): on exit, and on a terminating signal (node --test cancels
  // files with SIGTERM), which is then re-raised. A temporary state is removed only once nothing of
  // workerd runs: a workerd shutting down on SIGTERM still flushes its Durable Objects, and wrote
  // their directories back into a state removed meanwhile.
  const abandon = () => {
    if (!temporary) return kill();
    killGroupNow(child.pid!);
    rmSync(stateDir, { recursive: true, force: true });
  };
  process.once('exit', abandon);
  const onSignal = (signal: NodeJS.Signals) => {
    abandon();
    process.kill(process.pid, signal);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, onSignal);
  const unhook = () => {
    process.off('exit', abandon);
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.off(signal, onSignal);
  };
  const httpUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      unhook();
      throw new Error(`wrangler dev exited (${child.exitCode}):\n${out}`);
    }
    try {
      const res = await fetch(`${httpUrl}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      kill();
      unhook();
      throw new Error(`wrangler dev did not answer within 60 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const bridge: WorkerdBridge = {
    port,
    httpUrl,
    stateDir,
    adminSecret,
    joinSecret,
    wranglerPid: child.pid!,
    workerdPid() {
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
          if (comm === 'workerd' && pgrp === child.pid) return Number(entry);
        } catch {
          // gone meanwhile
        }
      }
      return child.pid!;
    },
    async stop(keepState = !temporary) {
      unhook();
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        kill();
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone
        }
      }
      if (!keepState) {
        // wrangler's exit does not mean workerd's: nothing of the group may write into what is removed.
        killGroupNow(child.pid!);
        rmSync(stateDir, { recursive: true, force: true });
      }
    },
    async restart() {
      await bridge.stop(true);
      // The restarted one owns a temporary directory now: removed on stop unless kept, or at exit.
      return startWorkerdBridge({ ...options, stateDir, port, adminSecret, joinSecret }, temporary);
    },
  };
  return bridge;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // `npm run dev:edge`: a persistent local state in .wrangler/dev-edge, secrets printed once.
  const stateDir = join(root, '.wrangler/dev-edge');
  const port = Number(process.env.PORT ?? 8787);
  // Secrets made at the first run and kept with the state, so tokens and the admin secret stay valid.
  const secretsFile = join(stateDir, 'secrets.json');
  let secrets: { adminSecret: string; joinSecret: string };
  try {
    secrets = JSON.parse(readFileSync(secretsFile, 'utf8')) as typeof secrets;
  } catch {
    secrets = { adminSecret: randomBytes(32).toString('base64url'), joinSecret: randomBytes(32).toString('base64url') };
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o600 });
  }
  const bridge = await startWorkerdBridge({ stateDir, port, verbose: true, ...secrets });
  console.log(`\nWorkers bridge (workerd, local) on ${bridge.httpUrl}; peers connect to ws://127.0.0.1:${port}/relay`);
  console.log(`admin secret: ${bridge.adminSecret}\njoin secret:  ${bridge.joinSecret}`);
  console.log(`join token:   HOSTADM_BRIDGE_ADMIN_SECRET=${bridge.adminSecret} npx hostadm bridge token --kind agent --url ${bridge.httpUrl}`);
  // The child is unref'd (tests must not wait on it): this keeps the command in the foreground.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const stop = () => {
    clearInterval(keepAlive);
    void bridge.stop(true).then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
