/**
 * `systemmanager` on FreeBSD: the tools the original used (sysctl, top, apm, mount, uname,
 * freebsd-version, shutdown), with argv arrays and every check made before a change. No kernel
 * module is ever loaded: without coretemp/amdtemp `cputemps` is simply empty.
 */
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from '../index.ts';
import type { RunOptions } from '../../../runner/runner.ts';
import { hostError, runOrHostError } from '../../common/host-command.ts';
import { posixProcessControl } from '../../common/posix-processes.ts';
import { CpuSampler } from '../../common/cpu-sampler.ts';
import type { SystemmanagerPort } from '../../ports/systemmanager.ts';
import {
  MEMORY_SYSCTLS,
  TOP_ARGV,
  externalMountsFromMountP,
  memoryFromSysctls,
  parseApm,
  parseBoottime,
  parseCpTimes,
  parseCpuTemperatures,
  parseSysctlLines,
  parseTop,
} from '../parse/systemmanager.ts';

const TIMEOUT: RunOptions = { timeoutMs: 30_000 };

export interface FreebsdSystemmanagerOptions {
  /** Clock for the uptime (tests pin it). */
  now?: () => number;
  /** CPU sampling (tests shorten the gap). */
  sampler?: { gapMs?: number; sleep?: (ms: number) => Promise<void> };
}

export function freebsdSystemmanagerPort(ctx: FreebsdContext, options: FreebsdSystemmanagerOptions = {}): SystemmanagerPort {
  const { runner } = ctx;
  const now = options.now ?? Date.now;
  const run = (what: string, argv: readonly string[]) => runOrHostError(runner, argv, what, TIMEOUT);
  const sampler = new CpuSampler(async () => parseCpTimes(await run('sysctl kern.cp_times', ['sysctl', '-n', 'kern.cp_times'])), options.sampler);
  const readSysctl = async (name: string) => (await run(`sysctl ${name}`, ['sysctl', '-n', '--', name])).replace(/\n$/, '');

  /** `sysctl -WN name` prints the name only for a writable, non-statistics leaf. */
  async function checkWritable(name: string): Promise<void> {
    const result = await runner.run(['sysctl', '-WN', '--', name], TIMEOUT);
    if (result.code !== 0) {
      if (/unknown oid/i.test(result.stderr)) throw badRequest(`sysctl: unknown sysctl ${name}`, [{ field: 'sysctl', message: 'no such sysctl' }]);
      throw hostError(`sysctl ${name}`, result, 'sysctl');
    }
    const names = result.stdout.split('\n').filter(Boolean);
    if (names.length === 1 && names[0] === name) return;
    if (names.some((n) => n.startsWith(`${name}.`))) {
      throw badRequest(`sysctl: ${name} is a group of sysctls, not one`, [{ field: 'sysctl', message: 'is not a single sysctl' }]);
    }
    throw badRequest(`sysctl: ${name} is read-only`, [{ field: 'sysctl', message: 'is read-only (or a boot-time tunable)' }]);
  }

  return {
    async memoryStats() {
      // -i: kstat.zfs… is absent without ZFS, and that is not an error.
      return memoryFromSysctls(parseSysctlLines(await run('sysctl vm.stats', ['sysctl', '-i', ...MEMORY_SYSCTLS])));
    },

    cpuUsage: () => sampler.usage(),

    async cpuTemperatures() {
      return parseCpuTemperatures(await run('sysctl dev.cpu', ['sysctl', 'dev.cpu']));
    },

    async processes() {
      return parseTop(await run('top', TOP_ARGV));
    },

    ...posixProcessControl(runner, TIMEOUT),

    protectedPids: [process.pid],

    async battery() {
      const result = await runner.run(['apm', '-alt'], TIMEOUT);
      // No /dev/apm (no ACPI battery driver): nothing reports a battery, so there is none to show.
      if (result.code !== 0 && /can't open \/dev\/apm/i.test(result.stderr)) return { present: false };
      if (result.code !== 0) throw hostError('apm', result, 'apm');
      return parseApm(result.stdout);
    },

    async externalMounts() {
      return externalMountsFromMountP(await run('mount -p', ['mount', '-p']));
    },

    async systemInfo() {
      const [arch, release, ident, version, host, sysctls] = await Promise.all([
        run('uname -m', ['uname', '-m']),
        run('uname -r', ['uname', '-r']),
        run('uname -i', ['uname', '-i']),
        run('freebsd-version', ['freebsd-version']),
        run('hostname', ['hostname']),
        run('sysctl hw', ['sysctl', 'hw.model', 'hw.ncpu', 'hw.realmem', 'kern.boottime']),
      ]);
      const values = parseSysctlLines(sysctls);
      const booted = parseBoottime(values['kern.boottime'] ?? '');
      return {
        arch: arch.trim(),
        cpuCores: Number(values['hw.ncpu']) || 0,
        cpuType: (values['hw.model'] ?? '').trim(),
        hostname: host.trim(),
        kernelIdent: ident.trim(),
        kernelVersion: release.trim(),
        systemVersion: version.trim(),
        totalMemMiB: Math.floor((Number(values['hw.realmem']) || 0) / 1024 / 1024),
        uptimeSeconds: booted === null ? 0 : Math.max(0, now() / 1000 - booted),
      };
    },

    async sysctls() {
      return parseSysctlLines(await run('sysctl -aW', ['sysctl', '-aW']));
    },

    async setSysctl(name, value) {
      await checkWritable(name);
      const oldValue = await readSysctl(name);
      const result = await runner.run(['sysctl', '--', `${name}=${value}`], TIMEOUT);
      if (result.code !== 0) {
        // The name is a writable leaf (checked), so what is left is the value: sysctl(8) refuses it
        // before setting anything ("invalid integer", "empty numeric value") or the kernel does.
        const reason = result.stderr.trim().replace(/^sysctl: /, '') || `exit code ${String(result.code)}`;
        throw badRequest(`value: ${name}=${value} was refused: ${reason}`, [{ field: 'value', message: `refused: ${reason}` }]);
      }
      return { name, oldValue, newValue: await readSysctl(name) };
    },

    async halt() {
      await run('shutdown -p now', ['shutdown', '-p', 'now']);
    },

    async reboot() {
      await run('shutdown -r now', ['shutdown', '-r', 'now']);
    },
  };
}
