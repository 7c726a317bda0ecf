/**
 * Parsers of the FreeBSD tools the network port reads: `ifconfig -a`, and the `name: value` lines of
 * `sysctl` and `sysrc`. Pure, and tested against real ifconfig output (test/fixtures/freebsd/network).
 */
import { prefixToNetmask } from '../../common/network-words.ts';

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
