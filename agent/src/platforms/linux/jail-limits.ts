/**
 * A Linux jail's resource limits (`capjail`, and at start): the rctl-style properties that cgroups can
 * enforce, in cgroups of ours named `hostadm-jails/<uuid>`:
 *
 * | property  | value                      | cgroup v1 (this hybrid host)   | cgroup v2            |
 * |-----------|----------------------------|--------------------------------|----------------------|
 * | memoryuse | `[<action>=]<n>[K|M|G|T]`  | memory.limit_in_bytes          | memory.max           |
 * | maxproc   | `[<action>=]<n>`           | pids.max                       | pids.max             |
 * | pcpu      | `[<action>=]<percent>`     | cpu.cfs_quota_us (period 0.1s) | cpu.max              |
 *
 * `off` lifts a limit. The other rctl properties (openfiles, vmemoryuse, wallclock, ...) have no
 * cgroup counterpart: set to anything but `off`, capjail refuses (501) naming them and applies none.
 * Every process in the jail's PID namespace is moved in (`pgrep --ns`); a command `execjail` starts
 * later joins the jail's cgroups before it runs (cgroup-exec.ts), so the limits hold for it too.
 * v2 is used only where the host already delegates memory, pids and cpu to its root's children:
 * the agent never changes a cgroup outside its own subtree.
 */
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { run } from './jail-runtime.ts';

const QUICK = { timeoutMs: 30_000 };
const GROUP = 'hostadm-jails';

/** The rctl properties of the spec's set that cgroups cannot enforce. */
const NOT_ENFORCEABLE = [
  'coredumpsize',
  'cputime',
  'datasize',
  'memorylocked',
  'msgqqueued',
  'msgqsize',
  'nmsgq',
  'nsemop',
  'nshm',
  'nthr',
  'openfiles',
  'pseudoterminals',
  'shmsize',
  'stacksize',
  'swapuse',
  'vmemoryuse',
  'wallclock',
] as const;

export interface JailLimits {
  memoryBytes: number | null;
  maxProcs: number | null;
  cpuPercent: number | null;
}

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

function amount(name: string, value: string | undefined, withUnits: boolean): number | null {
  if (value === undefined || value === 'off' || value === 'none' || value === '') return null;
  const match = /^(?:[a-z]+=)?(\d+)([KMGTkmgt]?)(?::[a-z]+)?$/.exec(value);
  const unit = (match?.[2] ?? '').toUpperCase();
  if (!match || (!withUnits && unit !== '')) {
    const message = `${name}=${value} is not a limit Linux can apply ([<action>=]${withUnits ? '<n>[K|M|G|T]' : '<n>'}, or off)`;
    throw new HostadmError('CONFLICT', message, { fieldErrors: [{ field: 'jail', message }] });
  }
  return Number(match[1]) * (UNITS[unit] ?? 1);
}

/** The limits a jail's properties ask for; 501 naming the ones cgroups cannot enforce. */
export function limitsOf(props: Readonly<Record<string, string>>): JailLimits {
  const unenforceable = NOT_ENFORCEABLE.filter((name) => (props[name] ?? 'off') !== 'off');
  if (unenforceable.length > 0)
    throw unsupported(`Linux cgroups cannot enforce ${unenforceable.map((n) => `${n}=${props[n]}`).join(', ')}: set them to off; no limit was applied`);
  return {
    memoryBytes: amount('memoryuse', props.memoryuse, true),
    maxProcs: amount('maxproc', props.maxproc, false),
    cpuPercent: amount('pcpu', props.pcpu, false),
  };
}

export const hasLimits = (l: JailLimits) => l.memoryBytes !== null || l.maxProcs !== null || l.cpuPercent !== null;

type Layout = { kind: 'v1'; dirs: { memory: string; pids: string; cpu: string } } | { kind: 'v2'; dir: string };

export class JailCgroups {
  private readonly runner: CommandRunner;
  private readonly cgroupRoot: string;

  constructor(runner: CommandRunner, cgroupRoot: string) {
    this.runner = runner;
    this.cgroupRoot = cgroupRoot;
  }

  private async exists(path: string): Promise<boolean> {
    return (await this.runner.run(['test', '-e', path], QUICK)).code === 0;
  }

  private async layout(uuid: string): Promise<Layout> {
    const r = this.cgroupRoot;
    if (await this.exists(`${r}/memory/cgroup.procs`)) {
      for (const c of ['pids', 'cpu'])
        if (!(await this.exists(`${r}/${c}/cgroup.procs`))) throw unsupported(`this host's cgroup v1 has no ${c} controller at ${r}/${c}`);
      return { kind: 'v1', dirs: { memory: `${r}/memory/${GROUP}/${uuid}`, pids: `${r}/pids/${GROUP}/${uuid}`, cpu: `${r}/cpu/${GROUP}/${uuid}` } };
    }
    const delegated = (await this.runner.run(['cat', `${r}/cgroup.subtree_control`], QUICK)).stdout.split(/\s+/);
    if (!['memory', 'pids', 'cpu'].every((c) => delegated.includes(c)))
      throw unsupported(`this host's cgroups (${r}) do not offer memory, pids and cpu to the agent`);
    return { kind: 'v2', dir: `${r}/${GROUP}/${uuid}` };
  }

  private async write(file: string, value: string): Promise<void> {
    await run(this.runner, ['tee', '--', file], { timeoutMs: QUICK.timeoutMs, input: value });
  }

  /** Puts every process of the jail (the PID namespace of `pid`) under `limits`. */
  async apply(uuid: string, pid: number, limits: JailLimits): Promise<void> {
    const layout = await this.layout(uuid);
    const pids = (await run(this.runner, ['pgrep', '--ns', String(pid), '--nslist', 'pid'])).split('\n').filter((p) => /^\d+$/.test(p));
    if (layout.kind === 'v1') {
      const { memory, pids: pidsDir, cpu } = layout.dirs;
      for (const dir of [memory, pidsDir, cpu]) await run(this.runner, ['mkdir', '-p', '--', dir]);
      await this.write(`${memory}/memory.limit_in_bytes`, limits.memoryBytes === null ? '-1' : String(limits.memoryBytes));
      await this.write(`${pidsDir}/pids.max`, limits.maxProcs === null ? 'max' : String(limits.maxProcs));
      await this.write(`${cpu}/cpu.cfs_period_us`, '100000');
      await this.write(`${cpu}/cpu.cfs_quota_us`, limits.cpuPercent === null ? '-1' : String(limits.cpuPercent * 1000));
      for (const dir of [memory, pidsDir, cpu]) for (const p of pids) await this.write(`${dir}/cgroup.procs`, p);
      return;
    }
    const parent = layout.dir.slice(0, layout.dir.lastIndexOf('/'));
    await run(this.runner, ['mkdir', '-p', '--', layout.dir]);
    await this.write(`${parent}/cgroup.subtree_control`, '+memory +pids +cpu');
    await this.write(`${layout.dir}/memory.max`, limits.memoryBytes === null ? 'max' : String(limits.memoryBytes));
    await this.write(`${layout.dir}/pids.max`, limits.maxProcs === null ? 'max' : String(limits.maxProcs));
    await this.write(`${layout.dir}/cpu.max`, `${limits.cpuPercent === null ? 'max' : String(limits.cpuPercent * 1000)} 100000`);
    for (const p of pids) await this.write(`${layout.dir}/cgroup.procs`, p);
  }

  /** The `cgroup.procs` files of this jail's cgroups that exist (none before limits were first applied). */
  async procsFiles(uuid: string): Promise<string[]> {
    const r = this.cgroupRoot;
    const files: string[] = [];
    for (const base of [`${r}/memory`, `${r}/pids`, `${r}/cpu`, r]) {
      const file = `${base}/${GROUP}/${uuid}/cgroup.procs`;
      if (await this.exists(file)) files.push(file);
    }
    return files;
  }

  /** Every cgroup directory of ours for this jail, deepest first, then our parent when it is empty. */
  async remove(uuid: string): Promise<void> {
    const r = this.cgroupRoot;
    for (const base of [`${r}/memory`, `${r}/pids`, `${r}/cpu`, r]) {
      const dir = `${base}/${GROUP}/${uuid}`;
      if (await this.exists(dir)) await run(this.runner, ['rmdir', '--', dir]);
      // Still holds another jail's cgroup: rmdir refuses, and that is what we want.
      if (await this.exists(`${base}/${GROUP}`)) await this.runner.run(['rmdir', '--', `${base}/${GROUP}`], QUICK);
    }
  }

  /** The cgroup directories of ours that exist (for tests and the record). */
  async present(): Promise<string[]> {
    const r = this.cgroupRoot;
    const out: string[] = [];
    for (const base of [`${r}/memory`, `${r}/pids`, `${r}/cpu`, r]) if (await this.exists(`${base}/${GROUP}`)) out.push(`${base}/${GROUP}`);
    return out;
  }
}
