/**
 * systemd services: the `.service` unit files (`systemctl list-unit-files`), their state from one
 * `systemctl show` for all of them, and `systemctl start|stop|restart|enable|disable`.
 *
 * A service is named by its unit without `.service` (`ssh`); `tag` is the unit. Templates
 * (`getty@.service`) cannot run without an instance and aliases repeat another unit, so neither is
 * listed. Only `enabled`/`disabled` units can be switched: static, masked, indirect, generated and
 * runtime-enabled units are refused with the reason before anything runs.
 */
import type { CommandRunner } from '../../../runner/runner.ts';
import type { ServiceRef, ServicesPort } from '../../ports/services.ts';
import { commandFailed } from '../../common/host-command.ts';
import { parseShow, parseUnitFiles, type UnitFile } from '../parse/services.ts';

const QUICK = { timeoutMs: 30_000 };
// systemctl waits for the start job; a unit with a long TimeoutStartSec may take minutes.
const SLOW = { timeoutMs: 180_000 };
const SHOWN = 'Id,Description,LoadState,ActiveState,FragmentPath,UnitFileState';

const ENABLED = new Set(['enabled', 'enabled-runtime']);

export function unitRef(file: UnitFile): ServiceRef | null {
  if (file.unit.includes('@') || file.state === 'alias') return null;
  const ref: ServiceRef = { name: file.unit.slice(0, -'.service'.length), tag: file.unit, handle: file.unit, enabled: ENABLED.has(file.state) };
  if (file.state !== 'enabled' && file.state !== 'disabled') {
    ref.bootFixed = `${ref.name}: ${file.unit} is ${file.state}, so systemctl cannot switch it on or off at boot`;
  }
  return ref;
}

export function systemdServices(runner: CommandRunner): ServicesPort {
  const inventory = async (): Promise<ServiceRef[]> => {
    const result = await runner.run(['systemctl', 'list-unit-files', '--type=service', '--no-legend', '--no-pager'], QUICK);
    if (result.code !== 0) throw commandFailed('systemctl list-unit-files', result);
    return parseUnitFiles(result.stdout).flatMap((f) => unitRef(f) ?? []);
  };
  const systemctl = async (verb: string, unit: string, options = QUICK): Promise<void> => {
    const result = await runner.run(['systemctl', verb, '--', unit], options);
    if (result.code !== 0) throw commandFailed(`systemctl ${verb} ${unit}`, result);
  };
  return {
    inventory,
    async list() {
      const refs = await inventory();
      if (refs.length === 0) return [];
      const result = await runner.run(['systemctl', 'show', '-p', SHOWN, '--', ...refs.map((r) => r.tag)], QUICK);
      if (result.code !== 0) throw commandFailed('systemctl show', result);
      const shown = parseShow(result.stdout);
      return refs.map((r) => {
        const props = shown.get(r.tag) ?? {};
        const active = props.ActiveState ?? '';
        return {
          name: r.name,
          description: props.Description ?? '',
          path: props.FragmentPath ?? '',
          tag: r.tag,
          enabled: r.enabled,
          running: active === 'active' || active === 'reloading',
        };
      });
    },
    async run(service, action) {
      await systemctl(action, service.handle, SLOW);
    },
    async setEnabled(service, enabled) {
      await systemctl(enabled ? 'enable' : 'disable', service.handle);
      return () => systemctl(enabled ? 'disable' : 'enable', service.handle);
    },
  };
}
