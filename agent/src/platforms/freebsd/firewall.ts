/**
 * FreeBSD firewall: ipfw as the base system sets it up, with rc.firewall's `workstation` type.
 * The open ports are rc.conf's `firewall_myservices` (`22/tcp 80/tcp`), which that type lets in
 * from `firewall_allowservices` (set to `any` when empty, or nobody could reach them); everything
 * is changed with sysrc(8) and applied with service(8), as an administrator would. The original's
 * `/etc/ipfw.openports` was read by TrueOS's own rc.firewall only: on stock FreeBSD nothing reads
 * it, so ports written there would never open (docs/protocol.md, "firewall").
 *
 * - status: `is_running` is the kernel's switch (`sysctl -n net.inet.ip.fw.enable`), `is_enabled`
 *   rc.conf's `firewall_enable` as rc.subr reads it;
 * - start/stop/restart: `service ipfw onestart|onestop|onerestart` (`one`: works whether or not it
 *   is enabled at boot);
 * - a host whose `firewall_type` is its own (a rules file, `client`, `open`, ...) is left alone:
 *   open/close/start/enable refuse with 409 rather than replace the administrator's rules; an
 *   unset type (`UNKNOWN`, which loads no rules: everything is denied) becomes `workstation`.
 * - reset-defaults: TrueOS's reset script where it exists, else 501.
 */
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import { commandFailed } from '../common/host-command.ts';
import { formatPortSpec, uniquePorts, type FirewallPort, type KnownPort } from '../ports/firewall.ts';
import {
  FIREWALL_VARS,
  isUnknownOid,
  isYes,
  namesServices,
  parseFwEnable,
  parseMyServices,
  parseServicesDb,
  parseSysrcValues,
  type FirewallVars,
} from './parse/firewall.ts';

const QUICK = { timeoutMs: 30_000 };
// Loading the ipfw module and its rules can take a while on a busy host.
const SLOW = { timeoutMs: 120_000 };
export const SERVICES_DB = '/etc/services';
export const TRUEOS_RESET = '/usr/local/share/trueos/scripts/reset-firewall';

export function freebsdFirewall(ctx: FreebsdContext): FirewallPort {
  const { runner } = ctx;

  const knownPorts = async (): Promise<KnownPort[]> => {
    const result = await runner.run(['cat', '--', SERVICES_DB], QUICK);
    if (result.code !== 0) throw commandFailed(`cat ${SERVICES_DB}`, result);
    return parseServicesDb(result.stdout);
  };

  const readVars = async (): Promise<FirewallVars> => {
    const result = await runner.run(['sysrc', '-n', '--', ...FIREWALL_VARS], QUICK);
    if (result.code !== 0) throw commandFailed(`sysrc -n ${FIREWALL_VARS.join(' ')}`, result);
    return parseSysrcValues(result.stdout);
  };

  const running = async (): Promise<boolean> => {
    const result = await runner.run(['sysctl', '-n', 'net.inet.ip.fw.enable'], QUICK);
    if (result.code !== 0 && !isUnknownOid(result.stderr)) throw commandFailed('sysctl net.inet.ip.fw.enable', result);
    return parseFwEnable(result.code, result.stdout);
  };

  const sysrc = async (name: string, value: string): Promise<void> => {
    const result = await runner.run(['sysrc', '--', `${name}=${value}`], QUICK);
    if (result.code !== 0) throw commandFailed(`sysrc ${name}=${value}`, result);
  };

  const service = async (verb: 'onestart' | 'onestop' | 'onerestart'): Promise<void> => {
    const result = await runner.run(['service', 'ipfw', verb], SLOW);
    if (result.code !== 0) throw commandFailed(`service ipfw ${verb}`, result);
  };

  /** Makes sure rc.firewall will load the workstation rules that let `firewall_myservices` in. */
  const ensureWorkstation = async (vars: FirewallVars): Promise<void> => {
    const type = vars.firewall_type;
    if (type === '' || /^unknown$/i.test(type)) await sysrc('firewall_type', 'workstation');
    else if (!/^workstation$/i.test(type)) {
      throw new HostadmError(
        'CONFLICT',
        `firewall_type is "${type}" in rc.conf: this host loads its own ipfw rules, and hostadm manages ports only with rc.firewall's workstation type; nothing was changed`,
      );
    }
    if (vars.firewall_allowservices === '') await sysrc('firewall_allowservices', 'any');
  };

  return {
    knownPorts,
    async listOpen() {
      const vars = await readVars();
      const known = namesServices(vars.firewall_myservices) ? await knownPorts() : [];
      return uniquePorts(parseMyServices(vars.firewall_myservices, known).ports);
    },
    async status() {
      const vars = await readVars();
      return { enabled: isYes(vars.firewall_enable), running: await running() };
    },
    async change(action, ports) {
      const vars = await readVars();
      const known = namesServices(vars.firewall_myservices) ? await knownPorts() : [];
      const current = parseMyServices(vars.firewall_myservices, known);
      const asked = new Set(ports.map(formatPortSpec));
      const next = action === 'open' ? uniquePorts([...current.ports, ...ports]) : current.ports.filter((p) => !asked.has(formatPortSpec(p)));
      await ensureWorkstation(vars);
      // Words rc.firewall understands but we could not resolve stay, after the ports.
      await sysrc('firewall_myservices', [...uniquePorts(next).map(formatPortSpec), ...current.other].join(' '));
      if (await running()) await service('onerestart');
    },
    async run(action) {
      if (action !== 'stop') await ensureWorkstation(await readVars());
      await service(action === 'start' ? 'onestart' : action === 'stop' ? 'onestop' : 'onerestart');
    },
    async setEnabled(enabled) {
      if (enabled) await ensureWorkstation(await readVars());
      await sysrc('firewall_enable', enabled ? 'YES' : 'NO');
    },
    async resetDefaults() {
      const exists = await runner.run(['test', '-f', TRUEOS_RESET], QUICK);
      if (exists.code !== 0) throw unsupported(`reset-defaults: supported on TrueOS only, and this host has no ${TRUEOS_RESET}`);
      const result = await runner.run(['sh', TRUEOS_RESET], SLOW);
      if (result.code !== 0) throw commandFailed(`sh ${TRUEOS_RESET}`, result);
    },
  };
}
