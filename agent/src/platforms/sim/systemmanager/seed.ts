/**
 * The simulated host's starting point: a FreeBSD 14.1 amd64 laptop (4 CPUs, 8 GiB) as top(1) and
 * sysctl(8) would show it right after boot.
 */
import type { ProcessEntry } from '../../ports/systemmanager.ts';

export interface SimSysctl {
  value: string;
  writable: boolean;
  kind: 'int' | 'string';
}

export interface SimSystemState {
  /** Epoch ms of the last (simulated) boot. */
  bootedAt: number;
  /** `halted` after `halt`: the sim keeps answering, as a console would show the halted state. */
  power: 'running' | 'halted';
  lastPowerAction: { action: 'halt' | 'reboot'; at: number } | null;
  /** Keyed by PID. */
  processes: Record<string, ProcessEntry>;
  sysctls: Record<string, SimSysctl>;
}

export const SIM_CPUS = 4;
export const SIM_TOTAL_MEM_MIB = 8192;
/** The agent's own process in the simulated table (never signalled, like on a real host). */
export const SIM_AGENT_PID = 1337;

export const SIM_INFO = {
  arch: 'amd64',
  cpuType: 'Intel(R) Core(TM) i5-7200U CPU @ 2.50GHz',
  kernelIdent: 'GENERIC',
  kernelVersion: '14.1-RELEASE-p5',
  systemVersion: '14.1-RELEASE-p6',
} as const;

function proc(pid: number, username: string, size: string, res: string, state: string, command: string, extra: Partial<ProcessEntry> = {}): ProcessEntry {
  return { pid, username, thr: '1', pri: '20', nice: '0', size, res, state, cpu: String(pid % SIM_CPUS), time: '0:00', wcpu: '0.00%', command, ...extra };
}

export function seedProcesses(): Record<string, ProcessEntry> {
  const list = [
    proc(1, 'root', '11M', '1056K', 'wait', '/sbin/init', { pri: '52', time: '0:01' }),
    proc(412, 'root', '13M', '2812K', 'select', '/sbin/devd', { time: '0:02' }),
    proc(598, 'root', '13M', '2716K', 'select', '/usr/sbin/syslogd -s', { time: '0:05' }),
    proc(655, 'root', '13M', '2312K', 'nanslp', '/usr/sbin/powerd', { time: '0:32' }),
    proc(702, 'ntpd', '21M', '5452K', 'select', '/usr/sbin/ntpd -p /var/db/ntp/ntpd.pid -c /etc/ntp.conf -f /var/db/ntp/ntpd.drift', { time: '0:14' }),
    proc(741, 'root', '13M', '2544K', 'select', '/usr/sbin/moused -p /dev/psm0 -t auto'),
    proc(785, 'root', '21M', '9420K', 'select', '/usr/sbin/sshd'),
    proc(812, 'root', '13M', '2728K', 'nanslp', '/usr/sbin/cron -s', { time: '0:03' }),
    proc(860, 'root', '13M', '2460K', 'ttyin', '/usr/libexec/getty Pc ttyv1', { pri: '52' }),
    proc(861, 'root', '13M', '2460K', 'ttyin', '/usr/libexec/getty Pc ttyv2', { pri: '52' }),
    proc(SIM_AGENT_PID, 'root', '1103M', '86M', 'uwait', '/usr/local/bin/node /usr/local/libexec/hostadm/agent --platform freebsd', {
      thr: '11',
      time: '1:47',
      wcpu: '0.21%',
    }),
    proc(2204, 'admin', '21M', '10M', 'select', 'sshd: admin@pts/0 (sshd)'),
    proc(2206, 'admin', '14M', '3988K', 'pause', '-sh (sh)'),
  ];
  return Object.fromEntries(list.map((p) => [String(p.pid), p]));
}

const rw = (value: string, kind: SimSysctl['kind'] = 'int'): SimSysctl => ({ value, writable: true, kind });
const ro = (value: string, kind: SimSysctl['kind'] = 'int'): SimSysctl => ({ value, writable: false, kind });

/** A slice of a FreeBSD 14 sysctl tree: common tunables (writable) and identity values (read-only). */
export function seedSysctls(): Record<string, SimSysctl> {
  return {
    'kern.ipc.maxsockbuf': rw('2097152'),
    'kern.ipc.soacceptqueue': rw('128'),
    'kern.maxfiles': rw('260942'),
    'kern.maxfilesperproc': rw('234819'),
    'kern.coredump': rw('1'),
    'kern.corefile': rw('%N.core', 'string'),
    'kern.securelevel': rw('-1'),
    'net.inet.ip.forwarding': rw('0'),
    'net.inet6.ip6.forwarding': rw('0'),
    'net.inet.tcp.blackhole': rw('0'),
    'net.inet.udp.blackhole': rw('0'),
    'net.inet.tcp.sendspace': rw('32768'),
    'net.inet.tcp.recvspace': rw('65536'),
    'vfs.usermount': rw('0'),
    'security.bsd.see_other_uids': rw('1'),
    'hw.snd.default_unit': rw('0'),
    'kern.ostype': ro('FreeBSD', 'string'),
    'kern.osrelease': ro(SIM_INFO.kernelVersion, 'string'),
    'kern.maxproc': ro('15044'),
    'hw.ncpu': ro(String(SIM_CPUS)),
    'hw.model': ro(SIM_INFO.cpuType, 'string'),
    'hw.realmem': ro(String(SIM_TOTAL_MEM_MIB * 1024 * 1024)),
    'vm.stats.vm.v_page_size': ro('4096'),
  };
}

export function seedSystem(now: number): SimSystemState {
  return {
    // Up for a while already, like a machine someone has just logged into.
    bootedAt: now - (2 * 86_400 + 5 * 3600 + 9 * 60) * 1000,
    power: 'running',
    lastPowerAction: null,
    processes: seedProcesses(),
    sysctls: seedSysctls(),
  };
}
