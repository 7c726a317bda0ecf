/**
 * powerd on Linux, where the kernel's cpufreq governors do the power daemon's work: "running" means
 * the governor of the configured mode (for the current power source: AC, battery or unknown, read
 * from /sys/class/power_supply) and the frequency limits are in force on every cpufreq policy, read
 * back from the kernel. `start` saves the governors it replaces and applies the options; `stop`
 * puts those governors back and lifts the limits. The options, the boot setting and the saved
 * governors live in `<data>/powerd.json`; with the boot setting on, the agent applies the options
 * when it starts. The load thresholds and the polling interval are kept for the record only: the
 * kernel's governors sample and decide on their own.
 *
 * A host without `/sys/devices/system/cpu/cpu<N>/cpufreq` (a VM, a container) cannot do any of
 * this: the port is left out and `query` does not list powerd.
 */
import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { POWERD_DEFAULTS, type PowerdOptions } from '@hostadm/shared/api/powerd.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { PowerdPort } from '../ports/powerd.ts';
import { readBattery } from './systemmanager/sysfs.ts';
import { governorFor, limitKhz, parseGovernors } from './parse/powerd.ts';

interface PowerdState {
  options: PowerdOptions;
  enabled: boolean;
  /** While applied: per policy directory, the governor we set and the one it replaced. */
  applied: Record<string, { ours: string; before: string }> | null;
}

/** The cpufreq policy directories (cpu<N>/cpufreq, resolved so CPUs sharing a policy count once). */
export function cpufreqPolicies(sysRoot: string): string[] {
  const cpuRoot = join(sysRoot, 'devices', 'system', 'cpu');
  let names: string[];
  try {
    names = readdirSync(cpuRoot);
  } catch {
    return [];
  }
  const policies = new Set<string>();
  for (const name of names.filter((n) => /^cpu\d+$/.test(n)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))) {
    const dir = join(cpuRoot, name, 'cpufreq');
    if (existsSync(join(dir, 'scaling_governor'))) policies.add(realpathSync(dir));
  }
  return [...policies];
}

export function linuxPowerd(ctx: LinuxContext): PowerdPort | null {
  const policies = cpufreqPolicies(ctx.sysRoot);
  if (policies.length === 0) return null;
  const statePath = join(ctx.dataDir, 'powerd.json');
  const load = (): PowerdState => readState(statePath);
  const save = (state: PowerdState) => writeState(statePath, state);

  const apply = async (): Promise<void> => {
    const state = load();
    const battery = await readBattery(ctx.sysRoot);
    const source = battery.present && battery.status === 'charging' ? 'ac' : battery.present && battery.status === 'offline' ? 'battery' : 'unknown';
    const mode = state.options[`${source}_power_mode`];
    const applied: NonNullable<PowerdState['applied']> = {};
    for (const dir of policies) {
      const available = parseGovernors(await readSys(join(dir, 'scaling_available_governors')));
      const governor = governorFor(mode, available);
      if (!governor) throw new HostadmError('UNSUPPORTED', `${dir}: no governor for mode ${mode} among ${available.join(', ') || 'none'}`);
      const before = state.applied?.[dir]?.before ?? (await readSys(join(dir, 'scaling_governor')));
      await setLimits(dir, state.options);
      await writeSys(join(dir, 'scaling_governor'), governor);
      applied[dir] = { ours: governor, before };
      // Saved after each policy, so a failure half-way still knows what to put back.
      save({ ...state, applied: { ...state.applied, ...applied } });
    }
  };
  const inForce = async (): Promise<boolean> => {
    const { applied } = load();
    if (!applied) return false;
    for (const dir of policies) {
      if (applied[dir]?.ours !== (await readSys(join(dir, 'scaling_governor')))) return false;
    }
    return true;
  };

  if (load().enabled) {
    // The boot setting: apply at agent start. A failure leaves `running` false, which status reports.
    apply().catch(() => undefined);
  }

  return {
    async readOptions() {
      return load().options;
    },
    async writeOptions(options) {
      save({ ...load(), options: { ...options } });
    },
    async status() {
      return { enabled: load().enabled, running: await inForce() };
    },
    async setEnabled(enabled) {
      save({ ...load(), enabled });
    },
    async start() {
      if (!(await inForce())) await apply();
      return true;
    },
    async stop() {
      const state = load();
      for (const [dir, { before }] of Object.entries(state.applied ?? {})) {
        await setLimits(dir, POWERD_DEFAULTS);
        await writeSys(join(dir, 'scaling_governor'), before);
      }
      save({ ...state, applied: null });
      return true;
    },
    restart: apply,
  };
}

/** Writes the limits lowest-first then highest, so the kernel never sees min above max in between. */
async function setLimits(dir: string, options: PowerdOptions): Promise<void> {
  const range = { min: Number(await readSys(join(dir, 'cpuinfo_min_freq'))), max: Number(await readSys(join(dir, 'cpuinfo_max_freq'))) };
  const max = limitKhz(options.max_cpu_freq, range.max, range);
  const min = Math.min(max, limitKhz(options.min_cpu_freq, range.min, range));
  await writeSys(join(dir, 'scaling_min_freq'), String(range.min));
  await writeSys(join(dir, 'scaling_max_freq'), String(max));
  await writeSys(join(dir, 'scaling_min_freq'), String(min));
}

async function readSys(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (err) {
    throw new HostadmError('HOST_ERROR', `reading ${path} failed: ${(err as Error).message}`);
  }
}

async function writeSys(path: string, value: string): Promise<void> {
  try {
    await writeFile(path, value);
  } catch (err) {
    throw new HostadmError('HOST_ERROR', `writing ${value} to ${path} failed: ${(err as Error).message}`);
  }
}

function readState(path: string): PowerdState {
  try {
    const state = JSON.parse(readFileSync(path, 'utf8')) as Partial<PowerdState>;
    return { options: { ...POWERD_DEFAULTS, ...state.options }, enabled: state.enabled === true, applied: state.applied ?? null };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new HostadmError('HOST_ERROR', `${path} is unreadable: ${(err as Error).message}`);
    return { options: { ...POWERD_DEFAULTS }, enabled: false, applied: null };
  }
}

function writeState(path: string, state: PowerdState): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  renameSync(tmp, path);
}
