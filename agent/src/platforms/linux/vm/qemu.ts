/**
 * Starting and stopping one QEMU guest. QEMU runs daemonized (`-daemonize`: the command returns once
 * the guest is up, or fails with QEMU's own message), with a QMP socket and a pid file under the
 * agent's `run/` directory, so an agent that restarts finds its guests again through the socket. Stop
 * is QMP `quit`, then SIGKILL to the pid QEMU wrote if it has not gone after a grace period; the pid
 * is checked against QEMU's command line (our socket path) first, so a reused pid is never killed.
 * Every command goes through the platform's runner.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import type { CommandRunner } from '../../../runner/runner.ts';
import { hostError } from '../../common/host-command.ts';
import { ramMiB } from '../../common/vm-props.ts';
import { qmp, qmpStatus } from './qmp.ts';
import type { LinuxGuest } from './store.ts';

export interface Accelerator {
  kind: 'kvm' | 'tcg';
  /** Why TCG was chosen (KVM cannot be opened). */
  reason?: string;
}

/** KVM when `/dev/kvm` opens for reading and writing (what QEMU needs), TCG otherwise, saying why. */
export function detectAccelerator(device = '/dev/kvm'): Accelerator {
  try {
    closeSync(openSync(device, constants.O_RDWR));
    return { kind: 'kvm' };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return { kind: 'tcg', reason: `${device} cannot be opened (${code}); guests run under TCG emulation, much slower` };
  }
}

export interface GuestRuntime {
  qmp: string;
  pid: string;
}

/** QEMU's own argument syntax treats `,` as a separator: doubled, it is a literal comma in a path. */
const optionValue = (path: string) => path.replaceAll(',', ',,');

/**
 * The tap device a guest gets on the bridge: `hv` and 12 hex digits (inside IFNAMSIZ) of the agent's
 * VM directory and the guest's name, so two agents on one host never share a device.
 */
export function tapName(scope: string, name: string): string {
  return `hv${createHash('sha256').update(`${scope}\0${name}`).digest('hex').slice(0, 12)}`;
}

export function qemuArgv(name: string, guest: LinuxGuest, run: GuestRuntime, accel: Accelerator, options: { iso?: string; tap?: string }): string[] {
  const props = guest.props;
  const argv = ['qemu-system-x86_64', '-name', `guest=${name}`, '-nodefaults', '-display', 'none', '-machine', 'q35'];
  // QEMU's default CPU model: `-cpu host` fails under nested KVM on some hosts (MSRs the outer
  // hypervisor refuses), and guests installed on one host keep working on another.
  argv.push('-accel', accel.kind);
  argv.push('-smp', props.cpu ?? '1', '-m', String(ramMiB(props.ram)));
  for (const [disk, file] of Object.entries(guest.disks).sort(([a], [b]) => diskNumber(a) - diskNumber(b))) {
    argv.push('-drive', `file=${optionValue(join(guest.dir, file))},format=qcow2,if=virtio,id=${disk}`);
  }
  if (options.iso) argv.push('-drive', `file=${optionValue(options.iso)},media=cdrom,readonly=on,if=ide,id=install`);
  argv.push('-boot', `order=${options.iso ? 'd' : (props.bootorder ?? 'c')}`);
  if (options.tap) argv.push('-nic', `tap,ifname=${options.tap},script=no,downscript=no,model=${nicModel(props.nic)}`);
  argv.push('-qmp', `unix:${optionValue(run.qmp)},server=on,wait=off`, '-pidfile', run.pid, '-daemonize');
  return argv;
}

const diskNumber = (disk: string) => Number(disk.slice(4));
const nicModel = (nic: string | undefined) => (nic === 'e1000' ? 'e1000' : nic === 'rtl8139' ? 'rtl8139' : 'virtio-net-pci');

/** Puts a fresh tap device on `bridge` (one left from a crash is replaced). */
export async function createTap(runner: CommandRunner, tap: string, bridge: string): Promise<void> {
  await runner.run(['ip', 'link', 'del', 'dev', tap], { timeoutMs: 10_000 });
  for (const argv of [
    ['ip', 'tuntap', 'add', 'dev', tap, 'mode', 'tap'],
    ['ip', 'link', 'set', 'dev', tap, 'master', bridge],
    ['ip', 'link', 'set', 'dev', tap, 'up'],
  ]) {
    const result = await runner.run(argv, { timeoutMs: 10_000 });
    if (result.code !== 0) {
      await deleteTap(runner, tap);
      throw hostError(`connecting ${tap} to ${bridge} failed`, result, 'ip');
    }
  }
}

export async function deleteTap(runner: CommandRunner, tap: string): Promise<void> {
  await runner.run(['ip', 'link', 'del', 'dev', tap], { timeoutMs: 10_000 });
}

/** Starts QEMU; a failure is QEMU's message as a HOST_ERROR and leaves no socket or pid file. */
export async function launch(runner: CommandRunner, argv: readonly string[], run: GuestRuntime): Promise<void> {
  await clearRuntime(run);
  const result = await runner.run(argv, { timeoutMs: 60_000 });
  if (result.code !== 0) {
    await clearRuntime(run);
    throw hostError('starting QEMU failed', result, 'qemu-system-x86_64');
  }
}

/** `quit` through QMP, then SIGKILL after `graceMs` if QEMU is still there. Returns how it ended. */
export async function shutdown(runner: CommandRunner, run: GuestRuntime, graceMs = 10_000): Promise<'quit' | 'killed' | 'gone'> {
  const pid = await readPid(run.pid);
  let asked = true;
  try {
    await qmp(run.qmp, 'quit');
  } catch {
    asked = false;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!(await alive(runner, pid, run.qmp))) {
      await clearRuntime(run);
      return asked ? 'quit' : 'gone';
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (pid !== null && (await isOurQemu(runner, pid, run.qmp))) await runner.run(['kill', '-KILL', String(pid)], { timeoutMs: 10_000 });
  await clearRuntime(run);
  return 'killed';
}

/** Whether this guest's QEMU still exists: its pid runs QEMU with our socket, or the socket answers. */
async function alive(runner: CommandRunner, pid: number | null, socket: string): Promise<boolean> {
  if (pid !== null) return isOurQemu(runner, pid, socket);
  return (await qmpStatus(socket)) !== null;
}

async function isOurQemu(runner: CommandRunner, pid: number, socket: string): Promise<boolean> {
  const result = await runner.run(['ps', '-o', 'stat=,args=', '-p', String(pid)], { timeoutMs: 10_000 });
  // A zombie (`Z`) has exited; only its parent's wait is missing.
  return result.code === 0 && !result.stdout.trimStart().startsWith('Z') && result.stdout.includes(socket);
}

async function readPid(path: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(path, 'utf8')).trim());
    return Number.isInteger(pid) && pid > 1 ? pid : null;
  } catch {
    return null;
  }
}

export async function clearRuntime(run: GuestRuntime): Promise<void> {
  await rm(run.qmp, { force: true });
  await rm(run.pid, { force: true });
}
