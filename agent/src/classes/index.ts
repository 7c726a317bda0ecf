/**
 * Registration: one line per implemented class. A contract without a line here is not served yet,
 * and `query` does not list it.
 */
import type { ClassImplementation } from './types.ts';
import { servicesImpl } from './services.ts';
import { fsImpl } from './fs.ts';
import { networkImpl } from './network.ts';
import { adminSettingsImpl, rpcSettingsImpl } from './settings.ts';
import { systemmanagerImpl } from './systemmanager.ts';
import { usersImpl } from './users.ts';
import { dispatcherImpl } from './dispatcher.ts';

export const implementations: readonly ClassImplementation[] = [adminSettingsImpl, rpcSettingsImpl, fsImpl, networkImpl, systemmanagerImpl, usersImpl, dispatcherImpl, servicesImpl] as readonly ClassImplementation[];
