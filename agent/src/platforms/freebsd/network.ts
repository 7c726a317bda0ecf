/**
 * The `network` port on FreeBSD. The original asked the kernel directly (getifaddrs, ioctls,
 * `dev.<driver>.<unit>.%desc`); this port reads the same facts from the base tools: `ifconfig -a`
 * for the interfaces, `sysctl` for the hardware descriptions and `sysrc` for whether rc.conf
 * configures an interface by DHCP. Parsers are pure and tested against real ifconfig output.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { NetworkDevice, NetworkPort } from '../ports/network.ts';
import { describeKind, prefixToNetmask } from '../common/network-words.ts';

export interface IfconfigInterface {
  name: string;
  flags: string[];
  ether: string | null;
  inet: Array<{ address: string; netmask: string }>;
  inet6: string[];
  media: string | null;
  status: string | null;
  groups: string[];
  /** The device behind a wlan(4) or ue(4) interface (its `parent interface:` line). */
  parent: string | null;
}

/** `0xffffff00` / `255.255.255.0` → dotted; anything else → null. */
export function dottedNetmask(value: string): string | null {
  if (/^0x[0-9a-f]{8}$/i.test(value)) {
    const n = parseInt(value.slice(2), 16);
    return [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
  }
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(value) ? value : null;
}

/** Splits `ifconfig -a` into interfaces: a header `name: flags=<hex><LIST>` and indented detail lines. */
export function parseIfconfig(output: string): IfconfigInterface[] {
  const out: IfconfigInterface[] = [];
  let cur: IfconfigInterface | null = null;
  for (const raw of output.split('\n')) {
    const header = /^([^\s:]+): flags=[0-9a-f]+<([^>]*)>/.exec(raw);
    if (header) {
      const flags = (header[2] as string).split(',').filter(Boolean);
      cur = { name: header[1] as string, flags, ether: null, inet: [], inet6: [], media: null, status: null, groups: [], parent: null };
      out.push(cur);
      continue;
    }
    if (!cur || !/^\s/.test(raw)) continue;
    const line = raw.trim();
    const words = line.split(/\s+/);
    const key = words[0];
    if (key === 'ether' && words[1]) cur.ether ??= words[1].toLowerCase();
    else if (key === 'inet' && words[1]) {
      // `inet A netmask 0x..`, `inet A --> B netmask 0x..` (point-to-point) or `inet A/24` (inet:cidr).
      const [address, prefix] = words[1].split('/') as [string, string | undefined];
      const maskAt = words.indexOf('netmask');
      const netmask = prefix !== undefined ? prefixToNetmask(Number(prefix)) : maskAt > 0 ? dottedNetmask(words[maskAt + 1] ?? '') : null;
      cur.inet.push({ address, netmask: netmask ?? '255.255.255.255' });
    } else if (key === 'inet6' && words[1]) cur.inet6.push(words[1].split('/')[0] as string);
    else if (line.startsWith('media:')) cur.media = line.slice('media:'.length).trim();
    else if (line.startsWith('status:')) cur.status = line.slice('status:'.length).trim();
    else if (line.startsWith('groups:')) cur.groups = line.slice('groups:'.length).trim().split(/\s+/).filter(Boolean);
    else if (line.startsWith('parent interface:')) cur.parent = line.slice('parent interface:'.length).trim() || null;
  }
  return out;
}

/** `name: value` lines, as both `sysctl` (without -n) and `sysrc` print them. */
export function parseNameValue(output: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of output.split('\n')) {
    const at = line.indexOf(': ');
    if (at > 0) map.set(line.slice(0, at), line.slice(at + 2).trim());
    else if (line.endsWith(':')) map.set(line.slice(0, -1), '');
  }
  return map;
}

/** Interface names that may go into sysctl OIDs and rc.conf variable names. */
const SAFE_IFNAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const DRIVER_UNIT = /^([a-z_]+?)(\d+)$/;

const descOid = (ifname: string) => {
  const m = DRIVER_UNIT.exec(ifname);
  return m ? `dev.${m[1]}.${m[2]}.%desc` : null;
};
/** rc.conf names `ifconfig_<if>` with `.`, `-`, `/`, `+` turned into `_` (network.subr's ltr). */
export const rcVar = (ifname: string) => `ifconfig_${ifname.replace(/[.\-/+]/g, '_')}`;
/** DHCP, SYNCDHCP or NOSYNCDHCP anywhere among the words, as rc.d/netif understands them. */
export const isDhcpConfig = (value: string | undefined) => value !== undefined && /(^|\s)(NOSYNC|SYNC)?DHCP(\s|$)/i.test(value);

/** Builds the records from parsed ifconfig output, descriptions (by interface) and rc.conf values. */
export function toDevices(ifaces: IfconfigInterface[], descriptions: ReadonlyMap<string, string>, rc: ReadonlyMap<string, string>): NetworkDevice[] {
  return ifaces.map((i) => {
    const wireless = i.groups.includes('wlan') || (i.media ?? '').startsWith('IEEE 802.11');
    const driver = DRIVER_UNIT.exec(i.name)?.[1] ?? i.name;
    const carrier = i.flags.includes('LOWER_UP') || (i.flags.includes('UP') && i.flags.includes('RUNNING'));
    const first = i.inet[0];
    return {
      name: i.name,
      mac: i.ether ?? '',
      description: descriptions.get(i.name) ?? describeKind(i.groups[0] ?? driver),
      ipv4: first ? { address: first.address, netmask: first.netmask } : null,
      ipv6: i.inet6[0] ?? null,
      up: i.flags.includes('UP'),
      dhcp: isDhcpConfig(rc.get(rcVar(i.name))),
      wireless,
      // Interfaces without media (lo0, tun) print no status line; their flags tell whether they run.
      status: i.status ?? (carrier ? 'active' : 'no carrier'),
    };
  });
}

export function freebsdNetwork(ctx: FreebsdContext): NetworkPort {
  const { runner } = ctx;
  const sysctl = async (oids: string[]) => {
    if (oids.length === 0) return new Map<string, string>();
    // -i: an OID that does not exist (pseudo-interfaces have no dev.* node) is skipped, not an error.
    const result = await runner.run(['sysctl', '-i', ...oids], { timeoutMs: 15_000 });
    return parseNameValue(result.stdout);
  };
  return {
    async listDevices() {
      const shown = await runner.run(['ifconfig', '-a'], { timeoutMs: 15_000 });
      if (shown.code !== 0) throw new HostadmError('HOST_ERROR', `ifconfig -a failed: ${shown.stderr.trim()}`);
      const ifaces = parseIfconfig(shown.stdout).filter((i) => SAFE_IFNAME.test(i.name));

      // Descriptions: the driver's %desc; a wlan's is its radio's (net.wlan.N.%parent where ifconfig does not say).
      const radio = new Map<string, string>();
      const oids: string[] = [];
      for (const i of ifaces) {
        const wlan = /^wlan(\d+)$/.exec(i.name);
        // wlan(4) and ue(4) interfaces name the device they run on; its driver has the description.
        if (i.parent && SAFE_IFNAME.test(i.parent)) radio.set(i.name, i.parent);
        else if (wlan) oids.push(`net.wlan.${wlan[1]}.%parent`);
        const own = wlan && !radio.has(i.name) ? null : descOid(radio.get(i.name) ?? i.name);
        if (own) oids.push(own);
      }
      const known = await sysctl([...new Set(oids)]);
      const learned: string[] = [];
      for (const i of ifaces) {
        const wlan = /^wlan(\d+)$/.exec(i.name);
        const parent = wlan && !radio.has(i.name) ? known.get(`net.wlan.${wlan[1]}.%parent`) : undefined;
        if (!parent || !SAFE_IFNAME.test(parent)) continue;
        radio.set(i.name, parent);
        const oid = descOid(parent);
        if (oid && !known.has(oid)) learned.push(oid);
      }
      for (const [oid, text] of await sysctl([...new Set(learned)])) known.set(oid, text);
      const descriptions = new Map<string, string>();
      for (const i of ifaces) {
        const oid = descOid(radio.get(i.name) ?? i.name);
        const text = oid ? known.get(oid) : undefined;
        if (text) descriptions.set(i.name, text);
      }

      const rcResult = await runner.run(['sysrc', '-i', ...ifaces.map((i) => rcVar(i.name))], { timeoutMs: 15_000 });
      if (rcResult.code !== 0 && rcResult.stdout === '' && rcResult.stderr.trim() !== '') {
        throw new HostadmError('HOST_ERROR', `sysrc failed: ${rcResult.stderr.trim()}`);
      }
      return toDevices(ifaces, descriptions, parseNameValue(rcResult.stdout));
    },
  };
}
