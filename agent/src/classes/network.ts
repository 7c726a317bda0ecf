/** `network`: the host's network devices, keyed by name directly in `args` (as the spec places them). */
import { network } from '@hostadm/shared/api/network.ts';
import { implementClass } from './types.ts';
import type { NetworkDevice } from '../platforms/ports/network.ts';

const bool = (value: boolean) => (value ? 'true' : 'false') as 'true' | 'false';

/** The spec's record: every value a string; an interface without IPv4 shows `0.0.0.0` for both address and mask. */
function toRecord(device: NetworkDevice) {
  return {
    MAC: device.mac,
    description: device.description,
    ipv4: device.ipv4?.address ?? '0.0.0.0',
    ipv6: device.ipv6 ?? '',
    is_active: bool(device.up),
    is_dhcp: bool(device.dhcp),
    is_wireless: bool(device.wireless),
    netmask: device.ipv4?.netmask ?? '0.0.0.0',
    status: device.status,
  };
}

export const networkImpl = implementClass(network, (services) => {
  const port = services.platform.ports.network;
  if (!port) return null;
  return {
    async 'list-devices'() {
      const devices = await port.listDevices();
      return Object.fromEntries(devices.map((d) => [d.name, toRecord(d)]));
    },
  };
});
