import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { keyedBy, noArgs, str } from './fields.ts';
import { pidArg, sysctlName, sysctlValue, trueString } from './fields-system.ts';

/** Signals `killproc` may send (spec). */
export const KILL_SIGNALS = ['INT', 'QUIT', 'ABRT', 'KILL', 'ALRM', 'TERM'] as const;

/** External mount types. */
export const MOUNT_TYPES = ['UNKNOWN', 'USB', 'HDRIVE', 'DVD', 'SDCARD'] as const;

/** Battery states. */
export const BATTERY_STATUSES = ['offline', 'charging', 'on backup', 'unknown'] as const;

/** System information (`systemmanager`). */
export const systemInfoRecord = lazy(() =>
  z
    .object({
      arch: str('Machine architecture, for example `amd64`'),
      cpucores: str('Number of CPUs'),
      cputype: str('CPU model'),
      hostname: str('Host name'),
      kernelident: str('Kernel configuration name'),
      kernelversion: str('Kernel release'),
      systemversion: str('Operating-system version'),
      totalmem: z.number().describe('Physical memory in MiB (a number)'),
      uptime: str('Uptime text, for example `up 2 days 5:09`'),
    })
    .describe('System information'),
);

/** Memory statistics (`memorystats`). */
// spec: unit not shown — chosen: MiB, as the original (page count x page size / 1024 / 1024).
export const memoryStatsRecord = lazy(() =>
  z
    .object({
      active: str('Active memory, MiB'),
      cache: str('Cached memory, MiB'),
      free: str('Free memory, MiB'),
      inactive: str('Inactive memory, MiB'),
      wired: str('Wired memory, MiB'),
    })
    .describe('Memory statistics in MiB (numbers as strings)'),
);

const CPU_KEY = /^cpu\d+$/;

/** CPU usage (`cpupercentage`): `busytotal` plus one `cpu<N>` entry per CPU. */
export const cpuPercentageRecord = lazy(() =>
  z
    .object({ busytotal: str('Busy percentage of all CPUs together') })
    .catchall(z.object({ busy: str('Busy percentage of this CPU') }).describe('One CPU, key `cpu<N>`'))
    .superRefine((v, ctx) => {
      for (const k of Object.keys(v)) {
        if (k !== 'busytotal' && !CPU_KEY.test(k)) ctx.addIssue({ code: 'custom', message: 'keys must be `busytotal` or `cpu<N>`', path: [k] });
      }
    })
    .describe('CPU usage: `busytotal` and one `cpu<N>` entry per CPU'),
);

/** Process (`procinfo`, keyed by PID). */
export const processRecord = lazy(() =>
  z
    .object({
      command: str('Command line'),
      cpu: str('CPU the process last ran on'),
      nice: str('Nice value'),
      pri: str('Priority'),
      res: str('Resident memory size'),
      size: str('Virtual memory size'),
      state: str('Process state'),
      thr: str('Number of threads'),
      time: str('CPU time used'),
      username: str('Owner'),
      wcpu: str('Weighted CPU percentage'),
    })
    .describe('A process'),
);

/**
 * Battery (`batteryinfo`).
 * spec: not shown — chosen: the original's names `level` (charge percent 1 to 99, string; absent when unknown), `status`
 * (`offline`, `charging`, `on backup`, `unknown`) and `timeleft` (seconds as a string, `-1` when unknown).
 */
export const batteryRecord = lazy(() =>
  z
    .discriminatedUnion('battery', [
      z.object({ battery: z.literal('false').describe('No battery') }).describe('No battery present'),
      z
        .object({
          battery: z.literal('true').describe('A battery exists'),
          level: str('Charge percentage, 1 to 99 (a full battery reads 99); absent when the host cannot tell').optional(),
          status: z.enum(BATTERY_STATUSES).describe('`offline`, `charging`, `on backup` or `unknown`'),
          timeleft: str('Estimated seconds left (`-1` when unknown)'),
        })
        .describe('A battery is present'),
    ])
    .describe('Battery state'),
);

/** External mount (`externalmounts`, keyed by device name). */
export const externalMountRecord = lazy(() =>
  z
    .object({
      filesystem: str('File system type, for example `msdosfs`'),
      path: str('Mount point'),
      type: z.enum(MOUNT_TYPES).describe('Device kind: `UNKNOWN`, `USB`, `HDRIVE`, `DVD` or `SDCARD`'),
    })
    .describe('A mounted external device'),
);

const responseTrue = (description: string) => z.object({ response: trueString('Always `true`') }).describe(description);

export const systemmanager = defineClass({
  namespace: 'admin',
  name: 'systemmanager',
  description: 'System information, processes, sysctl, halt and reboot',
  limitedAccess: 'read',
  actionAliases: { systeminfo: 'systemmanager' },
  actions: {
    memorystats: action({
      description: 'Report memory statistics',
      args: noArgs,
      reply: () => z.object({ memorystats: memoryStatsRecord() }).describe('Memory statistics'),
      access: 'read',
    }),
    cpupercentage: action({
      description: 'Report CPU usage per CPU and in total',
      args: noArgs,
      reply: () => z.object({ cpupercentage: cpuPercentageRecord() }).describe('CPU usage'),
      access: 'read',
    }),
    cputemps: action({
      description: 'Report CPU temperatures',
      args: noArgs,
      reply: () =>
        z
          .object({
            cputemps: keyedBy('CPU, `cpu<N>`', str('Temperature, for example `45.0C`'), 'Temperatures keyed by CPU'),
          })
          .describe('CPU temperatures'),
      access: 'read',
    }),
    procinfo: action({
      description: 'List processes',
      args: noArgs,
      reply: () => z.object({ procinfo: keyedBy('Process id', processRecord(), 'Processes keyed by PID') }).describe('Processes'),
      access: 'read',
    }),
    killproc: action({
      description: 'Send a signal to a process',
      args: () =>
        z.strictObject({
          pid: pidArg('Process id (a positive whole number, as a string or a number)'),
          signal: z.enum(KILL_SIGNALS).describe('Signal: `INT`, `QUIT`, `ABRT`, `KILL`, `ALRM` or `TERM`'),
        }),
      reply: () =>
        z
          .object({
            killproc: z
              .object({
                action: str('Always `killproc`'),
                pid: str('The process id'),
                signal: str('The signal sent'),
              })
              .describe('Echo of the request'),
          })
          .describe('Signal sent'),
      access: 'full',
    }),
    batteryinfo: action({
      description: 'Report the battery state',
      args: noArgs,
      reply: () => z.object({ batteryinfo: batteryRecord() }).describe('Battery state'),
      access: 'read',
    }),
    externalmounts: action({
      description: 'List mounted external devices',
      args: noArgs,
      reply: () => z.object({ externalmounts: keyedBy('Device path', externalMountRecord(), 'Mounts keyed by device') }).describe('External mounts'),
      access: 'read',
    }),
    systemmanager: action({
      description: 'Report system information',
      args: noArgs,
      reply: () => z.object({ systemmanager: systemInfoRecord() }).describe('System information'),
      access: 'read',
    }),
    sysctllist: action({
      description: 'List all configurable sysctl names with their current values',
      args: noArgs,
      reply: () => z.object({ sysctllist: keyedBy('Sysctl name', str('Current value'), 'Values keyed by sysctl name') }).describe('Sysctl values'),
      access: 'read',
    }),
    setsysctl: action({
      description: 'Set a sysctl value',
      args: () =>
        z.strictObject({
          sysctl: sysctlName('Sysctl name, for example `kern.ipc.maxsockbuf`'),
          value: sysctlValue('New value (a string or a number)'),
        }),
      reply: () =>
        z
          .object({
            setsysctl: z
              .object({
                response: str('`<name>: <old> -> <new>`'),
                sysctl: str('The sysctl name'),
                value: str('The new value'),
              })
              .describe('Change made'),
          })
          .describe('Sysctl changed'),
      access: 'full',
    }),
    halt: action({
      description: 'Shut the system down and power it off',
      args: noArgs,
      reply: () => z.object({ halt: responseTrue('Shutdown started') }).describe('Shutdown started'),
      access: 'full',
    }),
    reboot: action({
      description: 'Reboot the system',
      args: noArgs,
      reply: () => z.object({ reboot: responseTrue('Reboot started') }).describe('Reboot started'),
      access: 'full',
    }),
  },
});
