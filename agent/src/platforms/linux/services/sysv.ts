/**
 * SysV init scripts (Debian without systemd): the executable scripts of /etc/init.d, driven by
 * `service` and `update-rc.d`. A script is enabled when an `S??<name>` link is in /etc/rc[2-5].d;
 * running is the exit status of `service <name> status` (LSB: 0 = running).
 *
 * update-rc.d can toggle a script only once it has links, so the first enable of a script that
 * was never installed runs `update-rc.d <name> defaults`. After each change the links are read
 * again, because update-rc.d follows the script's LSB header and may create none for runlevels
 * 2-5; such a change is undone and reported rather than claimed.
 */
import { posix } from 'node:path';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner, RunResult } from '../../../runner/runner.ts';
import type { ServiceRef, ServicesPort, ServiceStatus, Undo } from '../../ports/services.ts';
import { commandFailed } from '../../common/host-command.ts';
import { mapLimit } from '../../common/map-limit.ts';
import { parseRcLinks, parseShortDescriptions, type RcLink } from '../parse/services.ts';

const INIT_D = '/etc/init.d';
const LINK_DIRS = ['0', '1', '2', '3', '4', '5', '6', 'S'].map((l) => `/etc/rc${l}.d`);
const BOOT_LEVELS = new Set(['/etc/rc2.d', '/etc/rc3.d', '/etc/rc4.d', '/etc/rc5.d']);
const QUICK = { timeoutMs: 30_000 };
const SLOW = { timeoutMs: 180_000 };
const PROBES_AT_ONCE = 8;

/** Not services: what `service --status-all` skips too. */
const IGNORED = new Set(['README', 'skeleton', 'rc', 'rcS', 'single', 'reboot', 'bootclean.sh', 'functions', 'halt', 'killall', 'linuxconf', 'kudzu']);

export function initScriptNames(findOutput: string): string[] {
  return findOutput
    .split('\n')
    .filter((l) => l.startsWith('/'))
    .map((l) => posix.basename(l.trim()))
    .filter((n) => !IGNORED.has(n) && !/\.dpkg-(dist|old|new|tmp)$/.test(n))
    .sort();
}

const startsAtBoot = (links: readonly RcLink[], name: string) => links.some((l) => l.name === name && l.start && BOOT_LEVELS.has(l.dir));

/** A `find` whose only complaints are missing starting points (a system without rcS.d) succeeded. */
function findOk(result: RunResult): boolean {
  return result.code === 0 || result.stderr.split('\n').every((l) => l.trim() === '' || /No such file or directory/.test(l));
}

export function sysvServices(runner: CommandRunner): ServicesPort {
  const scripts = async (): Promise<string[]> => {
    const result = await runner.run(['find', INIT_D, '-mindepth', '1', '-maxdepth', '1', '-type', 'f', '-perm', '-u+x'], QUICK);
    if (!findOk(result)) throw commandFailed(`find ${INIT_D}`, result);
    return initScriptNames(result.stdout);
  };
  const links = async (): Promise<RcLink[]> => {
    const result = await runner.run(['find', ...LINK_DIRS, '-mindepth', '1', '-maxdepth', '1', '-name', '[SK][0-9][0-9]*'], QUICK);
    if (!findOk(result)) throw commandFailed('find /etc/rc?.d', result);
    return parseRcLinks(result.stdout);
  };
  const updateRcD = async (args: string[]): Promise<void> => {
    const result = await runner.run(['update-rc.d', ...args], QUICK);
    if (result.code !== 0) throw commandFailed(`update-rc.d ${args.join(' ')}`, result);
  };
  const inventory = async (): Promise<ServiceRef[]> => {
    const [names, all] = await Promise.all([scripts(), links()]);
    return names.map((name) => ({ name, tag: name, handle: name, enabled: startsAtBoot(all, name) }));
  };

  return {
    inventory,
    async list(): Promise<ServiceStatus[]> {
      const refs = await inventory();
      if (refs.length === 0) return [];
      const grep = await runner.run(['grep', '-H', '-E', '^# Short-Description:', '--', ...refs.map((r) => `${INIT_D}/${r.name}`)], QUICK);
      if (grep.code !== 0 && grep.code !== 1) throw commandFailed('grep init scripts', grep);
      const descriptions = parseShortDescriptions(grep.stdout);
      return mapLimit(refs, PROBES_AT_ONCE, async (r) => {
        const status = await runner.run(['service', r.handle, 'status'], QUICK);
        const path = `${INIT_D}/${r.name}`;
        return { name: r.name, description: descriptions.get(r.name) ?? '', path, tag: r.tag, enabled: r.enabled, running: status.code === 0 };
      });
    },
    async run(service, action) {
      // `service` has no `--`; the contract already refused names starting with `-`.
      const result = await runner.run(['service', service.handle, action], SLOW);
      if (result.code !== 0) throw commandFailed(`service ${service.handle} ${action}`, result);
    },
    async setEnabled(service, enabled): Promise<Undo> {
      const name = service.handle;
      let undo: Undo;
      if (enabled && !(await links()).some((l) => l.name === name)) {
        await updateRcD([name, 'defaults']);
        undo = () => updateRcD(['-f', name, 'remove']);
      } else {
        await updateRcD([name, enabled ? 'enable' : 'disable']);
        undo = () => updateRcD([name, enabled ? 'disable' : 'enable']);
      }
      if (startsAtBoot(await links(), name) !== enabled) {
        await undo();
        throw new HostadmError(
          'HOST_ERROR',
          `update-rc.d left ${name} ${enabled ? 'without' : 'with'} a start link in /etc/rc[2-5].d (see the Default-Start line of its LSB header); the change was undone`,
        );
      }
      return undo;
    },
  };
}
