/**
 * Pure parsers for the FreeBSD tools `systemmanager` runs (sysctl, top, apm, mount -p). The tests
 * feed them real output saved under test/fixtures/freebsd/systemmanager.
 */
import type { BatteryState, CpuTemperature, ExternalMount, MemoryStats, MountType, ProcessEntry } from '../../ports/systemmanager.ts';
import type { CpuTicks } from '../../common/cpu-sampler.ts';

/**
 * `sysctl name...` / `sysctl -aW` output (`name: value` lines). A line that does not start with a
 * name continues the previous value (multi-line string sysctls).
 */
export function parseSysctlLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let last: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_%][A-Za-z0-9_%.-]*): ?(.*)$/.exec(line);
    if (m) {
      last = m[1] as string;
      out[last] = m[2] as string;
    } else if (last !== null && line !== '') {
      out[last] += `\n${line}`;
    }
  }
  return out;
}

export const MEMORY_SYSCTLS = [
  'vm.stats.vm.v_page_size',
  'vm.stats.vm.v_free_count',
  'vm.stats.vm.v_inactive_count',
  'vm.stats.vm.v_cache_count',
  'vm.stats.vm.v_wire_count',
  'vm.stats.vm.v_active_count',
  'kstat.zfs.misc.arcstats.size',
] as const;

/**
 * Page counts × page size in whole MiB, as the original. FreeBSD 12 emptied the cache queue
 * (v_cache_count stays 0), so `cache` is then the ZFS ARC, the memory that now plays that part;
 * without ZFS it is 0.
 */
export function memoryFromSysctls(values: Record<string, string>): MemoryStats {
  const num = (name: string) => Number(values[name] ?? 0) || 0;
  const page = num('vm.stats.vm.v_page_size') || 4096;
  const mib = (bytes: number) => Math.floor(bytes / 1024 / 1024);
  const cachePages = num('vm.stats.vm.v_cache_count');
  return {
    active: mib(num('vm.stats.vm.v_active_count') * page),
    inactive: mib(num('vm.stats.vm.v_inactive_count') * page),
    cache: cachePages > 0 ? mib(cachePages * page) : mib(num('kstat.zfs.misc.arcstats.size')),
    free: mib(num('vm.stats.vm.v_free_count') * page),
    wired: mib(num('vm.stats.vm.v_wire_count') * page),
  };
}

/** `sysctl -n kern.cp_times`: user nice sys intr idle, five counters per CPU. */
export function parseCpTimes(text: string): CpuTicks[] {
  const f = text.trim().split(/\s+/).filter(Boolean).map(Number);
  const out: CpuTicks[] = [];
  for (let i = 0; i + 5 <= f.length; i += 5) {
    const [user = 0, nice = 0, sys = 0, intr = 0, idle = 0] = f.slice(i, i + 5);
    out.push({ idle, total: user + nice + sys + intr + idle });
  }
  return out;
}

/** `dev.cpu.N.temperature: 43.1C` lines of `sysctl dev.cpu` (coretemp/amdtemp; absent without them). */
export function parseCpuTemperatures(text: string): CpuTemperature[] {
  const out: CpuTemperature[] = [];
  for (const line of text.split('\n')) {
    const m = /^dev\.cpu\.(\d+)\.temperature: (-?\d+(?:\.\d+)?)C$/.exec(line.trim());
    if (m) out.push({ cpu: Number(m[1]), celsius: Number(m[2]) });
  }
  return out.sort((a, b) => a.cpu - b.cpu);
}

/** The argv for `procinfo`: the original's top(1) call (the C column is the CPU a process last ran on). */
export const TOP_ARGV = ['top', '-t', '-n', '-a', 'all'] as const;

/**
 * top(1) batch output. Columns are found from the header line (`PID USERNAME THR PRI NICE SIZE
 * RES STATE C TIME WCPU COMMAND`). STATE may hold a space (`zfs te`, truncated wait channels), so
 * a row is read from both ends: seven fields, then the first `NN.NN%` (WCPU) with C and TIME just
 * before it, and COMMAND is the rest of the line as printed.
 */
export function parseTop(text: string): ProcessEntry[] {
  const lines = text.split('\n');
  const header = lines.findIndex((l) => /\bPID\b/.test(l) && /\bUSERNAME\b/.test(l));
  if (header < 0) return [];
  const out: ProcessEntry[] = [];
  for (const line of lines.slice(header + 1)) {
    const lead = /^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+/.exec(line);
    if (!lead) continue;
    const rest = line.slice(lead[0].length);
    const tail = /^(.*?)\s+(\S+)\s+(\S+)\s+(\d+(?:\.\d+)?%)(?:\s(.*))?$/.exec(rest);
    if (!tail) continue;
    const [, pid, username, thr, pri, nice, size, res] = lead as unknown as string[];
    out.push({
      pid: Number(pid),
      username: username as string,
      thr: thr as string,
      pri: pri as string,
      nice: nice as string,
      size: size as string,
      res: res as string,
      state: (tail[1] as string).trim(),
      cpu: tail[2] as string,
      time: tail[3] as string,
      wcpu: tail[4] as string,
      command: (tail[5] ?? '').trim(),
    });
  }
  return out;
}

/**
 * `apm -alt`: three numbers, one a line (apm.c prints ai_acline, ai_batt_life, ai_batt_time).
 * AC line 0 off-line → `offline`, 1 on-line → `charging`, 2 backup power → `on backup` (the
 * original's mapping). A life outside 0..100 (255 = unknown: no battery reported) means no battery.
 */
export function parseApm(text: string): BatteryState {
  const [acline, life, time] = text.trim().split(/\s+/).map(Number);
  if (life === undefined || !Number.isInteger(life) || life < 0 || life > 100) return { present: false };
  const status = acline === 0 ? 'offline' : acline === 1 ? 'charging' : acline === 2 ? 'on backup' : 'unknown';
  return { present: true, level: life, status, secondsLeft: time !== undefined && Number.isFinite(time) && time >= 0 ? time : null };
}

/** `mount -p` (fstab format): device, mount point, type, options, dump, pass; `\040` is a space. */
export function parseMountP(text: string): Array<{ device: string; path: string; fsType: string }> {
  const unescapeOctal = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out: Array<{ device: string; path: string; fsType: string }> = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || (f[0] as string).startsWith('#')) continue;
    out.push({ device: unescapeOctal(f[0] as string), path: unescapeOctal(f[1] as string), fsType: f[2] as string });
  }
  return out;
}

/**
 * Device kind from the disk driver's name, as the original did: `da` (umass) USB, `ada`/`nvd`/`nda`/
 * `vtbd` disks HDRIVE, `cd` DVD, `mmcsd`/`sdda` SDCARD; labels (`gpt/…`, `msdosfs/…`) are UNKNOWN.
 */
export function freebsdMountType(device: string): MountType {
  const name = device.replace(/^\/dev\//, '');
  if (/^da\d/.test(name)) return 'USB';
  if (/^(ada|ad|nvd|nda|vtbd)\d/.test(name)) return 'HDRIVE';
  if (/^(cd|acd)\d/.test(name)) return 'DVD';
  if (/^(mmcsd|sdda)\d/.test(name)) return 'SDCARD';
  return 'UNKNOWN';
}

/** `ada0p2` → `ada0`, `da0s1a` → `da0`; labels have no disk. */
const diskOf = (device: string) => /^\/dev\/([a-z]+\d+)/.exec(device)?.[1] ?? null;

/**
 * `/dev/` mounts that are not the running system's: not `/`, not under `/boot`, and not on the
 * disk that holds `/` (a UFS root; a ZFS root is not a /dev mount at all).
 */
export function externalMountsFromMountP(text: string): ExternalMount[] {
  const mounts = parseMountP(text);
  const root = mounts.find((m) => m.path === '/');
  const systemDisk = root ? diskOf(root.device) : null;
  const out: ExternalMount[] = [];
  for (const m of mounts) {
    if (!m.device.startsWith('/dev/')) continue;
    if (m.path === '/' || m.path === '/boot' || m.path.startsWith('/boot/')) continue;
    if (systemDisk !== null && diskOf(m.device) === systemDisk) continue;
    out.push({ device: m.device, filesystem: m.fsType, path: m.path, type: freebsdMountType(m.device) });
  }
  return out;
}

/** `kern.boottime: { sec = 1789900651, usec = 837885 } Sun Sep 20 …` → epoch seconds. */
export function parseBoottime(value: string): number | null {
  const m = /sec = (\d+)/.exec(value);
  return m ? Number(m[1]) : null;
}
