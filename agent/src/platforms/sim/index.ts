import { join } from 'node:path';
import type { Platform, PlatformOptions } from '../types.ts';
import { SimStateFile, checkPassword } from './state.ts';

/** A simulated FreeBSD host whose state lives in `<data>/sim/state.json`. */
export function createSimPlatform(options: PlatformOptions): Platform & { readonly sim: SimStateFile } {
  const sim = new SimStateFile(join(options.dataDir, 'sim', 'state.json'), { password: options.simPassword });
  return {
    kind: 'sim',
    adminGroup: 'wheel',
    limitedGroup: 'operator',
    runner: options.runner,
    sim,
    ports: {},
    accounts: {
      async verifyPassword(user, password) {
        const acct = sim.state.accounts[user];
        if (!acct || acct.password === '*') return false;
        return checkPassword(acct.password, password);
      },
      async groupsOf(user) {
        const acct = sim.state.accounts[user];
        if (!acct) return null;
        const groups = Object.values(sim.state.groups);
        const primary = groups.find((g) => g.gid === acct.gid)?.name;
        const secondary = groups.filter((g) => g.members.includes(user)).map((g) => g.name);
        return [...new Set([...(primary ? [primary] : []), ...secondary])];
      },
    },
    async hostname() {
      return sim.state.hostname;
    },
    async close() {},
  };
}
