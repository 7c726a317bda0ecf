/**
 * Registration: one line per implemented class. A contract without a line here is not served yet,
 * and `query` does not list it.
 */
import type { ClassImplementation } from './types.ts';
import { adminSettingsImpl, rpcSettingsImpl } from './settings.ts';
import { dispatcherImpl } from './dispatcher.ts';

export const implementations: readonly ClassImplementation[] = [adminSettingsImpl, rpcSettingsImpl, dispatcherImpl] as readonly ClassImplementation[];
