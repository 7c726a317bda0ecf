/**
 * The simulated host's pointer devices (the `moused` slice): a laptop's PS/2 touchpad served by
 * moused with virtual scrolling, and a USB mouse plugged in but not served. Descriptions and parents
 * are those FreeBSD prints for such devices (the Handbook's boot messages).
 */
import { POINTER_DEFAULTS } from '@hostadm/shared/api/moused.ts';
import type { SimContext } from './index.ts';
import type { MousedPort, PointerDevice, PointerOptions } from '../ports/moused.ts';

export interface SimPointer extends PointerDevice {
  options: PointerOptions;
}

export type SimMoused = Record<string, SimPointer>;

export function seedMoused(): SimMoused {
  return {
    psm0: {
      device: 'psm0',
      description: 'PS/2 Mouse',
      driver: 'psm',
      parent: 'atkbdc0',
      active: true,
      options: { ...POINTER_DEFAULTS, virtual_scrolling: 'true' },
    },
    ums0: {
      device: 'ums0',
      description: 'Microsoft Microsoft 3-Button Mouse with IntelliEyeTM, class 0/0, rev 1.10/3.00, addr 2',
      driver: 'ums',
      parent: 'uhub1',
      active: false,
      options: { ...POINTER_DEFAULTS },
    },
  };
}

export function simMoused(ctx: SimContext): MousedPort {
  const slice = ctx.store.slice('moused', seedMoused);
  const get = (device: string): SimPointer => {
    const found = slice.get()[device];
    // The handler resolves names through listDevices() first; getting here means a bug, not a client error.
    if (!found) throw new Error(`sim moused: no device ${device}`);
    return found;
  };
  const setActive = (device: string, active: boolean) =>
    slice.update((draft) => {
      (draft[device] as SimPointer).active = active;
    });
  return {
    async listDevices() {
      return Object.values(slice.get()).map(({ options: _options, ...device }) => ({ ...device }));
    },
    async readOptions(device) {
      return { ...get(device).options };
    },
    async writeOptions(device, options) {
      get(device);
      slice.update((draft) => {
        (draft[device] as SimPointer).options = { ...options };
      });
    },
    async start(device) {
      get(device);
      setActive(device, true);
    },
    async stop(device) {
      get(device);
      setActive(device, false);
    },
    async restart(device) {
      get(device);
      setActive(device, true);
    },
  };
}
