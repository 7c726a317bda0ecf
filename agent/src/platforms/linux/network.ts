/**
 * The `network` port on Linux: iproute2's JSON output (through the runner, so a runner aimed into a
 * network namespace lists that namespace) plus sysfs under `sysRoot` for what only sysfs knows:
 * whether a device is wireless and which driver runs it.
 */
import { runOrHostError } from '../common/host-command.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import type { NetworkDevice, NetworkPort } from '../ports/network.ts';
import { describeKind, prefixToNetmask } from '../common/network-words.ts';

/** The parts of `ip -j addr show` / `ip -j -d link show` we read. */
interface IpAddrInfo {
  family?: string;
  local?: string;
  prefixlen?: number;
  scope?: string;
  dynamic?: boolean;
}
export interface IpLink {
  ifname: string;
  flags?: string[];
  operstate?: string;
  link_type?: string;
  address?: string;
  addr_info?: IpAddrInfo[];
  linkinfo?: { info_kind?: string };
}

/** What sysfs says about one interface (read by the port, passed in so `toDevice` stays pure). */
export interface SysfsFacts {
  wireless: boolean;
  driver: string | null;
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5,}$/;
/** Interface names as the kernel allows them: no `/`, no whitespace, at most 15 bytes. */
const IFNAME = /^[^/\s]{1,15}$/;

/**
 * One device record. Multiple addresses: the first of each family as iproute2 lists them (the
 * primary address first). `is_dhcp`: an IPv4 address with a lifetime (`dynamic`), which is how the
 * kernel marks what a DHCP client (dhclient, dhcpcd, systemd-networkd, NetworkManager) configured.
 */
export function toDevice(link: IpLink, addrs: IpAddrInfo[], sys: SysfsFacts): NetworkDevice {
  const flags = link.flags ?? [];
  const v4 = addrs.filter((a) => a.family === 'inet' && a.local);
  const v6 = addrs.find((a) => a.family === 'inet6' && a.local);
  const first4 = v4[0];
  const address = (link.address ?? '').toLowerCase();
  const carrier = flags.includes('LOWER_UP') && !flags.includes('NO-CARRIER');
  const kind = link.linkinfo?.info_kind ?? link.link_type ?? '';
  return {
    name: link.ifname,
    mac: link.link_type !== 'loopback' && MAC.test(address) && /[1-9a-f]/.test(address) ? address : '',
    description: sys.driver ?? describeKind(kind),
    ipv4: first4 ? { address: first4.local as string, netmask: prefixToNetmask(first4.prefixlen ?? 32) } : null,
    // A link-local address means nothing without its interface, so it carries it (as getnameinfo writes it).
    ipv6: v6 ? (v6.scope === 'link' ? `${v6.local}%${link.ifname}` : (v6.local as string)) : null,
    up: flags.includes('UP'),
    dhcp: v4.some((a) => a.dynamic === true),
    wireless: sys.wireless,
    status: carrier ? (sys.wireless ? 'associated' : 'active') : 'no carrier',
  };
}

function readSysfs(sysRoot: string, ifname: string): SysfsFacts {
  const base = join(sysRoot, 'class', 'net', ifname);
  let driver: string | null = null;
  try {
    driver = /^DRIVER=(.+)$/m.exec(readFileSync(join(base, 'device', 'uevent'), 'utf8'))?.[1]?.trim() || null;
  } catch {
    // Virtual devices (veth, bridge, lo) have no device behind them.
  }
  // cfg80211 drivers link phy80211; older wireless-extension drivers have a `wireless` directory.
  return { wireless: existsSync(join(base, 'wireless')) || existsSync(join(base, 'phy80211')), driver };
}

async function ipJson(runner: CommandRunner, argv: string[]): Promise<IpLink[]> {
  const stdout = await runOrHostError(runner, argv, `${argv.join(' ')} failed`, { timeoutMs: 15_000 });
  try {
    const parsed: unknown = JSON.parse(stdout);
    if (!Array.isArray(parsed)) throw new Error('not an array');
    return parsed.filter((l): l is IpLink => typeof l === 'object' && l !== null && typeof (l as IpLink).ifname === 'string');
  } catch (cause) {
    throw new HostadmError('HOST_ERROR', `${argv.join(' ')} printed something other than JSON`, { cause });
  }
}

export function linuxNetwork(ctx: LinuxContext): NetworkPort {
  return {
    async listDevices() {
      const links = await ipJson(ctx.runner, ['ip', '-j', '-d', 'link', 'show']);
      const addrs = await ipJson(ctx.runner, ['ip', '-j', 'addr', 'show']);
      const addrsOf = new Map(addrs.map((l) => [l.ifname, l.addr_info ?? []]));
      return links.filter((l) => IFNAME.test(l.ifname)).map((l) => toDevice(l, addrsOf.get(l.ifname) ?? [], readSysfs(ctx.sysRoot, l.ifname)));
    },
  };
}
