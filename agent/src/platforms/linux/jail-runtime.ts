/**
 * What makes a Linux jail run: its root (an overlay of its own upper directory on the release's root,
 * mounted at start and unmounted at stop), an init process in new mount, PID, UTS, IPC and network
 * namespaces chrooted into that root, a veth pair whose outer end is on a bridge of ours
 * (`hostadm-jails`, never one of the host's interfaces), and, for its limits, cgroups of ours
 * (`hostadm-jails/<uuid>` under the memory, pids and cpu controllers: cgroup v1, as on this hybrid
 * host, or the unified v2 tree where that is all there is).
 *
 * The init is started through `setsid -f` so the command returns while the jail runs on; the agent
 * finds it again by its unshare's `--mount-proc=<root>/proc` and keeps its PID (as the runner sees
 * it) as the jail id. Every step is an argv through the runner, so tests aim it into a sandbox.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { commandFailed } from '../common/host-command.ts';

export const JAIL_BRIDGE = 'hostadm-jails';
const QUICK = { timeoutMs: 30_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface JailPaths {
  /** The jail's directory: `upper`, `work` and the `root` mount point. */
  dir: string;
  root: string;
  upper: string;
  work: string;
  /** The release root under the overlay; null for an empty jail (its root is a plain directory). */
  lower: string | null;
}

/** What the agent keeps about a running jail. */
export interface RunningJail {
  pid: number;
  veth: string;
}

export async function run(runner: CommandRunner, argv: string[], options: { timeoutMs?: number; input?: string } = QUICK): Promise<string> {
  const result = await runner.run(argv, options);
  if (result.code !== 0) throw commandFailed(argv.join(' '), result);
  return result.stdout;
}

async function succeeds(runner: CommandRunner, argv: string[]): Promise<boolean> {
  return (await runner.run(argv, QUICK)).code === 0;
}

/** The host end of the jail's veth pair: `hj` and 12 hex digits of its uuid (interface names hold 15). */
export const vethName = (uuid: string) => `hj${uuid.replace(/-/g, '').slice(0, 12)}`;

/** Whether `pid` is still this jail's init: alive, and its root is the jail's root. */
export async function isAlive(runner: CommandRunner, pid: number, root: string): Promise<boolean> {
  const result = await runner.run(['readlink', `/proc/${pid}/root`], QUICK);
  return result.code === 0 && result.stdout.trim() === root;
}

export async function isMounted(runner: CommandRunner, path: string): Promise<boolean> {
  return succeeds(runner, ['mountpoint', '-q', '--', path]);
}

export async function mountRoot(runner: CommandRunner, paths: JailPaths): Promise<void> {
  if (paths.lower === null || (await isMounted(runner, paths.root))) return;
  await run(runner, ['mount', '-t', 'overlay', 'overlay', '-o', `lowerdir=${paths.lower},upperdir=${paths.upper},workdir=${paths.work}`, '--', paths.root]);
}

export async function unmountRoot(runner: CommandRunner, paths: JailPaths): Promise<void> {
  if (await isMounted(runner, paths.root)) await run(runner, ['umount', '--', paths.root]);
}

/** A regular expression matching `text` literally, whose own text does not match it (so pgrep never finds its caller). */
function selfExcludingPattern(text: string): string {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `[-]${escaped.slice(1)}`;
}

/** Starts `init` (argv inside the jail) as PID 1 of new namespaces chrooted into the jail's root; its PID. */
export async function launchInit(runner: CommandRunner, paths: JailPaths, init: readonly string[]): Promise<number> {
  await run(runner, ['mkdir', '-p', '--', `${paths.root}/proc`]);
  const marker = `--mount-proc=${paths.root}/proc`;
  await run(runner, [
    'setsid',
    '-f',
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '--uts',
    '--ipc',
    '--net',
    '--pid',
    '--fork',
    '--kill-child',
    marker,
    '--',
    'chroot',
    paths.root,
    ...init,
  ]);
  const pattern = selfExcludingPattern(marker);
  for (let attempt = 0; attempt < 100; attempt++) {
    const holder = (await runner.run(['pgrep', '-f', '--', pattern], QUICK)).stdout.trim().split('\n')[0];
    if (holder) {
      const child = (await runner.run(['pgrep', '-P', holder], QUICK)).stdout.trim().split('\n')[0];
      const pid = Number(child);
      if (child && Number.isInteger(pid) && (await isAlive(runner, pid, paths.root))) return pid;
    }
    await sleep(50);
  }
  // Whatever did start must not outlive the failed start.
  await runner.run(['pkill', '-KILL', '-f', '--', pattern], QUICK);
  throw new HostadmError('HOST_ERROR', `the jail's init (${init.join(' ')}) did not start in ${paths.root}; is it in the release?`);
}

/** Sets the jail's host name inside its own UTS namespace. */
export async function setHostname(runner: CommandRunner, pid: number, name: string): Promise<void> {
  await run(runner, ['nsenter', '-t', String(pid), '-u', '--', 'hostname', name]);
}

/** The jail's `eth0`, paired with `veth` on our bridge (made when missing); addresses from `ip4_addr`. */
export async function attachNetwork(runner: CommandRunner, pid: number, veth: string, addresses: readonly string[]): Promise<void> {
  if (!(await succeeds(runner, ['ip', 'link', 'show', 'dev', JAIL_BRIDGE]))) {
    await run(runner, ['ip', 'link', 'add', 'name', JAIL_BRIDGE, 'type', 'bridge']);
  }
  await run(runner, ['ip', 'link', 'set', 'dev', JAIL_BRIDGE, 'up']);
  await run(runner, ['ip', 'link', 'add', 'name', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(pid)]);
  await run(runner, ['ip', 'link', 'set', 'dev', veth, 'master', JAIL_BRIDGE]);
  await run(runner, ['ip', 'link', 'set', 'dev', veth, 'up']);
  const inside = ['nsenter', '-t', String(pid), '-n', '--', 'ip'];
  await run(runner, [...inside, 'link', 'set', 'dev', 'lo', 'up']);
  await run(runner, [...inside, 'link', 'set', 'dev', 'eth0', 'up']);
  for (const address of addresses) await run(runner, [...inside, 'addr', 'add', address, 'dev', 'eth0']);
}

/** Removes the veth pair (gone by itself when the jail's namespace went) and, with no jail left on it, our bridge. */
export async function detachNetwork(runner: CommandRunner, veth: string, bridgeStillUsed: boolean): Promise<void> {
  if (await succeeds(runner, ['ip', 'link', 'show', 'dev', veth])) await run(runner, ['ip', 'link', 'del', 'dev', veth]);
  if (!bridgeStillUsed && (await succeeds(runner, ['ip', 'link', 'show', 'dev', JAIL_BRIDGE]))) await run(runner, ['ip', 'link', 'del', 'dev', JAIL_BRIDGE]);
}

/** TERM, up to `timeoutSeconds` for the init to end, then KILL; whether it needed the KILL. */
export async function stopInit(runner: CommandRunner, pid: number, root: string, timeoutSeconds: number): Promise<boolean> {
  await runner.run(['kill', '-TERM', String(pid)], QUICK);
  for (let waited = 0; waited < timeoutSeconds * 1000; waited += 100) {
    if (!(await isAlive(runner, pid, root))) return false;
    await sleep(100);
  }
  await runner.run(['kill', '-KILL', String(pid)], QUICK);
  for (let attempt = 0; attempt < 100; attempt++) {
    if (!(await isAlive(runner, pid, root))) return true;
    await sleep(50);
  }
  throw new HostadmError('HOST_ERROR', `the jail's init (PID ${pid}) survived SIGKILL`);
}

/** cgroup-exec beside this file (.ts from the sources, .js once built), run by the agent's own Node. */
const CGROUP_EXEC = fileURLToPath(new URL(`./cgroup-exec${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/**
 * Runs argv inside the jail as uid/gid, from its root; its standard output. With `cgroupProcs` (the
 * jail's cgroups), the command joins them before nsenter runs, through cgroup-exec.ts.
 */
export async function execInside(
  runner: CommandRunner,
  pid: number,
  account: { uid: number; gid: number; name: string; home: string },
  argv: readonly string[],
  timeoutSeconds: number,
  cgroupProcs: readonly string[] = [],
): Promise<string> {
  const enter = ['nsenter', '-t', String(pid), '-m', '-u', '-i', '-n', '-p', '-r', '-w', '-S', String(account.uid), '-G', String(account.gid), '--', ...argv];
  const full = cgroupProcs.length === 0 ? enter : [process.execPath, '--disable-warning=ExperimentalWarning', CGROUP_EXEC, ...cgroupProcs, '--', ...enter];
  const result = await runner.run(full, { timeoutMs: timeoutSeconds * 1000, env: { HOME: account.home, USER: account.name, LOGNAME: account.name } });
  if (result.code !== 0) throw commandFailed(`${argv.join(' ')} (in the jail, as ${account.name})`, result);
  return result.stdout;
}
