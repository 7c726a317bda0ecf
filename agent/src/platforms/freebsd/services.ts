/**
 * FreeBSD services: the rc.d scripts of /etc/rc.d and /usr/local/etc/rc.d, driven by service(8) and
 * sysrc(8) as an administrator would. rc.conf is never edited by hand.
 *
 * - inventory: `find` the executable scripts, `grep` their `name=`/`rcvar=`/`desc=` lines, and
 *   `service -e` for the enabled ones (rc.subr's own evaluation, so rc.conf.local and rc.conf.d
 *   count as they do at boot);
 * - running: exit status of `service <script> onestatus` (the `one` prefix, because a plain `status`
 *   refuses a service that is not enabled even when it runs);
 * - start/stop/restart: `service <script> start|stop|restart`, `one...` when it is not enabled
 *   (a start or stop of a service that is already so counts as done: rc.subr's `already running?`
 *   and `not running?`);
 * - enable/disable: `sysrc <tag>=YES|NO`, undone with the value sysrc reports it replaced.
 */
import { posix } from 'node:path';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import type { ServiceRef, ServicesPort, ServiceStatus } from '../ports/services.ts';
import { commandFailed } from '../common/host-command.ts';
import { mapLimit } from '../common/map-limit.ts';
import { alreadyInState, parseEnabledScripts, parsePaths, parseRcHeaders, parseSysrcChange, rcService, refusedAsNotEnabled } from './parse/services.ts';

export const RC_DIRS = ['/etc/rc.d', '/usr/local/etc/rc.d'] as const;
const QUICK = { timeoutMs: 30_000 };
// An rc.d start may wait for its daemon (ntpd syncing, a database recovering).
const SLOW = { timeoutMs: 180_000 };
const PROBES_AT_ONCE = 8;

interface Script extends ServiceRef {
  path: string;
  description: string;
}

export function freebsdServices(ctx: FreebsdContext): ServicesPort {
  const { runner } = ctx;
  return {
    async list(): Promise<ServiceStatus[]> {
      const scripts = await readScripts(runner);
      return mapLimit(scripts, PROBES_AT_ONCE, async (s) => {
        const status = await runner.run(['service', '--', s.handle, 'onestatus'], QUICK);
        return { name: s.name, description: s.description, path: s.path, tag: s.tag, enabled: s.enabled, running: status.code === 0 };
      });
    },
    async inventory() {
      return readScripts(runner);
    },
    async run(service, action) {
      let verb = service.enabled ? action : `one${action}`;
      let result = await runner.run(['service', '--', service.handle, verb], SLOW);
      if (result.code === 0 && verb === action && refusedAsNotEnabled(`${result.stdout}\n${result.stderr}`)) {
        // rc.subr answers a plain start of a service it does not consider enabled with a hint and
        // exit 0, doing nothing; the setting changed since the inventory, so do what was asked.
        verb = `one${action}`;
        result = await runner.run(['service', '--', service.handle, verb], SLOW);
      }
      if (result.code === 0) return;
      if (action !== 'restart' && alreadyInState(action, `${result.stdout}\n${result.stderr}`)) return;
      throw commandFailed(`service ${service.handle} ${verb}`, result);
    },
    async setEnabled(service, enabled) {
      const before = await sysrcSet(runner, service.tag, enabled ? 'YES' : 'NO');
      return async () => {
        // An empty "before" is a variable that was not set; removing it restores the default.
        const argv = before === '' ? ['sysrc', '-x', '--', service.tag] : ['sysrc', '--', `${service.tag}=${before}`];
        const result = await runner.run(argv, QUICK);
        if (result.code !== 0) throw commandFailed(argv.filter((a) => a !== '--').join(' '), result);
      };
    },
  };
}

/** Sets an rc.conf variable and returns the value it had. */
async function sysrcSet(runner: CommandRunner, tag: string, value: string): Promise<string> {
  const result = await runner.run(['sysrc', '--', `${tag}=${value}`], QUICK);
  if (result.code !== 0) throw commandFailed(`sysrc ${tag}=${value}`, result);
  const change = parseSysrcChange(result.stdout, tag);
  if (!change) throw new HostadmError('HOST_ERROR', `sysrc ${tag}=${value} did not report the change: ${result.stdout.trim().slice(0, 200)}`);
  return change.before;
}

async function readScripts(runner: CommandRunner): Promise<Script[]> {
  const found = await runner.run(['find', ...RC_DIRS, '-maxdepth', '1', '-type', 'f', '-perm', '-100'], QUICK);
  // /usr/local/etc/rc.d does not exist until a package installs a script; that alone is no error.
  const onlyMissing = found.stderr
    .trim()
    .split('\n')
    .every((l) => l === '' || /No such file or directory/.test(l));
  if (found.code !== 0 && !onlyMissing) throw commandFailed('find rc.d scripts', found);
  const byDir = (p: string) => (RC_DIRS as readonly string[]).indexOf(posix.dirname(p));
  const paths = parsePaths(found.stdout).sort((a, b) => byDir(a) - byDir(b) || a.localeCompare(b));
  if (paths.length === 0) return [];

  const grep = await runner.run(['grep', '-H', '-E', '^(name|rcvar|desc)=', '--', ...paths], QUICK);
  // 1 = no script matched at all; only 2 is a read error.
  if (grep.code !== 0 && grep.code !== 1) throw commandFailed('grep rc.d scripts', grep);
  const headers = parseRcHeaders(grep.stdout);

  const listed = await runner.run(['service', '-e'], QUICK);
  if (listed.code !== 0) throw commandFailed('service -e', listed);
  const enabled = parseEnabledScripts(listed.stdout);

  const scripts = new Map<string, Script>();
  for (const path of paths) {
    const service = rcService(path, headers.get(path) ?? {});
    // service(8) looks in /etc/rc.d first, so the base system's script wins a name clash too.
    if (!service || scripts.has(service.name)) continue;
    scripts.set(service.name, { ...service, path, handle: posix.basename(path), enabled: enabled.has(path) });
  }
  return [...scripts.values()];
}
