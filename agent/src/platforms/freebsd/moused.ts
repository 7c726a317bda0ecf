/**
 * FreeBSD's moused(8), one daemon per device as rc.d/moused runs it (`service moused start <dev>`,
 * which devd also uses for each mouse plugged in): devices are the psm/ums/mse nodes of /dev, described
 * by their newbus sysctls; a device is active while its pid file `/var/run/moused.<dev>.pid` exists
 * (or `moused.pid` for the default instance on `moused_port`). Options live in rc.conf's
 * `moused_<dev>_flags`, which rc.d/moused prefers to `moused_flags` (`${moused_<dev>_flags-$moused_flags}`),
 * so a device without its own variable reads the general flags, and writing gives it its own.
 * Start/stop/restart use the `one...` forms so they work whatever `moused_<dev>_enable` says; the
 * default instance is stopped and restarted as such (`service moused onestop`, no device).
 */
import { posix } from 'node:path';
import type { FreebsdContext } from './index.ts';
import type { MousedPort, PointerDevice } from '../ports/moused.ts';
import { commandFailed } from '../common/host-command.ts';
import { deviceOids, mousedFlags, parseMousedFlags, parseMousedPidFiles, parsePointerNodes, parseSysctlLines } from './parse/moused.ts';
import { alreadyInState } from './parse/services.ts';
import { sysrcGet, sysrcLookup, sysrcSet } from './rc-conf.ts';

const QUICK = { timeoutMs: 30_000 };

export function freebsdMoused(ctx: FreebsdContext): MousedPort {
  const { runner } = ctx;
  const ls = async (dir: string): Promise<string> => {
    const result = await runner.run(['ls', '-1', dir], QUICK);
    if (result.code !== 0) throw commandFailed(`ls ${dir}`, result);
    return result.stdout;
  };
  const flagsOf = async (device: string): Promise<string> => (await sysrcLookup(runner, `moused_${device}_flags`)) ?? (await sysrcGet(runner, 'moused_flags'));
  /**
   * The rc.d argument addressing a device's daemon: the device, except for the default instance
   * (rc.conf's moused_enable on moused_port, pid file moused.pid), which rc.d/moused addresses without one.
   */
  const instanceArgs = async (device: string): Promise<string[]> => {
    const pids = parseMousedPidFiles(await ls('/var/run'));
    if (pids.devices.has(device) || !pids.defaultInstance) return [device];
    return posix.basename(await sysrcGet(runner, 'moused_port')) === device ? [] : [device];
  };
  const service = async (verb: 'onestart' | 'onestop' | 'onerestart', device: string): Promise<void> => {
    const args = verb === 'onestart' ? [device] : await instanceArgs(device);
    const result = await runner.run(['service', 'moused', verb, ...args], QUICK);
    if (result.code === 0) return;
    const output = `${result.stdout}\n${result.stderr}`;
    if (verb === 'onestart' && alreadyInState('start', output)) return;
    if (verb === 'onestop' && alreadyInState('stop', output)) return;
    throw commandFailed(`service moused ${verb} ${device}`, result);
  };
  return {
    async listDevices(): Promise<PointerDevice[]> {
      const nodes = parsePointerNodes(await ls('/dev'));
      if (nodes.length === 0) return [];
      // -i: a node whose driver has no sysctl tree (detached) is skipped instead of failing the lot.
      const sysctl = await runner.run(['sysctl', '-i', ...nodes.flatMap(deviceOids)], QUICK);
      if (sysctl.code !== 0) throw commandFailed('sysctl', sysctl);
      const values = parseSysctlLines(sysctl.stdout);
      const pids = parseMousedPidFiles(await ls('/var/run'));
      const defaultDevice = pids.defaultInstance ? posix.basename(await sysrcGet(runner, 'moused_port')) : null;
      return nodes.map((device) => {
        const [desc = '', driver = '', parent = ''] = deviceOids(device).map((oid) => values.get(oid) ?? '');
        return { device, description: desc, driver, parent, active: pids.devices.has(device) || device === defaultDevice };
      });
    },
    async readOptions(device) {
      return parseMousedFlags(await flagsOf(device)).options;
    },
    async writeOptions(device, options) {
      const { other } = parseMousedFlags(await flagsOf(device));
      await sysrcSet(runner, `moused_${device}_flags`, mousedFlags(options, other));
    },
    start: (device) => service('onestart', device),
    stop: (device) => service('onestop', device),
    restart: (device) => service('onerestart', device),
  };
}
