/**
 * Linux services: systemd when it is the running init (`/run/systemd/system` exists, the test
 * systemd's own sd_booted() makes), otherwise SysV init scripts driven by `service` and
 * `update-rc.d`. The check runs once, through the runner, so a test aimed at a namespace sees the
 * namespace's init.
 *
 * `tag` is what turns the service on at boot: the unit (`ssh.service`) under systemd, the init
 * script's name under SysV.
 */
import type { LinuxContext } from '../index.ts';
import type { CommandRunner } from '../../../runner/runner.ts';
import type { ServicesPort } from '../../ports/services.ts';
import { systemdServices } from './systemd.ts';
import { sysvServices } from './sysv.ts';

export function linuxServices(ctx: LinuxContext): ServicesPort {
  let backend: Promise<ServicesPort> | undefined;
  const pick = (): Promise<ServicesPort> => {
    // A failed check (runner trouble) is not cached, so the next request asks again.
    backend ??= detect(ctx.runner).catch((err: unknown) => {
      backend = undefined;
      throw err;
    });
    return backend;
  };
  return {
    list: async () => (await pick()).list(),
    inventory: async () => (await pick()).inventory(),
    run: async (service, action) => (await pick()).run(service, action),
    setEnabled: async (service, enabled) => (await pick()).setEnabled(service, enabled),
  };
}

async function detect(runner: CommandRunner): Promise<ServicesPort> {
  const probe = await runner.run(['test', '-d', '/run/systemd/system'], { timeoutMs: 10_000 });
  return probe.code === 0 ? systemdServices(runner) : sysvServices(runner);
}
