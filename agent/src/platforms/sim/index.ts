import { join } from 'node:path';
import type { Platform, PlatformOptions } from '../types.ts';
import { SimStore } from './store.ts';
import { accountsSlice, checkPassword, groupsOfAccount } from './accounts.ts';

export interface SimPlatform extends Platform {
  readonly store: SimStore;
}

/** A simulated FreeBSD host whose state lives in `<data>/sim/state.json`. */
export function createSimPlatform(options: PlatformOptions): SimPlatform {
  const store = new SimStore(join(options.dataDir, 'sim', 'state.json'));
  const accounts = accountsSlice(store, options.simPassword);
  const host = store.slice('host', () => ({ hostname: 'simhost' }));
  return {
    kind: 'sim',
    adminGroup: 'wheel',
    limitedGroup: 'operator',
    runner: options.runner,
    store,
    ports: {},
    accounts: {
      async verifyPassword(user, password) {
        const acct = accounts.get().accounts[user];
        if (!acct || acct.password === '*') return false;
        return checkPassword(acct.password, password);
      },
      async groupsOf(user) {
        return groupsOfAccount(accounts.get(), user);
      },
    },
    async hostname() {
      return host.get().hostname;
    },
    async close() {},
  };
}
