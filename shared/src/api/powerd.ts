import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolString, keyedBy, noArgs, str } from './fields.ts';
import { atLeastOne, rangedNumber, trueString } from './fields-system.ts';

/** Power modes a `set_options` request may name (spec "Power daemon options"). */
export const POWER_MODES = ['maximum', 'hiadaptive', 'adaptive', 'minimum'] as const;
/** The mode list as `list_options` reports it: the original's options list spells the lowest mode `minumum`. */
export const POWER_MODES_LISTED = ['maximum', 'hiadaptive', 'adaptive', 'minumum'] as const;

/** A power mode; the listed spelling `minumum` is accepted and normalized to `minimum`. */
const powerMode = (description: string) =>
  z
    .enum([...POWER_MODES, 'minumum'])
    .transform((m): (typeof POWER_MODES)[number] => (m === 'minumum' ? 'minimum' : m))
    .describe(description);

/** `max_cpu_freq` / `min_cpu_freq`: greater than 0 per the spec; `-1` (the observed default, "no limit") is accepted too. */
const cpuFreq = (description: string) =>
  z
    .union([
      z.number().int('must be a whole number'),
      z
        .string()
        .regex(/^-?\d{1,12}$/, 'must be a whole number')
        .transform(Number),
    ])
    .refine((v) => v === -1 || v > 0, 'must be greater than 0, or -1 for no limit')
    .transform(String)
    .describe(description);

const PERCENT = { min: 1, max: 100, integer: true } as const;
const POLLING = { min: 1, integer: true } as const;

/** Option arguments of `set_options`; values are normalized to the strings written into the daemon's flags. */
const optionArgs = lazy(() => ({
  ac_power_mode: powerMode('Mode on AC power: `maximum`, `hiadaptive`, `adaptive` or `minimum`').optional(),
  battery_power_mode: powerMode('Mode on battery: `maximum`, `hiadaptive`, `adaptive` or `minimum`').optional(),
  unknown_power_mode: powerMode('Mode when the power source is unknown').optional(),
  adaptive_lower_threshold_percent: rangedNumber('CPU load percent below which adaptive modes lower the frequency, 1 to 100', PERCENT).optional(),
  adaptive_raise_threshold_percent: rangedNumber('CPU load percent above which adaptive modes raise the frequency, 1 to 100', PERCENT).optional(),
  max_cpu_freq: cpuFreq('Highest CPU frequency in Hz (greater than 0; -1 = no limit)').optional(),
  min_cpu_freq: cpuFreq('Lowest CPU frequency in Hz (greater than 0; -1 = no limit)').optional(),
  polling_interval_ms: rangedNumber('Polling interval in milliseconds, greater than 0', POLLING).optional(),
}));

/** What `list_options` reports: exactly the rules the `set_options` schema above enforces. */
export const POWERD_OPTION_RULES: { readonly [K in keyof ReturnType<typeof optionArgs>]: string | string[] } = {
  ac_power_mode: [...POWER_MODES_LISTED],
  battery_power_mode: [...POWER_MODES_LISTED],
  unknown_power_mode: [...POWER_MODES_LISTED],
  adaptive_lower_threshold_percent: `int min=${PERCENT.min} max=${PERCENT.max}`,
  adaptive_raise_threshold_percent: `int min=${PERCENT.min} max=${PERCENT.max}`,
  max_cpu_freq: 'int Hz min=1 (-1 = no limit)',
  min_cpu_freq: 'int Hz min=1 (-1 = no limit)',
  polling_interval_ms: `int min=${POLLING.min}`,
};

/** Power daemon options as `read_options` / `set_options` report them (all strings). */
export const powerdOptionsRecord = lazy(() =>
  z
    .object({
      ac_power_mode: str('Mode on AC power (default `adaptive`)'),
      battery_power_mode: str('Mode on battery (default `adaptive`)'),
      unknown_power_mode: str('Mode when the power source is unknown (default `adaptive`)'),
      adaptive_lower_threshold_percent: str('Lower load threshold in percent (default `50`)'),
      adaptive_raise_threshold_percent: str('Raise load threshold in percent (default `75`)'),
      max_cpu_freq: str('Highest CPU frequency in Hz, `-1` = no limit (default)'),
      min_cpu_freq: str('Lowest CPU frequency in Hz, `-1` = no limit (default)'),
      polling_interval_ms: str('Polling interval in milliseconds (default `250`)'),
    })
    .describe('Power daemon options'),
);

export type PowerdOptions = z.infer<ReturnType<typeof powerdOptionsRecord>>;

/** The options a power daemon starts with when nothing is configured (powerd(8)'s defaults). */
export const POWERD_DEFAULTS: PowerdOptions = {
  ac_power_mode: 'adaptive',
  battery_power_mode: 'adaptive',
  unknown_power_mode: 'adaptive',
  adaptive_lower_threshold_percent: '50',
  adaptive_raise_threshold_percent: '75',
  max_cpu_freq: '-1',
  min_cpu_freq: '-1',
  polling_interval_ms: '250',
};

/** `list_status`: whether the daemon starts at boot and whether it runs. */
export const powerdStatusRecord = lazy(() =>
  z
    .object({
      enabled: boolString('`true` when the daemon starts at boot'),
      running: boolString('`true` when the daemon runs now'),
    })
    .describe('Power daemon status'),
);

export const powerd = defineClass({
  namespace: 'admin',
  name: 'powerd',
  description: 'Power-management daemon: options, status, start/stop, boot setting',
  limitedAccess: 'read',
  actions: {
    list_options: action({
      description: 'List the options and their allowed values or ranges',
      args: noArgs,
      reply: () =>
        z
          .object({
            list_options: keyedBy(
              'Option name',
              z
                .union([z.array(z.string()).describe('Allowed values'), str('Type description, for example `int min=1 max=100`')])
                .describe('Allowed values or a type description'),
              'Options keyed by name',
            ),
          })
          .describe('Option descriptions'),
      access: 'read',
    }),
    list_status: action({
      description: 'Report whether the daemon runs and whether it starts at boot',
      args: noArgs,
      reply: () => z.object({ list_status: powerdStatusRecord() }).describe('Daemon status'),
      access: 'read',
    }),
    read_options: action({
      description: 'Read the current options',
      args: noArgs,
      reply: () => z.object({ read_options: powerdOptionsRecord() }).describe('Current options'),
      access: 'read',
    }),
    set_active: action({
      description: 'Start the daemon at boot',
      args: noArgs,
      reply: () => z.object({ set_active: z.object({ enabled: trueString('Always `true`') }).describe('Enabled at boot') }).describe('Enabled at boot'),
      access: 'write',
    }),
    set_inactive: action({
      description: 'Do not start the daemon at boot',
      args: noArgs,
      reply: () => z.object({ set_inactive: z.object({ disabled: trueString('Always `true`') }).describe('Disabled at boot') }).describe('Disabled at boot'),
      access: 'write',
    }),
    set_options: action({
      description: 'Change one or more options (restarts the daemon when running)',
      args: () =>
        z.strictObject(optionArgs()).refine(atLeastOne(Object.keys(optionArgs())), {
          message: `at least one option is required: ${Object.keys(optionArgs()).join(', ')}`,
        }),
      reply: () => z.object({ set_options: powerdOptionsRecord() }).describe('All options after the change'),
      access: 'write',
    }),
    start: action({
      description: 'Start the daemon',
      args: noArgs,
      // spec: `{started: true}`; the original sent the string and `false` when the start failed.
      reply: () => z.object({ start: z.object({ started: boolString('`true` when the daemon started') }).describe('Start result') }).describe('Start result'),
      access: 'write',
    }),
    stop: action({
      description: 'Stop the daemon',
      args: noArgs,
      reply: () => z.object({ stop: z.object({ stopped: boolString('`true` when the daemon stopped') }).describe('Stop result') }).describe('Stop result'),
      access: 'write',
    }),
  },
});
