import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolArg, keyedBy, noArgs, numericString, safeName, str } from './fields.ts';
import { HOUR, SNAPSHOT_TOO_LONG, hostArg, portArg, safePhrase, snapshotFits, zfsDatasetName, zfsPoolName, zfsSnapName } from './fields-storage.ts';

const poolName = lazy(() => zfsPoolName('ZFS pool name'));
const dataset = lazy(() => zfsDatasetName('Local dataset, `pool/a/b`'));
const snapName = lazy(() => zfsSnapName('Snapshot name (the part after `@`)'));
const replHost = lazy(() => hostArg('Remote host name or address'));

const SNAP_FREQUENCY = new RegExp(`^(daily@${HOUR}|hourly|30min|10min|5min|none)$`);
const DAY = '(0?[1-9]|[12][0-9]|3[01])';
const SCRUB_FREQUENCY = new RegExp(`^(daily@${HOUR}|weekly@0[1-7]@${HOUR}|monthly@${DAY}@${HOUR}|none)$`);
const REPL_FREQUENCY = new RegExp(`^(${HOUR}|sync|hour|30min|10min|manual)$`);

export const snapshotScheduleRecord = lazy(() =>
  z
    .object({
      keep: str('Number of snapshots kept'),
      schedule: str('Snapshot frequency, as given to `cronsnap`'),
      scrub: str('Scrub frequency, as given to `cronscrub`; present when scrubs are configured').optional(),
    })
    .describe('The snapshot schedule of a pool'),
);

export const snapshotRecord = lazy(() => z.object({ comment: str('Snapshot comment') }).describe('A snapshot'));

export const replicationRecord = lazy(() =>
  z
    .object({
      dataset: str('Local dataset'),
      frequency: str('Replication frequency'),
      host: str('Remote host'),
      port: str('SSH port'),
      rdset: str('Remote dataset'),
      user: str('Remote user'),
    })
    .describe('A replication task'),
);

export const snapshotSettingsRecord = lazy(() =>
  z
    .object({
      diskwarn: str('Disk usage warning level, a percentage with `%` (may carry a leading space)'),
      email: str('Notification level: `ALL`, `WARN` or `ERROR` (may carry a leading space)'),
      emailaddress: str('Notification address (may carry a leading space)'),
      recursive: str('Recursive mode: `ON` or otherwise (may carry a leading space)'),
    })
    .describe('Snapshot system settings'),
);

const datasetHost = (description: string) => z.object({ dataset: str('Local dataset'), host: str('Remote host') }).describe(description);

const datasetSnap = (description: string) => z.object({ dataset: str('Dataset'), snap: str('Snapshot name') }).describe(description);

const hostDatasetArgs = lazy(() => z.strictObject({ host: replHost(), dataset: dataset() }));

export const snapshot = defineClass({
  namespace: 'admin',
  name: 'snapshot',
  description: 'Scheduled snapshots, scrubs, replication and snapshot settings',
  limitedAccess: 'read',
  actions: {
    listcron: action({
      description: 'List snapshot and scrub schedules',
      args: noArgs,
      reply: () => z.object({ listcron: keyedBy('Pool name', snapshotScheduleRecord(), 'Schedule records keyed by pool') }),
      access: 'read',
    }),
    cronsnap: action({
      description: 'Schedule automatic snapshots of a pool (`frequency: none` disables them)',
      args: () =>
        z
          .strictObject({
            pool: poolName(),
            keep: numericString('Number of automatic snapshots to keep (at least 1 unless `frequency` is `none`)').refine(
              (k) => Number(k) <= 100000,
              'must be at most 100000',
            ),
            frequency: z
              .string()
              .regex(SNAP_FREQUENCY, 'must be daily@<hour>, hourly, 30min, 10min, 5min or none')
              .describe('`daily@XX` (XX = hour 0-23), `hourly`, `30min`, `10min`, `5min`, or `none` (disables)'),
          })
          .refine((a) => a.frequency === 'none' || Number(a.keep) >= 1, { message: 'must be at least 1', path: ['keep'] }),
      reply: () =>
        z.object({
          cronsnap: z.object({ frequency: str('Frequency'), keep: str('Snapshots kept'), pool: str('Pool') }).describe('The schedule'),
        }),
      access: 'write',
    }),
    cronscrub: action({
      description: 'Schedule scrubs of a pool (`frequency: none` disables them)',
      args: () =>
        z.strictObject({
          pool: poolName(),
          frequency: z
            .string()
            .regex(SCRUB_FREQUENCY, 'must be daily@XX, weekly@YY@XX, monthly@ZZ@XX or none')
            .describe('`daily@XX`, `weekly@YY@XX`, `monthly@ZZ@XX` or `none`; XX hour, YY weekday `01` (Monday) to `07`, ZZ day of month'),
        }),
      reply: () => z.object({ cronscrub: z.object({ frequency: str('Frequency'), pool: str('Pool') }).describe('The scrub schedule') }),
      access: 'write',
    }),
    createsnap: action({
      description: 'Create a snapshot of a dataset',
      args: () =>
        z
          .strictObject({
            dataset: dataset(),
            snap: snapName(),
            comment: safePhrase('Comment stored with the snapshot (as the ZFS user property `hostadm:comment`)').optional(),
          })
          .refine(snapshotFits, SNAPSHOT_TOO_LONG),
      reply: () =>
        z.object({
          createsnap: z
            .object({
              comment: str('The comment given').optional(),
              dataset: str('Dataset'),
              snap: str('Snapshot name'),
            })
            .describe('The new snapshot'),
        }),
      access: 'write',
    }),
    listsnap: action({
      description: 'List the snapshots of a pool',
      args: () => z.strictObject({ pool: poolName() }),
      reply: () =>
        z.object({
          listsnap: keyedBy('`<pool>@<snapshot name>`', snapshotRecord(), 'Snapshot records keyed by `<pool>@<snapshot name>`'),
        }),
      access: 'read',
    }),
    revertsnap: action({
      description: 'Roll a dataset back to a snapshot (all changes since the snapshot are lost, newer snapshots of the dataset too)',
      args: () => z.strictObject({ dataset: dataset(), snap: snapName() }).refine(snapshotFits, SNAPSHOT_TOO_LONG),
      reply: () => z.object({ revertsnap: datasetSnap('The rollback') }),
      access: 'write',
    }),
    removesnap: action({
      description: 'Destroy a snapshot',
      args: () => z.strictObject({ dataset: dataset(), snap: snapName() }).refine(snapshotFits, SNAPSHOT_TOO_LONG),
      reply: () => z.object({ removesnap: datasetSnap('The removed snapshot') }),
      access: 'write',
    }),
    addreplication: action({
      description: 'Add a replication task to a remote host over SSH',
      args: () =>
        z.strictObject({
          host: replHost(),
          port: portArg('SSH port of the remote host'),
          user: safeName('Remote user (must exist on the remote host)'),
          password: z
            .string()
            .min(1, 'must not be empty')
            .max(1024, 'must be at most 1024 characters')
            .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
            .describe("Remote user's password; passed in the environment, never as an argument, and not echoed"),
          dataset: dataset(),
          remotedataset: zfsDatasetName('Dataset on the remote host'),
          frequency: z
            .string()
            .regex(REPL_FREQUENCY, 'must be an hour (0-23), sync, hour, 30min, 10min or manual')
            .describe('`XX` (daily at hour XX), `sync`, `hour`, `30min`, `10min` or `manual`'),
        }),
      reply: () =>
        z.object({
          addreplication: z
            .object({
              frequency: str('Frequency'),
              host: str('Remote host'),
              ldataset: str('Local dataset'),
              port: str('SSH port'),
              rdataset: str('Remote dataset'),
              user: str('Remote user'),
            })
            .describe('The new task (no password)'),
        }),
      access: 'write',
    }),
    removereplication: action({
      description: 'Delete a replication task (replicated data is kept)',
      args: hostDatasetArgs,
      reply: () => z.object({ removereplication: datasetHost('The removed task') }),
      access: 'write',
    }),
    listreplication: action({
      description: 'List replication tasks',
      args: noArgs,
      reply: () =>
        z.object({
          listreplication: keyedBy('`<dataset>-><host>`', replicationRecord(), 'Replication tasks keyed by `<dataset>-><host>`'),
        }),
      access: 'read',
    }),
    runreplication: action({
      description: 'Run a replication task now',
      args: hostDatasetArgs,
      reply: () => z.object({ runreplication: datasetHost('The task started') }),
      access: 'write',
    }),
    initreplication: action({
      description: 'Clear the remote replication data of a task (follow with runreplication)',
      args: hostDatasetArgs,
      reply: () => z.object({ initreplication: datasetHost('The task reset') }),
      access: 'write',
    }),
    settings: action({
      description: 'Show snapshot system settings',
      args: noArgs,
      reply: () => z.object({ settings: snapshotSettingsRecord() }),
      access: 'read',
    }),
    savesettings: action({
      description: 'Change snapshot system settings (at least one of duwarn, email, emailopts, recursive)',
      args: () =>
        z
          .strictObject({
            duwarn: numericString('Disk usage warning level, percent 0 to 99')
              .refine((v) => Number(v) <= 99, 'must be between 0 and 99')
              .optional(),
            email: z
              .string()
              .max(1024, 'must be at most 1024 characters')
              .regex(
                /^[A-Za-z0-9._%+][A-Za-z0-9._%+-]*@[A-Za-z0-9.-]+(,[A-Za-z0-9._%+][A-Za-z0-9._%+-]*@[A-Za-z0-9.-]+)*$/,
                'must be an e-mail address (several separated by commas)',
              )
              .describe('Notification address; several separated by commas')
              .optional(),
            emailopts: z.enum(['ALL', 'WARN', 'ERROR']).describe('Notification level (default `WARN`)').optional(),
            recursive: boolArg('Snapshot child datasets too').optional(),
          })
          .refine((a) => Object.values(a).some((v) => v !== undefined), {
            message: 'requires duwarn, email, emailopts or recursive',
            path: ['duwarn'],
          }),
      reply: () =>
        z.object({
          savesettings: z
            .object({
              duwarn: str('Accepted warning level').optional(),
              email: str('Accepted address').optional(),
              emailopts: str('Accepted notification level').optional(),
              recursive: str('Accepted recursive mode, `true` / `false`').optional(),
            })
            .describe('The accepted values'),
        }),
      access: 'write',
    }),
  },
});
