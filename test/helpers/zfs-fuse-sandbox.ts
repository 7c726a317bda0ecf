/**
 * A ZFS host for tests on Linux without kernel ZFS: the zfs-fuse 0.7 daemon (unpacked from Debian,
 * never installed) running in new mount and PID namespaces, with file vdevs in a temporary folder.
 * `/run` is a tmpfs there, `/etc` and `/var/lib` overlays whose writes (zpool.cache, /etc/zfs) land in
 * the temporary folder, so the host is never changed. Commands reach the daemon through `runner` (or
 * `prefix`, for an agent's runner): nsenter into the namespaces, with the unpacked tools on PATH.
 *
 * `dispose()` kills the namespace's PID 1, which takes the daemon and its FUSE mounts with it, then
 * checks that no process or mount is left and removes the folder.
 *
 * Only for tests, only as root. Usage:
 *   const zfs = await startZfsFuse(t); if (!zfs) return;   // skipped, with the reason
 *   const pool = await zfs.createPool('tank');
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createRunner, type CommandRunner, type RunResult } from '@hostadm/agent/runner/runner.ts';
import { unpackDebianPackages } from './debian-tools.ts';
import { SANDBOX_INIT, canSandbox } from './linux-sandbox.ts';

export const ZFS_FUSE_PACKAGES = ['zfs-fuse', 'libaio1', 'libfuse2'] as const;

export interface ZfsFuseSandbox {
  /** Prefix for an agent's runner: every command runs inside, with zpool/zfs on PATH. */
  readonly prefix: string[];
  /** A runner already aimed inside (setup and read-back). */
  readonly runner: CommandRunner;
  /** Host path of the temporary folder (vdevs in `vdev/`, mount points under `mnt/`). */
  readonly dir: string;
  /** PID, in the host's namespace, of the sandbox's PID 1. */
  readonly pid: number;
  /** Creates a pool on file vdevs (a mirror of two by default) mounted at `<dir>/mnt/<name>`; returns the mount point. */
  createPool(name: string, options?: { vdevs?: number; sizeMiB?: number }): Promise<string>;
  /** Runs argv inside and returns stdout; a failure throws with what the command said. */
  sh(argv: readonly string[]): Promise<string>;
  dispose(): Promise<void>;
}

/** Why zfs-fuse cannot run here, or null when it can be tried. */
export async function zfsFuseUnavailable(): Promise<string | null> {
  const sandbox = canSandbox();
  if (!sandbox.ok) return `zfs-fuse sandbox ${sandbox.reason}`;
  if (!existsSync('/dev/fuse')) return 'zfs-fuse needs /dev/fuse, which this machine lacks';
  const tools = await unpackDebianPackages(ZFS_FUSE_PACKAGES);
  return tools.ok ? null : tools.reason;
}

/** A sandbox for one test, disposed when it ends; or null after `t.skip(reason)` where zfs-fuse cannot run. */
export async function startZfsFuse(t: TestContext): Promise<ZfsFuseSandbox | null> {
  const reason = await zfsFuseUnavailable();
  if (reason) {
    t.skip(reason);
    return null;
  }
  let sandbox: ZfsFuseSandbox;
  try {
    sandbox = await createZfsFuseSandbox();
  } catch (err) {
    t.skip(`zfs-fuse did not start: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
  t.after(() => sandbox.dispose());
  return sandbox;
}

export async function createZfsFuseSandbox(): Promise<ZfsFuseSandbox> {
  const tools = await unpackDebianPackages(ZFS_FUSE_PACKAGES);
  if (!tools.ok) throw new Error(tools.reason);
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-zfs-'));
  const o = join(dir, 'overlay');
  const env = [`PATH=${tools.env.PATH}`, `LD_LIBRARY_PATH=${tools.env.LD_LIBRARY_PATH}`];
  const setup = [
    'set -e',
    `mkdir -p "${o}/etc-up" "${o}/etc-work" "${o}/lib-up" "${o}/lib-work" "${dir}/vdev" "${dir}/mnt"`,
    'mount -t tmpfs tmpfs /run',
    `mount -t overlay overlay -o "lowerdir=/etc,upperdir=${o}/etc-up,workdir=${o}/etc-work" /etc`,
    `mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=${o}/lib-up,workdir=${o}/lib-work" /var/lib`,
    'mkdir -p /run/lock/zfs /run/zfs /etc/zfs',
    // --no-daemon: the daemonizing parent waits on its output pipe; in the background it is ours to reap.
    `env ${env.map((e) => `'${e}'`).join(' ')} zfs-fuse --no-daemon --no-kstat-mount --pidfile /run/zfs/zfs-fuse.pid > "${dir}/zfs-fuse.log" 2>&1 &`,
    'i=0; while [ ! -S /run/zfs/zfs_socket ]; do i=$((i+1)); [ $i -gt 100 ] && { echo "no zfs_socket after 10 s" >&2; exit 1; }; sleep 0.1; done',
    'echo READY',
    `exec ${SANDBOX_INIT.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`,
  ].join('\n');
  const holder: ChildProcess = spawn('unshare', ['--mount', '--propagation', 'private', '--pid', '--fork', '--mount-proc', '--', 'sh', '-c', setup], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  holder.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout?.on('data', (c: Buffer) => {
        if (c.toString().includes('READY')) resolve();
      });
      holder.once('exit', (code) => {
        const log = existsSync(join(dir, 'zfs-fuse.log')) ? readFileSync(join(dir, 'zfs-fuse.log'), 'utf8').trim() : '';
        reject(new Error(`sandbox setup failed (exit ${code}): ${stderr.trim()} ${log}`.trim()));
      });
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim().split(/\s+/);
  const pid = Number(children[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('zfs-fuse sandbox: could not find the namespace PID 1');
  const prefix = ['nsenter', '-t', String(pid), '-m', '-p', '--', 'env', ...env];
  const runner = createRunner({ prefix });
  const said = (r: RunResult) => (r.stderr.trim() || r.stdout.trim()).slice(0, 500);
  const sh = async (argv: readonly string[]) => {
    const result = await runner.run(argv, { timeoutMs: 60_000 });
    if (result.code !== 0) throw new Error(`${argv.join(' ')} failed (${result.code}): ${said(result)}`);
    return result.stdout;
  };
  let disposed = false;
  return {
    prefix,
    runner,
    dir,
    pid,
    sh,
    async createPool(name, options = {}) {
      const count = options.vdevs ?? 2;
      const vdevs = Array.from({ length: count }, (_, i) => join(dir, 'vdev', `${name}-${i}`));
      await sh(['truncate', '-s', `${options.sizeMiB ?? 128}M`, ...vdevs]);
      const mountpoint = join(dir, 'mnt', name);
      await sh(['zpool', 'create', '-m', mountpoint, name, ...(count > 1 ? ['mirror'] : []), ...vdevs]);
      return mountpoint;
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await new Promise<void>((resolve) => (holder.exitCode !== null || holder.signalCode !== null ? resolve() : holder.once('exit', () => resolve())));
      const left = leftovers(dir);
      rmSync(dir, { recursive: true, force: true });
      if (left.length > 0) throw new Error(`zfs-fuse sandbox left behind: ${left.join('; ')}`);
    },
  };
}

/** Mounts under `dir` and zfs-fuse processes started from it that outlived the namespace. */
function leftovers(dir: string): string[] {
  const found: string[] = [];
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) if (line.includes(dir)) found.push(`mount ${line.split(' ')[1]}`);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(dir)) found.push(`process ${entry} ${cmdline.replace(/\0/g, ' ').trim()}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}
