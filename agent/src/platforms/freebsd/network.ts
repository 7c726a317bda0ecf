/**
 * The `network` port on FreeBSD. The original asked the kernel directly (getifaddrs, ioctls,
 * `dev.<driver>.<unit>.%desc`); this port reads the same facts from the base tools: `ifconfig -a`
 * for the interfaces, `sysctl` for the hardware descriptions and `sysrc` for whether rc.conf
 * configures an interface by DHCP. Its parsers are in parse/network.ts.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { NetworkDevice, NetworkPort } from '../ports/network.ts';
import { describeKind } from '../common/network-words.ts';
import { parseIfconfig, parseNameValue, type IfconfigInterface } from './parse/network.ts';

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
