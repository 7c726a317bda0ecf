import { join } from 'node:path';
import type { ClassPorts, Platform, PlatformOptions } from '../types.ts';
import { SimStore, type SimSlice } from './store.ts';
import { simServices } from './services.ts';
import { accountsSlice, checkPassword, groupsOfAccount, type SimAccounts } from './accounts.ts';
import { simFs } from './fs.ts';
import { simNetwork } from './network.ts';
import { simSystemmanagerPort } from './systemmanager/index.ts';
import { simUsers } from './users.ts';
import { simFirewall } from './firewall.ts';
import { simPowerd } from './powerd.ts';
import { simMoused } from './moused.ts';
import { simVm } from './vm.ts';
import { simJail } from './jail.ts';
import { simUpdate } from './update.ts';
import { simPkg } from './pkg.ts';
import { simBeadm } from './beadm.ts';
import { simZfs } from './zfs.ts';
import { simReplication } from './replication.ts';

export interface SimPlatform extends Platform {
  readonly store: SimStore;
}

/** What every sim class port is built from. */
export interface SimContext {
  readonly store: SimStore;
  readonly accounts: SimSlice<SimAccounts>;
  readonly host: SimSlice<{ hostname: string }>;
  readonly dataDir: string;
}

/** One line per class that the simulated host serves. */
function simPorts(ctx: SimContext): Partial<ClassPorts> {
  return {
    services: simServices(ctx),
    fs: simFs(ctx),
    network: simNetwork(ctx),
    systemmanager: simSystemmanagerPort(ctx),
    users: simUsers(ctx),
    firewall: simFirewall(ctx),
    powerd: simPowerd(ctx),
    moused: simMoused(ctx),
    vm: simVm(ctx),
    jail: simJail(ctx),
    update: simUpdate(ctx),
    pkg: simPkg(ctx),
    beadm: simBeadm(ctx),
    zfs: simZfs(ctx),
    replication: simReplication(ctx),
  };
}

/** A simulated FreeBSD host whose state lives in `<data>/sim/state.json`. */
export function createSimPlatform(options: PlatformOptions): SimPlatform {
  const store = new SimStore(join(options.dataDir, 'sim', 'state.json'));
  const accounts = accountsSlice(store, options.simPassword);
  const host = store.slice('host', () => ({ hostname: 'simhost' }));
  const ctx: SimContext = { store, accounts, host, dataDir: options.dataDir };
  return {
    kind: 'sim',
    adminGroup: 'wheel',
    limitedGroup: 'operator',
    runner: options.runner,
    store,
    ports: simPorts(ctx),
    accounts: {
      async verifyPassword(user, password) {
        // Unknown and locked accounts cost one scrypt run too (no user enumeration by timing).
        return checkPassword(accounts.get().accounts[user]?.password, password);
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
