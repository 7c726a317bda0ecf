/**
 * Pure parsers for what Linux prints in /proc and what its tools print. No I/O here, so the tests
 * can feed them real samples.
 */
import type { ExternalMount, MemoryStats, MountType, ProcessEntry } from '../../ports/systemmanager.ts';
import type { CpuTicks } from '../../common/cpu-sampler.ts';
import { formatCpuTime, formatKiB } from '../../common/top-format.ts';

/** `/proc/meminfo` as kB numbers by field name. */
export function parseMeminfo(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_()]+):\s+(\d+)/.exec(line);
    if (m) out[m[1] as string] = Number(m[2]);
  }
  return out;
}

/**
 * FreeBSD's memory queues mapped onto Linux's counters (MiB):
 * active = Active, inactive = Inactive, cache = Cached (page cache), free = MemFree, and
 * wired = what can be neither paged out nor reclaimed: Unevictable (which already contains
 * Mlocked, so Mlocked is not added again) + SUnreclaim + KernelStack + PageTables.
 */
export function memoryFromMeminfo(info: Record<string, number>): MemoryStats {
  const mib = (kb: number | undefined) => Math.floor((kb ?? 0) / 1024);
  const wiredKb = (info.Unevictable ?? 0) + (info.SUnreclaim ?? 0) + (info.KernelStack ?? 0) + (info.PageTables ?? 0);
  return { active: mib(info.Active), inactive: mib(info.Inactive), cache: mib(info.Cached), free: mib(info.MemFree), wired: mib(wiredKb) };
}

/**
 * Per-CPU ticks from `/proc/stat` (`cpuN user nice system idle iowait irq softirq steal guest
 * guest_nice`). Idle counts iowait too; guest time is already inside user/nice, so it is not added.
 */
export function parseProcStat(text: string): CpuTicks[] {
  const cpus: Array<{ n: number; ticks: CpuTicks }> = [];
  for (const line of text.split('\n')) {
    const m = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const f = (m[2] as string).trim().split(/\s+/).map(Number);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
    cpus.push({ n: Number(m[1]), ticks: { idle: idle + iowait, total: user + nice + system + idle + iowait + irq + softirq + steal } });
  }
  return cpus.sort((a, b) => a.n - b.n).map((c) => c.ticks);
}

/** The argv the Linux port runs for `procinfo`, in top(1)'s column order; `args` last (it has spaces). */
export const PS_ARGV = ['ps', '-e', '-ww', '--no-headers', '-o', 'pid=,user:32=,nlwp=,pri=,ni=,vsz=,rss=,stat=,psr=,times=,pcpu=,args='] as const;

/**
 * `ps` lines into top(1)-style records: sizes in K/M/G, CPU time as `M:SS`, `%` on the CPU share.
 * The state is ps's STAT letters (`Ss`, `R+`), Linux's own notion of it.
 */
export function parsePs(text: string): ProcessEntry[] {
  const out: ProcessEntry[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s?(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, user, nlwp, pri, ni, vsz, rss, stat, psr, times, pcpu, args] = m as unknown as string[];
    out.push({
      pid: Number(pid),
      username: user as string,
      thr: nlwp as string,
      pri: pri as string,
      nice: ni as string,
      size: formatKiB(Number(vsz)),
      res: formatKiB(Number(rss)),
      state: stat as string,
      cpu: psr as string,
      time: formatCpuTime(Number(times)),
      wcpu: `${Number(pcpu).toFixed(2)}%`,
      command: (args as string).trim(),
    });
  }
  return out;
}

/** Seconds since boot from `/proc/uptime`. */
export function parseUptime(text: string): number {
  const first = Number(text.trim().split(/\s+/)[0]);
  return Number.isFinite(first) ? first : 0;
}

/** Model name and logical CPU count from `/proc/cpuinfo` (x86 `model name`; ARM `Hardware`/`Model`). */
export function parseCpuinfo(text: string): { model: string | null; count: number } {
  let model: string | null = null;
  let count = 0;
  for (const line of text.split('\n')) {
    const m = /^([^:]+?)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    const key = (m[1] as string).toLowerCase();
    if (key === 'processor' && /^\d+$/.test(m[2] as string)) count++;
    if (model === null && (key === 'model name' || key === 'cpu model' || key === 'hardware' || key === 'model') && m[2]) model = m[2] as string;
  }
  return { model, count };
}

/** PRETTY_NAME from /etc/os-release (or NAME VERSION), unquoted. */
export function parseOsRelease(text: string): string | null {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) fields[m[1] as string] = (m[2] as string).replace(/^(["'])(.*)\1$/, '$2');
  }
  if (fields.PRETTY_NAME) return fields.PRETTY_NAME;
  if (fields.NAME) return [fields.NAME, fields.VERSION].filter(Boolean).join(' ');
  return null;
}

export interface MountinfoEntry {
  majMin: string;
  root: string;
  mountPoint: string;
  fsType: string;
  source: string;
}

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
const unescapeOctal = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** `/proc/<pid>/mountinfo`: `id parent maj:min root mountpoint opts [optional...] - fstype source superopts`. */
export function parseMountinfo(text: string): MountinfoEntry[] {
  const out: MountinfoEntry[] = [];
  for (const line of text.split('\n')) {
    const parts = line.split(' ');
    const dash = parts.indexOf('-');
    if (dash < 6 || parts.length < dash + 3) continue;
    out.push({
      majMin: parts[2] as string,
      root: unescapeOctal(parts[3] as string),
      mountPoint: unescapeOctal(parts[4] as string),
      fsType: parts[dash + 1] as string,
      source: unescapeOctal(parts[dash + 2] as string),
    });
  }
  return out;
}

interface LsblkNode {
  name?: unknown;
  path?: unknown;
  'maj:min'?: unknown;
  rm?: unknown;
  tran?: unknown;
  type?: unknown;
  children?: unknown;
}

export interface BlockDevice {
  path: string;
  majMin: string;
  type: string;
  /** From the device itself up to its top-level disk. */
  chain: Array<{ name: string; type: string; tran: string | null; removable: boolean }>;
}

/** The argv the Linux port runs to learn what kind of device backs each mount. */
export const LSBLK_ARGV = ['lsblk', '-J', '-o', 'NAME,PATH,MAJ:MIN,RM,TRAN,TYPE'] as const;

/** `lsblk -J` (a tree) flattened, each device knowing its chain of parents. */
export function parseLsblk(json: string): BlockDevice[] {
  const doc = JSON.parse(json) as { blockdevices?: LsblkNode[] };
  const out: BlockDevice[] = [];
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  // util-linux before 2.33 printed booleans as "0"/"1".
  const bool = (v: unknown) => v === true || v === '1' || v === 1;
  const walk = (node: LsblkNode, parents: BlockDevice['chain']) => {
    const self = { name: str(node.name), type: str(node.type), tran: str(node.tran) || null, removable: bool(node.rm) };
    const chain = [self, ...parents];
    out.push({ path: str(node.path) || `/dev/${self.name}`, majMin: str(node['maj:min']), type: self.type, chain });
    if (Array.isArray(node.children)) for (const child of node.children as LsblkNode[]) walk(child, chain);
  };
  for (const top of doc.blockdevices ?? []) walk(top, []);
  return out;
}

/**
 * USB anywhere below it → USB; an MMC/SD reader or a removable medium → SDCARD; an optical drive →
 * DVD; another disk → HDRIVE; loop, RAM and other virtual devices → UNKNOWN.
 */
export function mountTypeOf(dev: BlockDevice): MountType {
  const top = dev.chain[dev.chain.length - 1];
  if (dev.chain.some((d) => d.tran === 'usb')) return 'USB';
  if (dev.chain.some((d) => d.tran === 'mmc' || d.name.startsWith('mmcblk'))) return 'SDCARD';
  if (dev.chain.some((d) => d.type === 'rom')) return 'DVD';
  if (top && top.type === 'disk') return top.removable ? 'SDCARD' : 'HDRIVE';
  return 'UNKNOWN';
}

const SYSTEM_MOUNT = (path: string) => path === '/' || path === '/boot' || path.startsWith('/boot/');

/**
 * Mounted block devices that are not part of the running system: bind mounts (root other than
 * `/`), the system mount points (`/`, `/boot…`) and everything on the disk that holds `/` are left
 * out; pseudo file systems never match a block device.
 */
export function externalMountsFrom(mounts: readonly MountinfoEntry[], devices: readonly BlockDevice[]): ExternalMount[] {
  const byMajMin = new Map(devices.map((d) => [d.majMin, d]));
  const rootMount = mounts.find((m) => m.mountPoint === '/');
  const rootDev = rootMount ? byMajMin.get(rootMount.majMin) : undefined;
  const systemDisk = rootDev?.chain[rootDev.chain.length - 1]?.name;
  const out: ExternalMount[] = [];
  const seen = new Set<string>();
  for (const m of mounts) {
    const dev = byMajMin.get(m.majMin);
    if (!dev || m.root !== '/' || SYSTEM_MOUNT(m.mountPoint)) continue;
    if (systemDisk !== undefined && dev.chain.some((d) => d.name === systemDisk)) continue;
    const device = m.source.startsWith('/dev/') ? m.source : dev.path;
    if (seen.has(device)) continue; // mounted twice: the first mount point is its home
    seen.add(device);
    out.push({ device, filesystem: m.fsType, path: m.mountPoint, type: mountTypeOf(dev) });
  }
  return out;
}

/** `sysctl -a` (`name = value`); tabs between a value's numbers become spaces, as FreeBSD prints them. */
export function parseSysctlAll(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(' = ');
    if (i <= 0) continue;
    out[line.slice(0, i)] = line.slice(i + 3).replace(/\t/g, ' ');
  }
  return out;
}

/** `/proc/sys/net/ipv4/conf/eth0.10/forwarding` → `net.ipv4.conf.eth0/10.forwarding` (sysctl(8)'s naming). */
export function sysctlNameFromPath(path: string): string | null {
  const m = /^\/proc\/sys\/(.+)$/.exec(path.trim());
  if (!m) return null;
  return (m[1] as string)
    .split('/')
    .map((c) => c.replace(/\./g, '/'))
    .join('.');
}

/** The inverse, for names the contract allows (no `/` in them). */
export function sysctlPath(name: string): string {
  return `/proc/sys/${name.split('.').join('/')}`;
}
