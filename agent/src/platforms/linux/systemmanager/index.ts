/**
 * `systemmanager` on Linux. Kernel-wide figures (memory, CPU ticks, uptime, CPU model) come from
 * `<procRoot>`, sensors and the battery from `<sysRoot>`. Everything that depends on which
 * namespace is "the host" (processes, signals, sysctls, mounts, hostname, /etc/os-release) goes
 * through the runner, so a runner aimed into a sandbox sees the sandbox.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from '../index.ts';
import type { RunOptions } from '../../../runner/runner.ts';
import { hostError, runOrHostError } from '../../common/host-command.ts';
import { posixProcessControl } from '../../common/posix-processes.ts';
import { CpuSampler } from '../../common/cpu-sampler.ts';
import type { SystemmanagerPort } from '../../ports/systemmanager.ts';
import {
  LSBLK_ARGV,
  PS_ARGV,
  externalMountsFrom,
  memoryFromMeminfo,
  parseCpuinfo,
  parseLsblk,
  parseMeminfo,
  parseMountinfo,
  parseOsRelease,
  parseProcStat,
  parsePs,
  parseSysctlAll,
  parseUptime,
  sysctlNameFromPath,
  sysctlPath,
} from '../parse/systemmanager.ts';
import { readBattery, readCpuTemperatures } from './sysfs.ts';

const TIMEOUT: RunOptions = { timeoutMs: 30_000 };

export function linuxSystemmanagerPort(ctx: LinuxContext): SystemmanagerPort {
  const { runner } = ctx;
  const proc = (file: string) => readFile(join(ctx.procRoot, file), 'utf8');
  const run = (what: string, argv: readonly string[]) => runOrHostError(runner, argv, what, TIMEOUT);
  const sampler = new CpuSampler(async () => parseProcStat(await proc('stat')));

  /** `stat` of the sysctl's file inside the runner's namespace: existence, leaf, writability. */
  async function checkWritable(name: string): Promise<void> {
    const result = await runner.run(['stat', '-c', '%F:%a', '--', sysctlPath(name)], TIMEOUT);
    if (result.code !== 0) throw badRequest(`sysctl: unknown sysctl ${name}`, [{ field: 'sysctl', message: 'no such sysctl' }]);
    const [kind = '', mode = '0'] = result.stdout.trim().split(':');
    if (!kind.startsWith('regular'))
      throw badRequest(`sysctl: ${name} is a group of sysctls, not one`, [{ field: 'sysctl', message: 'is not a single sysctl' }]);
    if ((parseInt(mode, 8) & 0o200) === 0) throw badRequest(`sysctl: ${name} is read-only`, [{ field: 'sysctl', message: 'is read-only' }]);
  }

  const readSysctl = async (name: string) => (await run(`sysctl ${name}`, ['sysctl', '-n', '--', name])).trim().replace(/\t/g, ' ');

  async function shutdown(flag: '-P' | '-r', what: string): Promise<void> {
    // -P powers off under both systemd's and sysvinit's shutdown; it returns once the shutdown is under way.
    await run(what, ['shutdown', flag, 'now']);
  }

  return {
    async memoryStats() {
      return memoryFromMeminfo(parseMeminfo(await proc('meminfo')));
    },

    cpuUsage: () => sampler.usage(),

    cpuTemperatures: () => readCpuTemperatures(ctx.sysRoot),

    async processes() {
      return parsePs(await run('ps', PS_ARGV));
    },

    ...posixProcessControl(runner, TIMEOUT),

    protectedPids: [process.pid],

    battery: () => readBattery(ctx.sysRoot),

    async externalMounts() {
      // The mount table of the runner's mount namespace (a sandbox's own mounts), not the agent's.
      const mountinfo = await run('reading the mount table', ['cat', '/proc/self/mountinfo']);
      const lsblk = await run('lsblk', LSBLK_ARGV);
      return externalMountsFrom(parseMountinfo(mountinfo), parseLsblk(lsblk));
    },

    async systemInfo() {
      const [arch, release, version, host, osRelease, cpuinfo, uptime, meminfo] = await Promise.all([
        run('uname -m', ['uname', '-m']),
        run('uname -r', ['uname', '-r']),
        run('uname -v', ['uname', '-v']),
        run('hostname', ['hostname']),
        runner.run(['cat', '/etc/os-release'], TIMEOUT),
        proc('cpuinfo'),
        proc('uptime'),
        proc('meminfo'),
      ]);
      const cpu = parseCpuinfo(cpuinfo);
      const cores = cpu.count || parseProcStat(await proc('stat')).length;
      return {
        arch: arch.trim(),
        cpuCores: cores,
        cpuType: cpu.model ?? arch.trim(),
        hostname: host.trim(),
        kernelIdent: version.trim(),
        kernelVersion: release.trim(),
        systemVersion: (osRelease.code === 0 ? parseOsRelease(osRelease.stdout) : null) ?? 'Linux',
        totalMemMiB: Math.floor((parseMeminfo(meminfo).MemTotal ?? 0) / 1024),
        uptimeSeconds: parseUptime(uptime),
      };
    },

    async sysctls() {
      const [values, writable] = await Promise.all([
        // Keys the kernel refuses to read (stable_secret…) are reported on stderr and skipped.
        runner.run(['sysctl', '-a'], TIMEOUT),
        run('listing writable sysctls', ['find', '/proc/sys', '-type', 'f', '-perm', '-u=w']),
      ]);
      if (values.stdout.trim() === '') throw hostError('sysctl -a', values, 'sysctl');
      const all = parseSysctlAll(values.stdout);
      const out: Record<string, string> = {};
      for (const path of writable.split('\n')) {
        const name = sysctlNameFromPath(path);
        if (name !== null && Object.hasOwn(all, name)) out[name] = all[name] as string;
      }
      return out;
    },

    async setSysctl(name, value) {
      await checkWritable(name);
      const oldValue = await readSysctl(name);
      const result = await runner.run(['sysctl', '-w', '--', `${name}=${value}`], TIMEOUT);
      if (result.code !== 0) {
        // Existence and writability were checked, so what is left is the kernel refusing the value;
        // the write failed and nothing changed.
        const reason = result.stderr.trim().replace(/^sysctl: /, '') || `exit code ${String(result.code)}`;
        throw badRequest(`value: the kernel refused ${name}=${value}: ${reason}`, [{ field: 'value', message: `refused: ${reason}` }]);
      }
      return { name, oldValue, newValue: await readSysctl(name) };
    },

    halt: () => shutdown('-P', 'shutdown -P now'),
    reboot: () => shutdown('-r', 'shutdown -r now'),
  };
}
