/**
 * `powerd`: the CPU power daemon. Options are validated by the contract (a value out of its range is
 * a 400 naming the option before the port is called); `set_options` merges them into the configured
 * set, writes the whole set, and restarts the daemon when it runs so the change takes effect now.
 */
import { POWERD_OPTION_RULES, powerd, type PowerdOptions } from '@hostadm/shared/api/powerd.ts';
import { implementClass } from './types.ts';

const bool = (v: boolean) => (v ? 'true' : 'false');

export const powerdImpl = implementClass(powerd, ({ platform }) => {
  const port = platform.ports.powerd;
  if (!port) return null;
  return {
    list_options: async () => ({ list_options: structuredClone(POWERD_OPTION_RULES) }),
    list_status: async () => {
      const { enabled, running } = await port.status();
      return { list_status: { enabled: bool(enabled), running: bool(running) } };
    },
    read_options: async () => ({ read_options: await port.readOptions() }),
    set_active: async () => {
      await port.setEnabled(true);
      return { set_active: { enabled: 'true' } };
    },
    set_inactive: async () => {
      await port.setEnabled(false);
      return { set_inactive: { disabled: 'true' } };
    },
    set_options: async (args) => {
      const merged: PowerdOptions = { ...(await port.readOptions()) };
      for (const [key, value] of Object.entries(args) as Array<[keyof PowerdOptions, string | undefined]>) {
        if (value !== undefined) merged[key] = value;
      }
      await port.writeOptions(merged);
      if ((await port.status()).running) await port.restart();
      return { set_options: await port.readOptions() };
    },
    start: async () => ({ start: { started: bool(await port.start()) } }),
    stop: async () => ({ stop: { stopped: bool(await port.stop()) } }),
  };
});
