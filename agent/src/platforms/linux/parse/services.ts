/**
 * Parsers of the Linux service tools: systemd's `systemctl list-unit-files` and `systemctl show`, and
 * for SysV init the `find` of the rc?.d links and the `grep` of the scripts' LSB descriptions. Pure.
 */
import { posix } from 'node:path';

export interface UnitFile {
  unit: string;
  state: string;
}

/** `systemctl list-unit-files --no-legend`: `UNIT FILE  STATE  [VENDOR PRESET]` columns. */
export function parseUnitFiles(output: string): UnitFile[] {
  const units: UnitFile[] = [];
  for (const line of output.split('\n')) {
    const [unit, state] = line.trim().split(/\s+/);
    if (unit && state && unit.endsWith('.service')) units.push({ unit, state });
  }
  return units;
}

/** `systemctl show -p ...` for several units: `Key=Value` blocks, one per unit, blank lines between. */
export function parseShow(output: string): Map<string, Record<string, string>> {
  const byId = new Map<string, Record<string, string>>();
  for (const block of output.split(/\n\s*\n/)) {
    const props: Record<string, string> = {};
    for (const line of block.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) props[line.slice(0, eq)] = line.slice(eq + 1);
    }
    if (props.Id) byId.set(props.Id, props);
  }
  return byId;
}

export interface RcLink {
  dir: string;
  start: boolean;
  name: string;
}

/** `find /etc/rc?.d -name '[SK][0-9][0-9]*'`: the links, with the script each one points at by name. */
export function parseRcLinks(findOutput: string): RcLink[] {
  const links: RcLink[] = [];
  for (const line of findOutput.split('\n')) {
    const m = /^(\/etc\/rc[0-6S]\.d)\/([SK])\d\d(.+)$/.exec(line.trim());
    if (m) links.push({ dir: m[1] as string, start: m[2] === 'S', name: m[3] as string });
  }
  return links;
}

/** `grep -H '^# Short-Description:'`: the LSB description of each script, by name. */
export function parseShortDescriptions(grepOutput: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of grepOutput.split('\n')) {
    const m = /^(.*?):# Short-Description:\s*(.*)$/.exec(line);
    if (m && !out.has(posix.basename(m[1] as string))) out.set(posix.basename(m[1] as string), (m[2] as string).trim());
  }
  return out;
}
