/**
 * Parsers for the FreeBSD firewall: rc.conf values as `sysrc -n` prints them, the ipfw switch as
 * `sysctl -n` prints it, and `firewall_myservices` as rc.firewall's `workstation` type reads it.
 * The services database parser is shared with Linux (common/services-db.ts).
 */
import type { KnownPort, PortSpec } from '../../ports/firewall.ts';

export { parseServicesDb } from '../../common/services-db.ts';

/** The rc.conf variables the firewall reads, in the order they are asked of `sysrc -n`. */
export const FIREWALL_VARS = ['firewall_enable', 'firewall_type', 'firewall_myservices', 'firewall_allowservices'] as const;
export type FirewallVars = Record<(typeof FIREWALL_VARS)[number], string>;

/** `sysrc -n a b c` prints one value a line, in the order asked (an empty value is an empty line). */
export function parseSysrcValues(stdout: string): FirewallVars {
  const lines = stdout.replace(/\n$/, '').split('\n');
  const out = {} as FirewallVars;
  FIREWALL_VARS.forEach((name, i) => {
    out[name] = (lines[i] ?? '').trim();
  });
  return out;
}

/** rc.subr's checkyesno: YES, TRUE, ON and 1 in any case are yes. */
export function isYes(value: string): boolean {
  return /^(yes|true|on|1)$/i.test(value.trim());
}

/**
 * `sysctl -n net.inet.ip.fw.enable`: `1` when ipfw filters. Without the ipfw module the oid does
 * not exist (sysctl exits 1, "unknown oid"), which is not running either.
 */
export function parseFwEnable(code: number | null, stdout: string): boolean {
  return code === 0 && stdout.trim() === '1';
}

export function isUnknownOid(stderr: string): boolean {
  return /unknown oid/.test(stderr);
}

/**
 * `firewall_myservices` as rc.firewall's workstation type reads it: words `<port>`, `<port>/tcp`,
 * `<port>/udp` or a service name in place of the port (`ssh/tcp`, looked up in the services
 * database). A bare port is tcp (what rc.firewall does). Words it would not understand are kept
 * apart, so rewriting the list never drops them.
 */
export function parseMyServices(value: string, known: readonly KnownPort[] = []): { ports: PortSpec[]; other: string[] } {
  const ports: PortSpec[] = [];
  const other: string[] = [];
  for (const word of value.split(/\s+/).filter(Boolean)) {
    const match = /^([^/]+)(?:\/(tcp|udp))?$/i.exec(word);
    const protocol = (match?.[2]?.toLowerCase() ?? 'tcp') as 'tcp' | 'udp';
    const name = match?.[1] ?? '';
    let number = /^\d{1,5}$/.test(name) ? Number(name) : Number.NaN;
    if (Number.isNaN(number) && match) {
      const entry = known.find((k) => k.name === name && k.port.endsWith(`/${protocol}`));
      if (entry) number = Number(entry.port.split('/')[0]);
    }
    if (number >= 1 && number <= 65535) ports.push({ number, protocol });
    else other.push(word);
  }
  return { ports, other };
}

/** Whether the list names a service instead of a port, so the services database is needed to read it. */
export function namesServices(value: string): boolean {
  return value.split(/\s+/).some((w) => w !== '' && !/^\d+(\/(tcp|udp))?$/i.test(w));
}
