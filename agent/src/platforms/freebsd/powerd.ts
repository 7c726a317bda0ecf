/**
 * FreeBSD's powerd(8), driven as an administrator would: options in rc.conf's `powerd_flags` and the
 * boot setting in `powerd_enable`, both through sysrc(8) (which also reads /etc/defaults/rc.conf, so
 * an unset variable reads as its default); the daemon through service(8), `one...` when it is not
 * enabled at boot (a plain start refuses then), running = `service powerd onestatus` exits 0.
 */
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { PowerdPort } from '../ports/powerd.ts';
import { commandFailed } from '../common/host-command.ts';
import { parsePowerdFlags, powerdFlags, rcYes } from './parse/powerd.ts';
import { alreadyInState } from './parse/services.ts';
import { sysrcGet, sysrcSet } from './rc-conf.ts';

const QUICK = { timeoutMs: 30_000 };

export function freebsdPowerd(ctx: FreebsdContext): PowerdPort {
  const { runner } = ctx;
  const enabled = async () => rcYes(await sysrcGet(runner, 'powerd_enable'));
  const running = async () => (await runner.run(['service', 'powerd', 'onestatus'], QUICK)).code === 0;
  const control = async (action: 'start' | 'stop'): Promise<boolean> => {
    const verb = (await enabled()) ? action : `one${action}`;
    const result = await runner.run(['service', 'powerd', verb], QUICK);
    if (result.code === 0) return true;
    if (alreadyInState(action, `${result.stdout}\n${result.stderr}`)) return true;
    // The spec's reply says whether it worked (`started: "false"`); the reason is in the log line.
    return false;
  };
  return {
    async readOptions() {
      return parsePowerdFlags(await sysrcGet(runner, 'powerd_flags')).options;
    },
    async writeOptions(options) {
      const { other } = parsePowerdFlags(await sysrcGet(runner, 'powerd_flags'));
      const written = powerdFlags(options, other);
      if ('tooFine' in written) {
        const field = written.tooFine;
        throw badRequest(`${field}: powerd takes whole MHz; give at least 1000000 Hz, or -1 for no limit; nothing was changed`, [
          { field, message: 'must be at least 1000000 (1 MHz) for powerd, or -1' },
        ]);
      }
      await sysrcSet(runner, 'powerd_flags', written.flags);
    },
    async status() {
      return { enabled: await enabled(), running: await running() };
    },
    async setEnabled(on) {
      await sysrcSet(runner, 'powerd_enable', on ? 'YES' : 'NO');
    },
    start: () => control('start'),
    stop: () => control('stop'),
    async restart() {
      const result = await runner.run(['service', 'powerd', 'onerestart'], QUICK);
      if (result.code !== 0) throw commandFailed('service powerd onerestart', result);
    },
  };
}
