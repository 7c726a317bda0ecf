/**
 * `systemmanager`: system information, processes, sysctl, halt and reboot. The port reports plain
 * numbers; this file writes them the way the spec shows them (MiB strings, `45.0C`, `up 2 days 5:09`).
 */
import { systemmanager } from '@hostadm/shared/api/systemmanager.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { SystemmanagerPort, BatteryState, MountType, ProcessEntry, SystemInfo } from '../platforms/ports/systemmanager.ts';

/** FreeBSD uptime(1)'s wording (w.c), without its commas: `up 2 days 5:09`, `up 3 mins`, `up 12 secs`. */
export function formatUptime(totalSeconds: number): string {
  let uptime = Math.max(0, Math.floor(totalSeconds));
  if (uptime <= 59) return `up ${uptime} secs`;
  uptime += 30; // uptime(1) rounds to the nearest minute
  const days = Math.floor(uptime / 86_400);
  uptime %= 86_400;
  const hrs = Math.floor(uptime / 3600);
  uptime %= 3600;
  const mins = Math.floor(uptime / 60);
  const parts = ['up'];
  if (days > 0) parts.push(`${days} day${days > 1 ? 's' : ''}`);
  if (hrs > 0 && mins > 0) parts.push(`${hrs}:${String(mins).padStart(2, '0')}`);
  else {
    if (hrs > 0) parts.push(`${hrs} hr${hrs > 1 ? 's' : ''}`);
    if (mins > 0 || (days === 0 && hrs === 0)) parts.push(`${mins} min${mins !== 1 ? 's' : ''}`);
  }
  return parts.join(' ');
}

/** Whole percent, like the original (`"busy": "12"`). */
const percent = (value: number) => String(Math.round(value));

function cpuPercentageReply(perCpu: readonly number[], total: number) {
  const cpus: Record<string, { busy: string }> = {};
  // 0-based, like cputemps and the platforms' own numbering (dev.cpu.N, /proc/stat cpuN).
  perCpu.forEach((busy, i) => (cpus[`cpu${i}`] = { busy: percent(busy) }));
  return Object.assign(cpus, { busytotal: percent(total) });
}

/**
 * The spec bounds the charge level to 1..99: a full battery reads 99 and an empty one 1 (the
 * platforms report 0..100). A level the host cannot tell is left out rather than sent outside them.
 */
function batteryReply(state: BatteryState) {
  if (!state.present) return { battery: 'false' as const };
  return {
    battery: 'true' as const,
    ...(state.level === null ? {} : { level: String(Math.min(99, Math.max(1, Math.round(state.level)))) }),
    status: state.status,
    timeleft: String(state.secondsLeft === null ? -1 : Math.round(state.secondsLeft)),
  };
}

function systemInfoReply(info: SystemInfo) {
  return {
    arch: info.arch,
    cpucores: String(info.cpuCores),
    cputype: info.cpuType,
    hostname: info.hostname,
    kernelident: info.kernelIdent,
    kernelversion: info.kernelVersion,
    systemversion: info.systemVersion,
    totalmem: info.totalMemMiB,
    uptime: formatUptime(info.uptimeSeconds),
  };
}

async function checkKillable(port: SystemmanagerPort, pid: number): Promise<void> {
  if (pid === 1) throw badRequest('pid: refusing to signal PID 1 (init)', [{ field: 'pid', message: 'PID 1 is init and is never signalled' }]);
  if (port.protectedPids.includes(pid)) {
    throw badRequest('pid: refusing to signal the agent itself', [{ field: 'pid', message: "is the agent's own process" }]);
  }
  if (!(await port.processExists(pid))) throw badRequest(`pid: no process ${pid}`, [{ field: 'pid', message: 'no such process' }]);
}

export const systemmanagerImpl = implementClass(systemmanager, (services) => {
  const port = services.platform.ports.systemmanager;
  if (!port) return null;
  return {
    memorystats: async () => {
      const m = await port.memoryStats();
      const mib = (n: number) => String(Math.floor(n));
      return { memorystats: { active: mib(m.active), cache: mib(m.cache), free: mib(m.free), inactive: mib(m.inactive), wired: mib(m.wired) } };
    },

    cpupercentage: async () => {
      const usage = await port.cpuUsage();
      return { cpupercentage: cpuPercentageReply(usage.perCpu, usage.total) };
    },

    cputemps: async () => {
      const temps: Record<string, string> = {};
      for (const t of await port.cpuTemperatures()) temps[`cpu${t.cpu}`] = `${t.celsius.toFixed(1)}C`;
      return { cputemps: temps };
    },

    procinfo: async () => {
      const procinfo: Record<string, Omit<ProcessEntry, 'pid'>> = {};
      for (const p of await port.processes()) {
        const { pid, ...columns } = p;
        procinfo[String(pid)] = columns;
      }
      return { procinfo };
    },

    killproc: async (args) => {
      const pid = Number(args.pid);
      await checkKillable(port, pid);
      await port.signalProcess(pid, args.signal);
      return { killproc: { action: 'killproc', pid: args.pid, signal: args.signal } };
    },

    batteryinfo: async () => ({ batteryinfo: batteryReply(await port.battery()) }),

    externalmounts: async () => {
      const mounts: Record<string, { filesystem: string; path: string; type: MountType }> = {};
      for (const m of await port.externalMounts()) mounts[m.device] = { filesystem: m.filesystem, path: m.path, type: m.type };
      return { externalmounts: mounts };
    },

    systemmanager: async () => ({ systemmanager: systemInfoReply(await port.systemInfo()) }),

    sysctllist: async () => ({ sysctllist: await port.sysctls() }),

    setsysctl: async (args) => {
      const change = await port.setSysctl(args.sysctl, args.value);
      return {
        setsysctl: {
          response: `${change.name}: ${change.oldValue} -> ${change.newValue}`,
          sysctl: change.name,
          value: change.newValue,
        },
      };
    },

    halt: async () => {
      await port.halt();
      return { halt: { response: 'true' as const } };
    },

    reboot: async () => {
      await port.reboot();
      return { reboot: { response: 'true' as const } };
    },
  };
});
