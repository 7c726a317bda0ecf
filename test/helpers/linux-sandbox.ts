/**
 * A throwaway Linux "host" for testing the real Linux platform: new mount, PID, UTS, IPC and network
 * namespaces holding a private copy of /etc (and an empty /home, /root/tmp), so useradd, service,
 * sysctl -w net.*, ip link ... change only the copy. The agent's runner is aimed inside with
 * `prefix` (nsenter). Everything vanishes when `dispose()` kills the namespace's PID 1.
 *
 * Only for tests, only as root, never on the real host's /etc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner, type CommandRunner } from '@hostadm/agent/runner/runner.ts';

export interface LinuxSandbox {
  /** Prefix for the agent's runner: every command runs inside the sandbox. */
  readonly prefix: string[];
  /** A runner already aimed inside (for test setup and read-back). */
  readonly runner: CommandRunner;
  /** Host path of the sandbox's /etc copy (read it directly to check results). */
  readonly etc: string;
  readonly home: string;
  /** PID (in the host's namespace) of the sandbox's PID 1. */
  readonly pid: number;
  dispose(): Promise<void>;
}

/** The sandbox's PID 1: a reaper, so orphans it inherits do not linger as zombies. */
export const SANDBOX_INIT = ['perl', '-e', 'while (1) { sleep 1 if wait() == -1 }'] as const;

export function canSandbox(): { ok: true } | { ok: false; reason: string } {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'needs root' };
  if (!existsSync('/usr/bin/unshare') || !existsSync('/usr/bin/nsenter')) return { ok: false, reason: 'needs util-linux unshare/nsenter' };
  return { ok: true };
}

export async function createLinuxSandbox(options: { hostname?: string } = {}): Promise<LinuxSandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-sandbox-'));
  const etc = join(dir, 'etc');
  const home = join(dir, 'home');
  const setup = [
    'set -e',
    `cp -a /etc "${etc}"`,
    `mkdir -p "${home}"`,
    `mount --bind "${etc}" /etc`,
    `mount --bind "${home}" /home`,
    'mount -t tmpfs tmpfs /run',
    // /tmp stays shared: the checkout (and its node_modules) may live there, and tests that run the
    // agent or node inside the sandbox need it. Tests use unique names under it.
    `hostname ${options.hostname ?? 'sandbox'}`,
    'ip link set lo up 2>/dev/null || true',
    'echo READY',
    // PID 1 of the namespace inherits every orphan; it must reap them, or a stopped daemon stays a
    // zombie that pidfile checks still see as running.
    `exec ${SANDBOX_INIT.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`,
  ].join('\n');
  const holder: ChildProcess = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', '--uts', '--ipc', '--net', '--pid', '--fork', '--mount-proc', '--', 'sh', '-c', setup],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  holder.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.on('data', (c: Buffer) => {
      if (c.toString().includes('READY')) resolve();
    });
    holder.once('exit', (code) => reject(new Error(`sandbox setup failed (exit ${code}): ${stderr}`)));
  });
  const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim().split(/\s+/);
  const pid = Number(children[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('sandbox: could not find the namespace PID 1');
  const prefix = ['nsenter', '-t', String(pid), '-m', '-u', '-i', '-n', '-p', '--'];
  return {
    prefix,
    runner: createRunner({ prefix }),
    etc,
    home,
    pid,
    async dispose() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await new Promise<void>((resolve) => (holder.exitCode !== null ? resolve() : holder.once('exit', () => resolve())));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
