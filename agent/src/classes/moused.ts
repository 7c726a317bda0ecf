/**
 * `moused`: pointer devices and their mouse daemons. A device a request names must be one the host
 * has (else a 400 naming it, before anything runs); options are validated by the contract, merged
 * into the device's configured set, written whole, and a running daemon is restarted to take them.
 */
import { MOUSED_OPTION_RULES, moused, type PointerOptions } from '@hostadm/shared/api/moused.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { MousedPort, PointerDevice } from '../platforms/ports/moused.ts';

export const mousedImpl = implementClass(moused, ({ platform }) => {
  const port = platform.ports.moused;
  if (!port) return null;
  return {
    list_devices: async () => {
      const out: Record<string, { description: string; device: string; driver: string; parent: string; active: 'true' | 'false' }> = {};
      for (const d of await sorted(port)) {
        out[d.device] = { description: d.description, device: d.device, driver: d.driver, parent: d.parent, active: d.active ? 'true' : 'false' };
      }
      return { list_devices: out };
    },
    list_devices_active: async () => ({ list_devices_active: { active_devices: (await sorted(port)).filter((d) => d.active).map((d) => d.device) } }),
    list_device_options: async () => ({ list_device_options: structuredClone(MOUSED_OPTION_RULES) }),
    read_device_options: async ({ device }) => {
      await resolve(port, device);
      return { read_device_options: { ...(await port.readOptions(device)), device } };
    },
    set_device_active: async ({ device }) => {
      await resolve(port, device);
      await port.start(device);
      return { set_device_active: { started: device } };
    },
    set_device_inactive: async ({ device }) => {
      await resolve(port, device);
      await port.stop(device);
      return { set_device_inactive: { stopped: device } };
    },
    set_device_options: async ({ device, ...options }) => {
      const target = await resolve(port, device);
      const merged: PointerOptions = { ...(await port.readOptions(device)) };
      // Each value was parsed by its own option's schema, so it fits the record's field of that name.
      const changes = Object.entries(options).filter(([, value]) => value !== undefined);
      Object.assign(merged, Object.fromEntries(changes));
      await port.writeOptions(device, merged);
      if (target.active) await port.restart(device);
      return { set_device_options: { ...(await port.readOptions(device)), device } };
    },
  };
});

async function sorted(port: MousedPort): Promise<PointerDevice[]> {
  return (await port.listDevices()).sort((a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }));
}

async function resolve(port: MousedPort, device: string): Promise<PointerDevice> {
  const found = (await port.listDevices()).find((d) => d.device === device);
  if (!found)
    throw badRequest(`device: no pointer device ${device} on this host; nothing was changed`, [
      { field: 'device', message: `no pointer device ${device} on this host` },
    ]);
  return found;
}
