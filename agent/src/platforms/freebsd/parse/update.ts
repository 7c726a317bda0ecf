/**
 * Parsers for FreeBSD's update tools, written against their published outputs
 * (test/fixtures/freebsd/update, sources in update.source.md):
 * - `freebsd-update fetch`: `No updates needed to update system to <rel>.` or the lists
 *   `The following files will be {added,removed,updated} as part of updating to <rel>:`;
 * - `pkg upgrade -n`: `Your packages are up to date.` or the `Installed packages to be UPGRADED:`
 *   list (`\t<name>: <old> -> <new> [<repo>]`), with `New packages to be INSTALLED:` beside it;
 * - `bectl list` / `beadm list` (with or without `-H`): name, active flags (`N` now, `R` on reboot), ...;
 * - TrueOS / PC-BSD `pc-updatemanager check|pkgcheck` (`NAME:`/`TYPE:` blocks) and `branches`.
 */

export interface FreebsdUpdateFetch {
  /** The patch level the fetched files bring (`14.0-RELEASE-p5`). */
  target: string;
  /** True when `fetch` said nothing is needed. */
  current: boolean;
  files: string[];
}

const NOTHING = /^No updates needed to update system to (\S+?)\.?$/m;
const LIST = /^The following files will be (added|removed|updated) as part of updating to (\S+?):$/;

/** Null when the output says neither (the fetch did not get far enough to tell). */
export function parseFreebsdUpdateFetch(text: string): FreebsdUpdateFetch | null {
  const none = NOTHING.exec(text);
  if (none) return { target: none[1] ?? '', current: true, files: [] };
  let target = '';
  const files: string[] = [];
  let inList = false;
  for (const line of text.split('\n')) {
    const head = LIST.exec(line.trim());
    if (head) {
      target = head[2] ?? '';
      inList = true;
      continue;
    }
    if (inList && line.startsWith('/')) files.push(line.trim());
    else if (inList && line.trim() === '') inList = false;
  }
  return target ? { target, current: false, files } : null;
}

export interface PkgUpgrade {
  name: string;
  from: string;
  to: string;
}

export interface PkgDryRun {
  upgrades: PkgUpgrade[];
  installs: string[];
}

/** Null when the output is neither "up to date" nor a plan. */
export function parsePkgUpgradeDryRun(text: string): PkgDryRun | null {
  if (/^\s*Your packages are up to date\.?\s*$/m.test(text)) return { upgrades: [], installs: [] };
  const upgrades: PkgUpgrade[] = [];
  const installs: string[] = [];
  let section: 'upgrade' | 'install' | null = null;
  let planned = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (/^Installed packages to be UPGRADED:$/.test(line)) {
      section = 'upgrade';
      planned = true;
      continue;
    }
    if (/^New packages to be INSTALLED:$/.test(line)) {
      section = 'install';
      planned = true;
      continue;
    }
    if (/^The following \d+ package\(s\) will be affected/.test(line)) planned = true;
    // A blank line or another list's heading (REINSTALLED, REMOVED, ...) ends the current list.
    if (line === '' || line.endsWith(':')) {
      section = null;
      continue;
    }
    const up = /^(\S+): (\S+) -> (\S+)/.exec(line);
    if (section === 'upgrade' && up) upgrades.push({ name: up[1] ?? '', from: up[2] ?? '', to: up[3] ?? '' });
    const inst = /^(\S+): (\S+)/.exec(line);
    if (section === 'install' && inst) installs.push(`${inst[1]} ${inst[2]}`);
  }
  return planned ? { upgrades, installs } : null;
}

export interface BootEnvironment {
  name: string;
  /** Active now (`N`) or on the next boot (`R`): never destroyed. */
  active: boolean;
}

export function parseBootEnvironments(text: string): BootEnvironment[] {
  const out: BootEnvironment[] = [];
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/);
    const [name, flags = ''] = cols;
    if (!name || name === 'BE' || cols.length < 2) continue;
    out.push({ name, active: /[NR]/.test(flags) });
  }
  return out;
}

/** One update `pc-updatemanager check` or `pkgcheck` lists. */
export interface TrueosUpdate {
  name: string;
  type: string;
  /** The lines after `TYPE:` up to the next blank line (tag, version, details, date, size for patches). */
  rest: string[];
}

export function parseTrueosUpdates(text: string): TrueosUpdate[] {
  const lines = text.split('\n').map((l) => l.trim());
  const out: TrueosUpdate[] = [];
  lines.forEach((line, i) => {
    const name = /^NAME: (.*)$/.exec(line);
    const type = /^TYPE: (\S+)/.exec(lines[i + 1] ?? '');
    if (!name || !type) return;
    const rest: string[] = [];
    for (let j = i + 2; j < lines.length && lines[j] !== '' && !/^NAME: /.test(lines[j] ?? ''); j++) rest.push(lines[j] ?? '');
    out.push({ name: (name[1] ?? '').trim(), type: type[1] ?? '', rest });
  });
  return out;
}

/** `pc-updatemanager branches`: after the `-----` line, `<branch>` or `<branch> *` (the installed one), until a blank line. */
export function parseTrueosBranches(text: string): Record<string, 'active' | 'available'> {
  const out: Record<string, 'active' | 'available'> = {};
  let started = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (/^-{3,}$/.test(line)) {
      started = true;
      continue;
    }
    if (!started) continue;
    if (line === '' || line.startsWith('To change branches')) break;
    const m = /^(\S+)(\s+\*)?/.exec(line);
    if (m?.[1]) out[m[1]] = m[2] ? 'active' : 'available';
  }
  return out;
}

/** `14.1-RELEASE-p5` → `14.1-RELEASE`. */
export function releaseOf(version: string): string {
  return version.trim().replace(/-p\d+$/, '');
}

/** By major.minor; `-RELEASE` after its `-RC`/`-BETA` of the same number. */
export function compareReleases(a: string, b: string): number {
  const key = (v: string) => {
    const m = /^(\d+)\.(\d+)-(\w+?)(\d*)$/.exec(releaseOf(v));
    const stage = { ALPHA: 0, BETA: 1, RC: 2, RELEASE: 3 }[m?.[3] ?? ''] ?? -1;
    return [Number(m?.[1] ?? 0), Number(m?.[2] ?? 0), stage, Number(m?.[4] || 0)];
  };
  const [ka, kb] = [key(a), key(b)];
  for (let i = 0; i < 4; i++) if ((ka[i] ?? 0) !== (kb[i] ?? 0)) return (ka[i] ?? 0) - (kb[i] ?? 0);
  return 0;
}
