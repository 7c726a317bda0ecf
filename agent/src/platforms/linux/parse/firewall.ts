/**
 * Parsers and the generated ruleset of the Linux firewall: our nftables table `inet hostadm`, the
 * open ports as its two sets `tcp_open` and `udp_open`. The services database parser is shared with
 * FreeBSD (common/services-db.ts).
 */
import { z } from 'zod';
import { uniquePorts, type PortSpec, type Protocol } from '../../ports/firewall.ts';

export { parseServicesDb } from '../../common/services-db.ts';

export const TABLE = 'hostadm';
const SET_OF: Record<Protocol, string> = { tcp: 'tcp_open', udp: 'udp_open' };

/**
 * The whole table, as `nft -f` loads it: creating then deleting the table first makes the load an
 * atomic replacement whether or not it exists. Input not opened here is dropped; replies to the
 * host's own connections, loopback and ICMP (which IPv6 needs) pass. Every value is a validated
 * port number, so nothing here comes from a client as text.
 */
export function renderRuleset(ports: readonly PortSpec[]): string {
  const set = (protocol: Protocol) => {
    const numbers = uniquePorts(ports)
      .filter((p) => p.protocol === protocol)
      .map((p) => p.number);
    const elements = numbers.length > 0 ? `\n\t\telements = { ${numbers.join(', ')} }` : '';
    return `\tset ${SET_OF[protocol]} {\n\t\ttype inet_service${elements}\n\t}`;
  };
  return [
    '#!/usr/sbin/nft -f',
    '# Written by hostadm (admin/firewall): the open ports are the sets tcp_open and udp_open.',
    '# Edits here are replaced by the next open or close.',
    `table inet ${TABLE}`,
    `delete table inet ${TABLE}`,
    `table inet ${TABLE} {`,
    set('tcp'),
    set('udp'),
    '\tchain input {',
    '\t\ttype filter hook input priority filter; policy drop;',
    '\t\tct state established,related accept',
    '\t\tct state invalid drop',
    '\t\tiif "lo" accept',
    '\t\tmeta l4proto { icmp, ipv6-icmp } accept',
    '\t\ttcp dport @tcp_open accept',
    '\t\tudp dport @udp_open accept',
    '\t}',
    '}',
    '',
  ].join('\n');
}

/** The open ports of a ruleset file we wrote (its `elements = { ... }` lines). */
export function parseRulesetPorts(text: string): PortSpec[] {
  const ports: PortSpec[] = [];
  for (const protocol of ['tcp', 'udp'] as const) {
    const block = new RegExp(`set ${SET_OF[protocol]} \\{([^{}]*(?:\\{[^{}]*\\}[^{}]*)?)\\}`).exec(text)?.[1] ?? '';
    const elements = /elements = \{([^}]*)\}/.exec(block)?.[1] ?? '';
    for (const word of elements.split(',')) {
      const number = Number(word.trim());
      if (Number.isInteger(number) && number >= 1 && number <= 65535) ports.push({ number, protocol });
    }
  }
  return uniquePorts(ports);
}

const nftJson = z.object({
  nftables: z.array(
    z.looseObject({
      set: z.looseObject({ name: z.string(), table: z.string(), elem: z.array(z.unknown()).optional() }).optional(),
    }),
  ),
});

/** `nft -j list table inet hostadm`: the elements of the two sets, as the kernel has them now. */
export function parseNftTable(json: string): PortSpec[] {
  const parsed = nftJson.parse(JSON.parse(json));
  const ports: PortSpec[] = [];
  for (const entry of parsed.nftables) {
    const set = entry.set;
    if (!set || set.table !== TABLE) continue;
    const protocol = set.name === SET_OF.tcp ? 'tcp' : set.name === SET_OF.udp ? 'udp' : null;
    if (!protocol) continue;
    for (const elem of set.elem ?? []) if (typeof elem === 'number' && elem >= 1 && elem <= 65535) ports.push({ number: elem, protocol });
  }
  return uniquePorts(ports);
}

/** nft's answer when the table does not exist: the firewall is not running. */
export function isNoSuchTable(stderr: string): boolean {
  return /No such file or directory/.test(stderr);
}

/** Whether nftables.conf includes our ruleset file (a line `include "<path>"`, not commented out). */
export function includesRuleset(conf: string, path: string): boolean {
  return conf.split('\n').some((line) => line.trim() === includeLine(path));
}

export function includeLine(path: string): string {
  return `include "${path}"`;
}

/** nftables.conf without our include line (and the comment we put above it). */
export function withoutInclude(conf: string, path: string): string {
  return conf
    .split('\n')
    .filter((line) => line.trim() !== includeLine(path) && line.trim() !== INCLUDE_COMMENT)
    .join('\n');
}

export const INCLUDE_COMMENT = '# hostadm firewall (admin/firewall enable/disable)';
