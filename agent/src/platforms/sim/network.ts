/**
 * The `network` port of the simulated host: a FreeBSD 14 laptop-like machine with a wired em0 on
 * DHCP, the loopback, and a wlan0 (on an iwm0 card) that is not associated. Hardware addresses are
 * drawn once, when the sim host is created, and persist with it (the `network` slice).
 */
import { randomBytes } from 'node:crypto';
import type { SimContext } from './index.ts';
import type { NetworkDevice, NetworkPort } from '../ports/network.ts';

export interface SimNetwork {
  devices: NetworkDevice[];
}

/** A vendor prefix plus three random bytes, like the card a real host would carry. */
function mac(oui: string): string {
  return [oui, ...[...randomBytes(3)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

export function seedNetwork(): SimNetwork {
  const emMac = mac('00:1f:16');
  // Link-local address from the MAC (modified EUI-64), as the kernel assigns it.
  const [a, b, c, d, e, f] = emMac.split(':').map((x) => parseInt(x, 16)) as [number, number, number, number, number, number];
  const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  const linkLocal = `fe80::${hex(a ^ 0x02, b)}:${hex(c, 0xff)}:${hex(0xfe, d)}:${hex(e, f)}%em0`;
  return {
    devices: [
      {
        name: 'em0',
        mac: emMac,
        description: 'Intel(R) PRO/1000 Network Connection 7.6.1-k',
        ipv4: { address: '192.168.1.23', netmask: '255.255.255.0' },
        ipv6: linkLocal,
        up: true,
        dhcp: true,
        wireless: false,
        status: 'active',
      },
      {
        name: 'lo0',
        mac: '',
        description: 'Loopback interface',
        ipv4: { address: '127.0.0.1', netmask: '255.0.0.0' },
        ipv6: '::1',
        up: true,
        dhcp: false,
        wireless: false,
        status: 'active',
      },
      {
        name: 'wlan0',
        mac: mac('34:f3:9a'),
        description: 'Intel(R) Dual Band Wireless AC 8265',
        ipv4: null,
        ipv6: null,
        up: true,
        dhcp: true,
        wireless: true,
        status: 'no carrier',
      },
    ],
  };
}

export function simNetwork(ctx: SimContext): NetworkPort {
  const state = ctx.store.slice('network', seedNetwork);
  return {
    async listDevices() {
      return structuredClone(state.get().devices);
    },
  };
}
