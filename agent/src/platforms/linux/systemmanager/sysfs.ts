/**
 * CPU temperatures and the battery from sysfs (`<sysRoot>/class/{hwmon,thermal,power_supply}`).
 * Only reads; a missing or unreadable file means "not known", never an error, because sysfs
 * content varies with every driver.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BatteryState, CpuTemperature } from '../../ports/systemmanager.ts';

async function read(path: string): Promise<string | null> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function readNumber(path: string): Promise<number | null> {
  const text = await read(path);
  if (text === null || text === '') return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

async function list(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  } catch {
    return [];
  }
}

const milli = (v: number) => Math.round(v / 100) / 10;

/** `temp<i>_label`/`temp<i>_input` pairs of one hwmon device. */
async function hwmonSensors(dir: string): Promise<Array<{ label: string; celsius: number }>> {
  const out: Array<{ label: string; celsius: number }> = [];
  for (const file of await list(dir)) {
    const m = /^temp(\d+)_input$/.exec(file);
    if (!m) continue;
    const value = await readNumber(join(dir, file));
    if (value === null) continue;
    out.push({ label: (await read(join(dir, `temp${m[1]}_label`))) ?? '', celsius: milli(value) });
  }
  return out;
}

/**
 * Per-CPU temperatures, best source first:
 * 1. hwmon `Core N` labels (Intel coretemp) → `cpuN`; further packages continue the numbering;
 * 2. hwmon `Package id N` labels → `cpuN` when there are no per-core sensors;
 * 3. AMD k10temp/zenpower `Tdie` (else `Tctl`) → `cpu0`, `cpu1`… per device;
 * 4. thermal zones of a CPU type (`x86_pkg_temp`, `cpu-thermal`, `cpu_thermal`, `soc_thermal`),
 *    then `acpitz`, numbered in zone order.
 */
export async function readCpuTemperatures(sysRoot: string): Promise<CpuTemperature[]> {
  const hwmonRoot = join(sysRoot, 'class', 'hwmon');
  const cores: CpuTemperature[] = [];
  const packages: CpuTemperature[] = [];
  const amd: CpuTemperature[] = [];
  let offset = 0;
  for (const dev of await list(hwmonRoot)) {
    const dir = join(hwmonRoot, dev);
    const name = (await read(join(dir, 'name'))) ?? '';
    const sensors = await hwmonSensors(dir);
    let maxCore = -1;
    for (const s of sensors) {
      const core = /^Core (\d+)$/.exec(s.label);
      const pkg = /^Package id (\d+)$/.exec(s.label);
      if (core) {
        const n = Number(core[1]);
        maxCore = Math.max(maxCore, n);
        cores.push({ cpu: offset + n, celsius: s.celsius });
      } else if (pkg) packages.push({ cpu: Number(pkg[1]), celsius: s.celsius });
    }
    offset += maxCore + 1;
    if (name === 'k10temp' || name === 'zenpower') {
      const die = sensors.find((s) => s.label === 'Tdie') ?? sensors.find((s) => s.label === 'Tctl');
      if (die) amd.push({ cpu: amd.length, celsius: die.celsius });
    }
  }
  if (cores.length > 0) return cores;
  if (packages.length > 0) return packages;
  if (amd.length > 0) return amd;

  const zoneRoot = join(sysRoot, 'class', 'thermal');
  const cpuZones: number[] = [];
  const acpiZones: number[] = [];
  for (const zone of (await list(zoneRoot)).filter((z) => z.startsWith('thermal_zone'))) {
    const type = (await read(join(zoneRoot, zone, 'type'))) ?? '';
    const temp = await readNumber(join(zoneRoot, zone, 'temp'));
    if (temp === null) continue;
    if (['x86_pkg_temp', 'cpu-thermal', 'cpu_thermal', 'soc_thermal'].includes(type)) cpuZones.push(milli(temp));
    else if (type === 'acpitz') acpiZones.push(milli(temp));
  }
  const zones = cpuZones.length > 0 ? cpuZones : acpiZones;
  return zones.map((celsius, cpu) => ({ cpu, celsius }));
}

/**
 * The first battery (`type` Battery, `present` not 0) in name order, with its AC adapter.
 * `status` follows the original's meaning, the state of the AC line: AC present → `charging`
 * (Linux Charging, Full, Not charging), running on the battery → `offline` (Discharging), else
 * `unknown`; Linux has no backup-power state. Time left is only known while discharging.
 */
export async function readBattery(sysRoot: string): Promise<BatteryState> {
  const root = join(sysRoot, 'class', 'power_supply');
  let battery: string | null = null;
  let acOnline: boolean | null = null;
  for (const name of await list(root)) {
    const dir = join(root, name);
    const type = await read(join(dir, 'type'));
    if (type === 'Mains' || type === 'USB') {
      const online = await readNumber(join(dir, 'online'));
      if (online !== null) acOnline = (acOnline ?? false) || online === 1;
    } else if (type === 'Battery' && battery === null && (await readNumber(join(dir, 'present'))) !== 0) {
      // A device-scoped battery (a wireless mouse's) is not the machine's.
      if ((await read(join(dir, 'scope'))) !== 'Device') battery = dir;
    }
  }
  if (battery === null) return { present: false };

  const raw = (await read(join(battery, 'status'))) ?? 'Unknown';
  const discharging = raw === 'Discharging';
  const onAc = acOnline ?? (raw === 'Charging' || raw === 'Full' || raw === 'Not charging' ? true : discharging ? false : null);
  const status = onAc === true ? 'charging' : onAc === false ? 'offline' : 'unknown';

  let level = await readNumber(join(battery, 'capacity'));
  if (level === null) {
    const now = (await readNumber(join(battery, 'energy_now'))) ?? (await readNumber(join(battery, 'charge_now')));
    const full = (await readNumber(join(battery, 'energy_full'))) ?? (await readNumber(join(battery, 'charge_full')));
    if (now !== null && full) level = (100 * now) / full;
  }

  let secondsLeft: number | null = null;
  if (discharging && onAc !== true) {
    const direct = await readNumber(join(battery, 'time_to_empty_now'));
    if (direct !== null && direct > 0) secondsLeft = direct;
    else {
      const energy = await readNumber(join(battery, 'energy_now'));
      const power = await readNumber(join(battery, 'power_now'));
      const charge = await readNumber(join(battery, 'charge_now'));
      const current = await readNumber(join(battery, 'current_now'));
      // µWh / µW and µAh / µA are both hours.
      if (energy !== null && power) secondsLeft = (Math.abs(energy) / Math.abs(power)) * 3600;
      else if (charge !== null && current) secondsLeft = (Math.abs(charge) / Math.abs(current)) * 3600;
    }
  }
  return { present: true, level, status, secondsLeft };
}
