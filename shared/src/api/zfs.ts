import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { keyedBy, noArgs, str } from './fields.ts';
import { zfsPoolName } from './fields-storage.ts';

export const poolRecord = lazy(() =>
  z
    .object({
      alloc: str('Allocated space'),
      altroot: str('Alternate root, or `-`'),
      cap: str('Percent of capacity used'),
      dedup: str('Deduplication ratio'),
      expandsz: str('Expandable size, or `-`'),
      frag: str('Fragmentation'),
      free: str('Free space'),
      health: str('Health, for example `ONLINE`'),
      size: str('Total size'),
    })
    .describe('A ZFS pool'),
);

export const datasetRecord = lazy(() =>
  z
    .object({
      avail: str('Available space'),
      mountpoint: str('Mount point path, `none` or `-`'),
      refer: str('Referenced space'),
      used: str('Used space'),
    })
    .describe('A ZFS dataset'),
);

export const zfs = defineClass({
  namespace: 'admin',
  name: 'zfs',
  description: 'ZFS pools and datasets',
  limitedAccess: 'read',
  actions: {
    list_pools: action({
      description: 'List ZFS pools',
      args: noArgs,
      reply: () => z.object({ list_pools: keyedBy('Pool name', poolRecord(), 'Pool records keyed by name') }),
      access: 'read',
    }),
    datasets: action({
      description: 'List the datasets of a pool',
      args: () => z.strictObject({ zpool: zfsPoolName('Pool name') }),
      reply: () => z.object({ datasets: keyedBy('Dataset path', datasetRecord(), 'Dataset records keyed by dataset path') }),
      access: 'read',
    }),
  },
});
