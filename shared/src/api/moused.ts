import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolArg, boolString, keyedBy, noArgs, safeName, str } from './fields.ts';
import { atLeastOne, rangedNumber } from './fields-system.ts';

export const HAND_MODES = ['left', 'right'] as const;
export const RESOLUTIONS = ['low', 'medium-low', 'medium-high', 'high'] as const;

const deviceName = lazy(() => safeName('Pointer device name, for example `psm0` or `ums0`'));

/** Pointer device (`list_devices`, keyed by device name). */
export const pointerDeviceRecord = lazy(() =>
  z
    .object({
      description: str('Device description'),
      device: str('Device name'),
      driver: str('Driver name'),
      parent: str('Parent bus device'),
      active: boolString('`true` when a mouse daemon serves the device (present on some entries)').optional(),
    })
    .describe('A pointer device'),
);

const ACCEL_EXPONENTIAL = { min: 1, max: 2, integer: false } as const;
const ACCEL_LINEAR = { min: 0.01, max: 100, integer: false } as const;
const DRIFT = { min: 0, max: 1000, integer: true } as const;

/** Option arguments of `set_device_options` (spec "Pointer device options"); values normalized to strings. */
const optionArgs = lazy(() => ({
  accel_exponential: rangedNumber('Exponential acceleration, 1.0 to 2.0', ACCEL_EXPONENTIAL).optional(),
  accel_linear: rangedNumber('Linear acceleration, 0.01 to 100.00', ACCEL_LINEAR).optional(),
  emulate_button_3: boolArg('Emulate the middle button by pressing both buttons').optional(),
  hand_mode: z.enum(HAND_MODES).describe('`left` swaps the buttons, `right` is the default').optional(),
  resolution: z.enum(RESOLUTIONS).describe('Resolution: `low`, `medium-low`, `medium-high` or `high`').optional(),
  terminate_drift_threshold_pixels: rangedNumber('Drift termination threshold in pixels, 0 to 1000', DRIFT).optional(),
  virtual_scrolling: boolArg('Scroll by moving with the middle button held').optional(),
}));

/** What `list_device_options` reports: exactly the rules the `set_device_options` schema above enforces. */
export const MOUSED_OPTION_RULES: { readonly [K in keyof ReturnType<typeof optionArgs>]: string | string[] } = {
  accel_exponential: 'float min=1.0 max=2.0',
  accel_linear: 'float min=0.01 max=100.00',
  emulate_button_3: ['true', 'false'],
  hand_mode: [...HAND_MODES],
  resolution: [...RESOLUTIONS],
  terminate_drift_threshold_pixels: `int min=${DRIFT.min} max=${DRIFT.max}`,
  virtual_scrolling: ['true', 'false'],
};

/** Pointer device options as `read_device_options` / `set_device_options` report them (strings), plus `device`. */
export const pointerOptionsRecord = lazy(() =>
  z
    .object({
      accel_exponential: str('Exponential acceleration (default `1.0`)'),
      accel_linear: str('Linear acceleration (default `1.0`)'),
      emulate_button_3: boolString('Middle-button emulation'),
      hand_mode: str('`left` or `right`'),
      resolution: str('`low`, `medium-low` (default), `medium-high` or `high`'),
      terminate_drift_threshold_pixels: str('Drift termination threshold in pixels (default `0`)'),
      virtual_scrolling: boolString('Virtual scrolling'),
      device: str('Device name'),
    })
    .describe('Pointer device options'),
);

export type PointerOptions = Omit<z.infer<ReturnType<typeof pointerOptionsRecord>>, 'device'>;
export type PointerDevice = z.infer<ReturnType<typeof pointerDeviceRecord>>;

/** moused(8)'s behaviour with no flags. */
export const POINTER_DEFAULTS: PointerOptions = {
  accel_exponential: '1.0',
  accel_linear: '1.0',
  emulate_button_3: 'false',
  hand_mode: 'right',
  resolution: 'medium-low',
  terminate_drift_threshold_pixels: '0',
  virtual_scrolling: 'false',
};

const optionDescriptions = lazy(() =>
  keyedBy(
    'Option name',
    z
      .union([z.array(z.string()).describe('Allowed values'), str('Range description, for example `float min=1.0 max=2.0`')])
      .describe('Allowed values or a range description'),
    'Options keyed by name',
  ),
);

export const moused = defineClass({
  namespace: 'admin',
  name: 'moused',
  description: 'Pointer devices: list, activate, options',
  limitedAccess: 'read',
  actions: {
    list_devices: action({
      description: 'List pointer devices',
      args: noArgs,
      reply: () => z.object({ list_devices: keyedBy('Device name', pointerDeviceRecord(), 'Pointer devices keyed by name') }).describe('Pointer devices'),
      access: 'read',
    }),
    list_devices_active: action({
      description: 'List pointer devices served by a mouse daemon',
      args: noArgs,
      reply: () =>
        z
          .object({
            list_devices_active: z.object({ active_devices: z.array(z.string()).describe('Active device names') }).describe('Active devices'),
          })
          .describe('Active devices'),
      access: 'read',
    }),
    list_device_options: action({
      description: 'List the device options and their allowed values or ranges',
      args: noArgs,
      reply: () => z.object({ list_device_options: optionDescriptions() }).describe('Option descriptions'),
      access: 'read',
    }),
    read_device_options: action({
      description: 'Read the current options of a device',
      args: () => z.strictObject({ device: deviceName() }),
      reply: () => z.object({ read_device_options: pointerOptionsRecord() }).describe('Current options'),
      access: 'read',
    }),
    set_device_active: action({
      description: 'Start the mouse daemon for a device',
      args: () => z.strictObject({ device: deviceName() }),
      reply: () => z.object({ set_device_active: z.object({ started: str('The device name') }).describe('Started device') }).describe('Started device'),
      access: 'write',
    }),
    set_device_inactive: action({
      description: 'Stop the mouse daemon for a device',
      args: () => z.strictObject({ device: deviceName() }),
      reply: () => z.object({ set_device_inactive: z.object({ stopped: str('The device name') }).describe('Stopped device') }).describe('Stopped device'),
      access: 'write',
    }),
    set_device_options: action({
      description: 'Change one or more options of a device (restarts its mouse daemon)',
      args: () =>
        z.strictObject({ device: deviceName(), ...optionArgs() }).refine(atLeastOne(Object.keys(optionArgs())), {
          message: `at least one option is required: ${Object.keys(optionArgs()).join(', ')}`,
        }),
      reply: () => z.object({ set_device_options: pointerOptionsRecord() }).describe('All options after the change'),
      access: 'write',
    }),
  },
});
