import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolArg, keyedBy, noArgs, oneOrMany, queuedAck, resultSuccess, safeName, str } from './fields.ts';
import { atLeastOne, rangedNumber, requiredToken, urlString } from './fields-system.ts';

/**
 * `checkupdates` status values. The spec shows only `updatesavailable`; the others are the original's
 * (`noupdates`, `checkingforupdates`, `updaterunning`, `rebootrequired`) plus `checkfailed`, which this
 * implementation adds so that a failed check (no network, tool missing) is not reported as `noupdates`
 * (trueos-core#229, #334/#338).
 */
export const UPDATE_STATUSES = ['noupdates', 'updatesavailable', 'checkingforupdates', 'updaterunning', 'rebootrequired', 'checkfailed'] as const;

export const UPDATE_TARGETS = ['chbranch', 'pkgupdate', 'standalone'] as const;

const PATCH_KEY = /^patch\d+$/;

/** One system patch, reported under `patch<N>`. */
export const patchRecord = lazy(() =>
  z
    .object({
      name: str('Patch name'),
      tag: str('Update name to pass as `tag` to `startupdate` with target `standalone`'),
      details: str('Patch description'),
      date: str('Release date'),
      size: str('Download size'),
    })
    .describe('A system patch (key `patch<N>`)'),
);

/**
 * `checkupdates` = `{status, details}` (spec). The spec says an available update is reported as a security
 * update, an operating-system upgrade, a system patch or a software package update without naming fields;
 * chosen: the original's optional keys `security`, `majorupgrade`, `patch<N>` and `packageupdate`.
 */
export const updateCheckRecord = lazy(() =>
  z
    .object({
      status: z.enum(UPDATE_STATUSES).describe('Check state; `updatesavailable` when something can be installed'),
      details: str('Full text of the last check (or of the staged update when a reboot is required)'),
      security: z
        .object({ name: str('Update name') })
        .describe('A security update is available')
        .optional(),
      majorupgrade: z
        .object({
          name: str('Upgrade name'),
          tag: str('Update name to pass as `tag` to `startupdate` with target `standalone`'),
          version: str('Target operating-system version'),
        })
        .describe('An operating-system upgrade is available')
        .optional(),
      packageupdate: z
        .object({ name: str('Update name') })
        .describe('Software package updates are available')
        .optional(),
    })
    .catchall(patchRecord())
    .superRefine((v, ctx) => {
      const known = new Set(['status', 'details', 'security', 'majorupgrade', 'packageupdate']);
      for (const k of Object.keys(v)) {
        if (!known.has(k) && !PATCH_KEY.test(k)) ctx.addIssue({ code: 'custom', message: 'unexpected key', path: [k] });
      }
    })
    .describe('Update check result'),
);

/** Update log (`listlogs`, keyed by log file name). */
export const updateLogRecord = lazy(() =>
  z
    .object({
      name: str('Log file name'),
      started: str('Start time, epoch seconds'),
      finished: str('Finish time (last write), epoch seconds'),
    })
    .describe('An update log'),
);

/** Update settings (`listsettings`); values are strings and may carry a leading space; unset keys are absent. */
export const updateSettingsRecord = lazy(() =>
  z
    .object({
      maxbe: str('Most boot environments to keep').optional(),
      package_set: str('Package set, for example `STABLE`').optional(),
      package_url: str('Custom package repository URL').optional(),
      auto_update: str('Automatic update setting').optional(),
    })
    .describe('Update settings'),
);

const settingArgs = lazy(() => ({
  // spec: no range shown — chosen: 1 to 1000.
  maxbe: rangedNumber('Most boot environments to keep, 1 to 1000', { min: 1, max: 1000, integer: true }).optional(),
  package_set: safeName('Package set, for example `STABLE` or `EDGE`').optional(),
  package_url: urlString('Custom package repository URL').optional(),
  auto_update: safeName('Automatic update setting, for example `all`, `security` or `disabled`').optional(),
}));

const startUpdateArgs = lazy(() =>
  z.discriminatedUnion(
    'target',
    [
      z
        .strictObject({
          target: z.literal('chbranch').describe('Switch to another OS version'),
          branch: requiredToken('branch', 'target is `chbranch`', 'OS version to switch to, from `listbranches`'),
        })
        .describe('Change branch'),
      z.strictObject({ target: z.literal('pkgupdate').describe('Update installed software only') }).describe('Update installed packages'),
      z
        .strictObject({
          target: z.literal('standalone').describe('Install one update'),
          tag: requiredToken('tag', 'target is `standalone`', 'Update name from `checkupdates`'),
        })
        .describe('Install one standalone update'),
    ],
    {
      error: (iss) => (iss.code === 'invalid_union' ? `\`target\` is required: one of ${UPDATE_TARGETS.join(', ')}` : undefined),
    },
  ),
);

export const update = defineClass({
  namespace: 'admin',
  name: 'update',
  description: 'System and package updates: check, install, branches, logs, settings',
  limitedAccess: 'read',
  actions: {
    checkupdates: action({
      description: 'Report available updates (starts a background check when the cached result is old)',
      args: () => z.strictObject({ force: boolArg('Check again even when a recent result is cached').optional() }),
      reply: () =>
        z
          .object({
            last_check: str('ISO 8601 date/time of the last completed check (empty when none)'),
            checkupdates: updateCheckRecord(),
          })
          .describe('Update check'),
      access: 'read',
    }),
    listbranches: action({
      description: 'List OS versions (branches) and which one is installed',
      args: noArgs,
      reply: () =>
        z
          .object({
            listbranches: keyedBy(
              'Branch (OS version) name',
              z.enum(['active', 'available']).describe('`active` when installed, else `available`'),
              'Branches keyed by name',
            ),
          })
          .describe('Branches'),
      access: 'read',
    }),
    listlogs: action({
      description: 'List update logs',
      args: noArgs,
      reply: () => z.object({ listlogs: keyedBy('Log file name', updateLogRecord(), 'Logs keyed by file name') }).describe('Update logs'),
      access: 'read',
    }),
    readlogs: action({
      description: 'Read update logs',
      args: () =>
        z.strictObject({
          logs: oneOrMany(safeName('Log file name (no path)'), 'Log file names from `listlogs`: an array, or one name'),
        }),
      reply: () => z.object({ readlogs: keyedBy('Log file name', str('Log text'), 'Log texts keyed by file name') }).describe('Log texts'),
      access: 'read',
    }),
    listsettings: action({
      description: 'Read the update settings',
      args: noArgs,
      reply: () => z.object({ listsettings: updateSettingsRecord() }).describe('Update settings'),
      access: 'read',
    }),
    changesettings: action({
      description: 'Change one or more update settings',
      args: () =>
        z.strictObject(settingArgs()).refine(atLeastOne(Object.keys(settingArgs())), {
          message: `at least one setting is required: ${Object.keys(settingArgs()).join(', ')}`,
        }),
      reply: () => z.object({ changesettings: resultSuccess() }).describe('Settings changed'),
      access: 'write',
    }),
    startupdate: action({
      description: 'Start an update (queued; a dispatcher event reports completion)',
      args: startUpdateArgs,
      reply: () => z.object({ startupdate: queuedAck() }).describe('Update queued'),
      access: 'write',
      queued: 'no_queue',
      ack: 'queueid',
    }),
    stopupdate: action({
      description: 'Stop running update processes',
      args: noArgs,
      reply: () => z.object({ stopupdate: resultSuccess() }).describe('Update stopped'),
      access: 'write',
    }),
  },
});
