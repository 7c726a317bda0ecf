/**
 * `zfs`: pools and datasets as the `zpool`/`zfs` tools report them (one implementation for FreeBSD
 * and Linux, a model on sim). A pool that does not exist is a 404 naming it, not an empty list.
 */
import { zfs } from '@hostadm/shared/api/zfs.ts';
import { implementClass } from './types.ts';

export const zfsImpl = implementClass(zfs, ({ platform }) => {
  const port = platform.ports.zfs;
  if (!port) return null;
  return {
    list_pools: async () => ({ list_pools: await port.listPools() }),
    datasets: async (args) => ({ datasets: await port.datasets(args.zpool) }),
  };
});
