/**
 * Registration: one entry per class of the contracts, keyed by the name `query` reports. The compiler
 * checks the keys against the contracts (a class left out or misspelled is a type error) and each
 * implementation against its key's contract. `null`: not implemented yet, so no platform serves it.
 * The served classes come first, in the order `query` has always listed them.
 */
import type { ClassRegistry } from './types.ts';
import { servicesImpl } from './services.ts';
import { fsImpl } from './fs.ts';
import { networkImpl } from './network.ts';
import { adminSettingsImpl, rpcSettingsImpl } from './settings.ts';
import { systemmanagerImpl } from './systemmanager.ts';
import { usersImpl } from './users.ts';
import { dispatcherImpl } from './dispatcher.ts';
import { firewallImpl } from './firewall.ts';
import { powerdImpl } from './powerd.ts';
import { mousedImpl } from './moused.ts';
import { vmImpl } from './vm.ts';
import { jailImpl } from './jail.ts';
import { updateImpl } from './update.ts';
import { pkgImpl } from './pkg.ts';
import { beadmImpl } from './beadm.ts';
import { zfsImpl } from './zfs.ts';
import { snapshotImpl } from './snapshot.ts';

export const classes = {
  'admin/settings': adminSettingsImpl,
  'rpc/settings': rpcSettingsImpl,
  'admin/fs': fsImpl,
  'admin/network': networkImpl,
  'admin/systemmanager': systemmanagerImpl,
  'admin/users': usersImpl,
  'rpc/dispatcher': dispatcherImpl,
  'admin/services': servicesImpl,
  'admin/beadm': beadmImpl,
  'admin/firewall': firewallImpl,
  'admin/jail': jailImpl,
  'admin/moused': mousedImpl,
  'admin/pkg': pkgImpl,
  'admin/powerd': powerdImpl,
  'admin/snapshot': snapshotImpl,
  'admin/update': updateImpl,
  'admin/vm': vmImpl,
  'admin/zfs': zfsImpl,
} as const satisfies ClassRegistry;
