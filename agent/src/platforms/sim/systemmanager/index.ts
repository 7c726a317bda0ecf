/**
 * The simulated host's system manager: a persisted process table that `killproc` changes, sysctls
 * that `setsysctl` changes (writable ones only), and memory, CPU, temperature and battery figures
 * that drift with the clock the way a lightly used laptop's do. `halt`/`reboot` only mark the state
 * (a reboot restarts the uptime and the processes); the agent keeps running.
 */
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from '../index.ts';
import type { BatteryState, CpuUsage, MemoryStats, SystemmanagerPort } from '../../ports/systemmanager.ts';
import { SIM_AGENT_PID, SIM_CPUS, SIM_INFO, SIM_TOTAL_MEM_MIB, seedProcesses, seedSystem, type SimSystemState } from './seed.ts';

/** A smooth wobble in [-1, 1] with the given period, so consecutive readings look related. */
const wave = (now: number, periodMs: number, phase = 0) => Math.sin((2 * Math.PI * now) / periodMs + phase);

export function simMemory(now: number): MemoryStats {
  const wired = Math.round(1450 + 80 * wave(now, 600_000));
  const active = Math.round(900 + 220 * wave(now, 90_000, 1));
  const inactive = Math.round(2300 + 300 * wave(now, 300_000, 2));
  const cache = Math.round(640 + 120 * wave(now, 420_000, 3));
  const free = SIM_TOTAL_MEM_MIB - wired - active - inactive - cache;
  return { active, inactive, cache, free, wired };
}

export function simCpuUsage(now: number): CpuUsage {
  const perCpu = Array.from({ length: SIM_CPUS }, (_, i) => {
    const busy = 9 + 7 * wave(now, 20_000, i * 1.7) + 4 * wave(now, 3_100, i) + Math.random() * 2;
    return Math.max(0, Math.min(100, busy));
  });
  return { perCpu, total: perCpu.reduce((a, b) => a + b, 0) / perCpu.length };
}

/** A 6-hour cycle: 4 hours discharging from 100 % to 20 %, then 2 hours charging back. */
export function simBattery(now: number): BatteryState {
  const cycleMs = 6 * 3600_000;
  const dischargeMs = 4 * 3600_000;
  const t = now % cycleMs;
  if (t < dischargeMs) {
    const level = 100 - (80 * t) / dischargeMs;
    // At this rate the remaining charge lasts level / 20 % per hour.
    return { present: true, level: Math.round(level), status: 'offline', secondsLeft: Math.round((level / 20) * 3600) };
  }
  const level = 20 + (80 * (t - dischargeMs)) / (cycleMs - dischargeMs);
  return { present: true, level: Math.round(level), status: 'charging', secondsLeft: null };
}

export function simSystemmanagerPort(ctx: SimContext): SystemmanagerPort {
  const state = ctx.store.slice<SimSystemState>('systemmanager', () => seedSystem(Date.now()));

  return {
    async memoryStats() {
      return simMemory(Date.now());
    },
    async cpuUsage() {
      return simCpuUsage(Date.now());
    },
    async cpuTemperatures() {
      const now = Date.now();
      return Array.from({ length: SIM_CPUS }, (_, cpu) => ({ cpu, celsius: Math.round((44 + 5 * wave(now, 45_000, cpu) + cpu * 0.6) * 10) / 10 }));
    },
    async processes() {
      return Object.values(state.get().processes).sort((a, b) => a.pid - b.pid);
    },
    async processExists(pid) {
      return Object.hasOwn(state.get().processes, String(pid));
    },
    protectedPids: [SIM_AGENT_PID],
    async signalProcess(pid) {
      state.update((s) => {
        if (!Object.hasOwn(s.processes, String(pid))) throw badRequest(`pid: no process ${pid}`, [{ field: 'pid', message: 'no such process' }]);
        // Every signal killproc accepts ends a process that does not catch it, and none of the
        // simulated daemons do.
        delete s.processes[String(pid)];
      });
    },
    async battery() {
      return simBattery(Date.now());
    },
    async externalMounts() {
      return [{ device: '/dev/da0s1', filesystem: 'msdosfs', path: '/media/KINGSTON', type: 'USB' }];
    },
    async systemInfo() {
      return {
        ...SIM_INFO,
        cpuCores: SIM_CPUS,
        hostname: ctx.host.get().hostname,
        totalMemMiB: SIM_TOTAL_MEM_MIB,
        uptimeSeconds: (Date.now() - state.get().bootedAt) / 1000,
      };
    },
    async sysctls() {
      const out: Record<string, string> = {};
      for (const [name, s] of Object.entries(state.get().sysctls)) if (s.writable) out[name] = s.value;
      return out;
    },
    async setSysctl(name, value) {
      return state.update((s) => {
        const entry = Object.hasOwn(s.sysctls, name) ? s.sysctls[name] : undefined;
        if (!entry) throw badRequest(`sysctl: unknown sysctl ${name}`, [{ field: 'sysctl', message: 'no such sysctl' }]);
        if (!entry.writable) throw badRequest(`sysctl: ${name} is read-only`, [{ field: 'sysctl', message: 'is read-only' }]);
        if (entry.kind === 'int' && !/^-?\d{1,12}$/.test(value)) {
          throw badRequest(`value: ${name} takes an integer`, [{ field: 'value', message: 'must be an integer for this sysctl' }]);
        }
        const oldValue = entry.value;
        entry.value = value;
        return { name, oldValue, newValue: value };
      });
    },
    async halt() {
      state.update((s) => {
        s.power = 'halted';
        s.lastPowerAction = { action: 'halt', at: Date.now() };
      });
    },
    async reboot() {
      state.update((s) => {
        const now = Date.now();
        s.power = 'running';
        s.lastPowerAction = { action: 'reboot', at: now };
        s.bootedAt = now;
        s.processes = seedProcesses();
      });
    },
  };
}
