/** Netmasks and interface-kind words the FreeBSD and Linux `network` ports share. */

/** `24` → `255.255.255.0`. */
export function prefixToNetmask(prefix: number): string {
  const bits = Math.max(0, Math.min(32, prefix));
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return [24, 16, 8, 0].map((s) => (mask >>> s) & 0xff).join('.');
}

/**
 * Words for interfaces that have no hardware description (no driver `%desc`, no device in sysfs),
 * by the kind the platform reports (FreeBSD interface group or driver name, Linux link kind).
 */
const KIND_DESCRIPTIONS: Readonly<Record<string, string>> = {
  lo: 'Loopback interface',
  loopback: 'Loopback interface',
  bridge: 'Ethernet bridge',
  epair: 'Virtual Ethernet pair',
  veth: 'Virtual Ethernet pair',
  tap: 'Virtual Ethernet (tap)',
  tun: 'IP tunnel (tun)',
  vlan: 'VLAN',
  lagg: 'Link aggregation',
  bond: 'Link aggregation',
  pflog: 'Packet filter log',
  pfsync: 'Packet filter state sync',
  wg: 'WireGuard tunnel',
  wireguard: 'WireGuard tunnel',
  gif: 'Generic tunnel',
  gre: 'GRE tunnel',
  enc: 'IPsec encapsulation',
  dummy: 'Dummy interface',
  ifb: 'Intermediate functional block',
  macvlan: 'MAC VLAN',
  ipvlan: 'IP VLAN',
  vxlan: 'VXLAN',
};

export function describeKind(kind: string): string {
  return Object.hasOwn(KIND_DESCRIPTIONS, kind) ? (KIND_DESCRIPTIONS[kind] as string) : kind;
}
