/**
 * Parsers of vm-bhyve's output (test/fixtures/freebsd/vm, sources in vm.source.md). `vm list` and
 * `vm switch list` are column(1) tables whose only multi-word values are `AUTO` (`Yes [2]`), `STATE`
 * (`Running (2796)`) and the last column `PORTS`, so rows are read as words from both ends: older
 * layouts (a `GUEST` column, `AUTOSTART`) parse the same way. `vm info` is `key: value` lines with a
 * block per virtual disk. Guest configurations are rc-style `key="value"` files.
 */

export interface BhyveGuest {
  name: string;
  /** Columns between NAME and AUTO(START), by header (`DATASTORE`, `LOADER`, `CPU`, `MEMORY`, `VNC`, `GUEST`). */
  columns: Record<string, string>;
  /** Position in vm_list when it starts at boot, else null. */
  autostart: number | null;
  /** `Running`, `Stopped`, `Locked`, ... */
  state: string;
  /** The bhyve pid (`Running (2796)`), or the host holding the lock (`Locked (host)`). */
  stateDetail: string | null;
}

export function parseVmList(output: string): BhyveGuest[] {
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  const header = lines.shift()?.trim().split(/\s+/) ?? [];
  if (header[0] !== 'NAME' || header.at(-1) !== 'STATE') throw new Error(`vm list: unexpected header ${JSON.stringify(header.join(' '))}`);
  const middle = header.slice(1, -2);
  return lines.map((line) => {
    const words = line.trim().split(/\s+/);
    const name = words.shift() as string;
    let stateDetail: string | null = null;
    if (words.length > 1 && /^\(.*\)$/.test(words.at(-1) as string)) stateDetail = (words.pop() as string).slice(1, -1);
    const state = words.pop() ?? '';
    let autostart: number | null = null;
    const order = /^\[(\d+)\]$/.exec(words.at(-1) ?? '');
    if (order) {
      words.pop();
      autostart = Number(order[1]);
    }
    const auto = words.pop();
    if (auto === undefined || words.length !== middle.length) throw new Error(`vm list: cannot read ${JSON.stringify(line)}`);
    if (auto === 'Yes' && autostart === null) autostart = 0;
    const columns: Record<string, string> = {};
    for (const [i, key] of middle.entries()) columns[key] = words[i] as string;
    return { name, columns, autostart, state, stateDetail };
  });
}

export interface BhyveDisk {
  /** `disk<N>`. */
  name: string;
  /** `file`, `zvol`, `sparse-zvol`, `custom`, `iscsi`. */
  deviceType: string;
  path: string;
  /** Exact size in bytes, or null when vm-bhyve could not read it. */
  bytes: number | null;
}

export interface BhyveInfo {
  name: string;
  fields: Record<string, string>;
  disks: BhyveDisk[];
}

/** `vm info <name>`: the guest's own `key: value` lines and its virtual disks. */
export function parseVmInfo(output: string): BhyveInfo {
  const name = /^Virtual Machine: (.+)$/m.exec(output)?.[1]?.trim();
  if (!name) throw new Error('vm info: no "Virtual Machine:" line');
  const fields: Record<string, string> = {};
  const disks: BhyveDisk[] = [];
  let block: string | null = null;
  let disk: Record<string, string> = {};
  const closeDisk = () => {
    if (block !== 'virtual-disk' || disk.number === undefined) return;
    const bytes = /^(\d+)\b/.exec(disk['bytes-size'] ?? '');
    disks.push({
      name: `disk${disk.number}`,
      deviceType: disk['device-type'] ?? 'file',
      path: disk['system-path'] ?? '-',
      bytes: bytes ? Number(bytes[1]) : null,
    });
  };
  for (const line of output.split('\n')) {
    const top = /^ {2}(\S[^:]*?)(?::\s?(.*))?$/.exec(line);
    if (top) {
      closeDisk();
      if (top[2] === undefined) {
        block = top[1] as string;
        disk = {};
      } else {
        block = null;
        fields[top[1] as string] = top[2];
      }
      continue;
    }
    const inner = /^ {4}([a-z-]+):\s?(.*)$/.exec(line);
    if (inner && block === 'virtual-disk') disk[inner[1] as string] = inner[2] as string;
  }
  closeDisk();
  return { name, fields, disks };
}

export interface BhyveSwitch {
  name: string;
  type: string;
  iface: string;
  ports: string[];
}

export function parseSwitchList(output: string): BhyveSwitch[] {
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  const header = lines.shift()?.trim().split(/\s+/) ?? [];
  if (header[0] !== 'NAME' || header.at(-1) !== 'PORTS') throw new Error(`vm switch list: unexpected header ${JSON.stringify(header.join(' '))}`);
  return lines.map((line) => {
    const words = line.trim().split(/\s+/);
    const ports = words.slice(header.length - 1);
    return { name: words[0] as string, type: words[1] ?? '', iface: words[2] ?? '-', ports: ports.length === 1 && ports[0] === '-' ? [] : ports };
  });
}

/** `vm iso` / `vm img`: the files of the default datastore (other datastores are listed apart). */
export function parseIsoList(output: string): string[] {
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  if (!/^DATASTORE\s+FILENAME$/.test(lines.shift()?.trim() ?? '')) throw new Error('vm iso: unexpected header');
  return lines
    .map((l) => /^(\S+)\s+(.+)$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null && m[1] === 'default')
    .map((m) => m[2] as string);
}

/** An rc-style file as sysrc(8) writes it: `key="value"` or `key=value`, `#` comments. */
export function parseRcFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|'([^']*)'|([^\s#]*))/.exec(line);
    if (match) out[match[1] as string] = match[2] ?? match[3] ?? match[4] ?? '';
  }
  return out;
}
