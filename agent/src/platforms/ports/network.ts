/**
 * The `network` port: the host's network interfaces as domain data. The handler turns them into
 * the spec's string-valued records.
 */

export interface NetworkDevice {
  name: string;
  /** Lower-case colon-separated hardware address, '' when the interface has none (loopback, tunnels). */
  mac: string;
  description: string;
  /** The interface's first IPv4 address and its netmask (dotted), or null when it has none. */
  ipv4: { address: string; netmask: string } | null;
  /** The first IPv6 address as the platform lists it; link-local ones carry `%<interface>`. */
  ipv6: string | null;
  /** The interface is administratively up (IFF_UP). */
  up: boolean;
  dhcp: boolean;
  wireless: boolean;
  /** `active`, `associated` (wireless with a link), `no carrier`, or what the platform's own tool says. */
  status: string;
}

export interface NetworkPort {
  listDevices(): Promise<NetworkDevice[]>;
}
