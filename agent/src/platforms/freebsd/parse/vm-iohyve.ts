/**
 * What iohyve (sysutils/iohyve, https://github.com/pr1ntf/iohyve) prints, read for the vm class when
 * vm-bhyve is absent. Formats from iohyve 0.7.9's lib/ioh-guest, ioh-disk, ioh-iso and ioh-zfs; the
 * fixtures and their sources are in test/fixtures/freebsd/vm/iohyve.source.md.
 */

export interface IohyveGuest {
  name: string;
  vmm: boolean;
  running: boolean;
  rcboot: boolean;
  description: string;
}

/**
 * `iohyve list`: `^`-separated fields through `column -ts^`, so columns start where the header's
 * words do (no header word holds a space) and only the last, `Description` (`date` output by
 * default), holds spaces.
 */
export function parseIohyveList(output: string): IohyveGuest[] {
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  const header = lines.shift() ?? '';
  const names = ['Guest', 'VMM?', 'Running', 'rcboot?', 'Description'];
  const starts = names.map((n) => header.search(new RegExp(`(^|\\s)${n.replace('?', '\\?')}(\\s|$)`)));
  if (starts.some((s) => s < 0)) throw new Error(`iohyve list: unexpected header ${JSON.stringify(header)}`);
  const at = starts.map((s, i) => (i === 0 || s === 0 ? s : s + 1));
  return lines.map((line) => {
    const cell = (i: number) => line.slice(at[i], i + 1 < at.length ? at[i + 1] : undefined).trim();
    const [name, vmm, running, rcboot] = [cell(0), cell(1), cell(2), cell(3)];
    if (name === '' || ![vmm, running, rcboot].every((v) => v === 'YES' || v === 'NO')) throw new Error(`iohyve list: cannot read ${JSON.stringify(line)}`);
    return { name, vmm: vmm === 'YES', running: running === 'YES', rcboot: rcboot === 'YES', description: cell(4) };
  });
}

/**
 * `iohyve getall <name>`: a `Getting <name> ...` line, then `property value` rows (zfs get's columns
 * with the `iohyve:` prefix removed); a value may hold spaces (the description).
 */
export function parseIohyveGetall(output: string): Record<string, string> {
  const props: Record<string, string> = {};
  for (const line of output.split('\n')) {
    if (line.trim() === '' || line.startsWith('Getting ')) continue;
    const match = /^(\S+)\s+(.*)$/.exec(line.trimEnd());
    if (match) props[match[1] as string] = (match[2] as string).trim();
    else props[line.trim()] = '';
  }
  return props;
}

/** `iohyve disks <name>`: `Listing disks for <name>...`, a `diskN Size` header, then `disk<N> <volsize>` rows. */
export function parseIohyveDisks(output: string): Record<string, string> {
  const disks: Record<string, string> = {};
  for (const line of output.split('\n')) {
    const match = /^(disk\d+)\s+(\S+)\s*$/.exec(line.trim());
    if (match) disks[match[1] as string] = match[2] as string;
  }
  return disks;
}

/** `iohyve isolist`: `Listing ISO's...`, then one ISO name a line (the datasets under `<pool>/iohyve/ISO`). */
export function parseIohyveIsoList(output: string): string[] {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith("Listing ISO's"));
}

export interface IohyveRoot {
  /** `<pool>/iohyve`. */
  dataset: string;
  mountpoint: string;
}

/**
 * iohyve's primary root in `zfs list -H -o name,mountpoint -t filesystem`: the `<pool>/iohyve` that
 * holds `ISO` (a second pool gets only guests), or null before `iohyve setup pool=`.
 */
export function parseIohyveRoot(output: string): IohyveRoot | null {
  const rows = output
    .split('\n')
    .filter((l) => l.includes('\t'))
    .map((l) => l.split('\t') as [string, string]);
  const iso = rows.find(([name]) => /^[^/]+\/iohyve\/ISO$/.test(name));
  if (!iso) return null;
  const dataset = iso[0].slice(0, -'/ISO'.length);
  const mountpoint = rows.find(([name]) => name === dataset)?.[1] ?? '/iohyve';
  return { dataset, mountpoint };
}
