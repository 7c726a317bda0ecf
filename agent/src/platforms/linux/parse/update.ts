/**
 * Parsers for what apt and the distribution say about updates:
 * - `apt-get -s upgrade` (and `dist-upgrade`): one `Inst <pkg> [<old>] (<new> <archives> [<arch>])`
 *   line per package, archives as `<Origin>:<Version>/<suite>` joined by `, ` (apt-pkg's
 *   simulation output; `[<old>]` is absent for a new package);
 * - `apt-get indextargets`: one deb822 record per index, with `Release` (the suite as written in the
 *   sources), `Origin` and `Codename` (from the repository's Release file) and `Sourcesentry`
 *   (`<file>:<line>`);
 * - distro-info-data's `/usr/share/distro-info/<id>.csv` (`version,codename,series,created,release,eol,...`).
 */

export interface AptUpgrade {
  name: string;
  /** Installed version; empty for a package the upgrade would newly install. */
  from: string;
  to: string;
  archives: string[];
  /** From a security archive (`<codename>-security`, `Debian-Security:` origins). */
  security: boolean;
}

const INST = /^Inst (\S+)(?: \[([^\]]*)\])? \((\S+) (.*?)(?: \[[^\]]*\])?\)/;

export function parseAptSimulation(text: string): AptUpgrade[] {
  const out: AptUpgrade[] = [];
  for (const line of text.split('\n')) {
    const m = INST.exec(line);
    if (!m) continue;
    const archives = (m[4] ?? '')
      .split(', ')
      .map((a) => a.trim())
      .filter(Boolean);
    out.push({
      name: m[1] ?? '',
      from: m[2] ?? '',
      to: m[3] ?? '',
      archives,
      security: archives.some((a) => /-security\b/.test(a) || /^[^:]*Security:/i.test(a)),
    });
  }
  return out;
}

export interface IndexTarget {
  /** The suite as the sources entry names it (`bookworm`, `bookworm-security`, `./` for a flat repository). */
  release: string;
  origin: string;
  codename: string;
  /** The file holding the sources entry. */
  sourcesFile: string;
}

export function parseIndexTargets(text: string): IndexTarget[] {
  const out: IndexTarget[] = [];
  for (const record of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    for (const line of record.split('\n')) {
      const i = line.indexOf(': ');
      if (i > 0) fields.set(line.slice(0, i), line.slice(i + 2).trim());
      else if (line.endsWith(':')) fields.set(line.slice(0, -1), '');
    }
    if (!fields.has('Release') && !fields.has('Sourcesentry')) continue;
    const entry = fields.get('Sourcesentry') ?? '';
    out.push({
      release: fields.get('Release') ?? '',
      origin: fields.get('Origin') ?? '',
      codename: fields.get('Codename') ?? '',
      sourcesFile: entry.replace(/:\d+$/, ''),
    });
  }
  return out;
}

/** `bookworm-security` → `bookworm`: the release a pocket belongs to. */
export function releaseOfSuite(suite: string): string {
  return suite.replace(/-(security|updates|backports|backports-sloppy|proposed-updates|proposed)$/, '');
}

export interface DistroRelease {
  version: string;
  series: string;
  /** Release date `YYYY-MM-DD`; empty for one not released yet (testing, sid). */
  released: string;
}

export function parseDistroInfo(csv: string): DistroRelease[] {
  const [header, ...rows] = csv.split('\n').filter((l) => l.trim() !== '');
  const cols = (header ?? '').split(',');
  const at = (name: string) => cols.indexOf(name);
  const [iv, is, ir] = [at('version'), at('series'), at('release')];
  if (is < 0 || ir < 0) return [];
  return rows.map((row) => {
    const cells = row.split(',');
    return { version: cells[iv] ?? '', series: cells[is] ?? '', released: cells[ir] ?? '' };
  });
}

/**
 * Releases one may switch to from `active`: released by `today` and later than it in the table (the
 * table is in release order). Unknown `active`: none.
 */
export function newerReleases(table: readonly DistroRelease[], active: string, today: string): string[] {
  const from = table.findIndex((r) => r.series === active);
  if (from < 0) return [];
  return table
    .slice(from + 1)
    .filter((r) => r.released !== '' && r.released <= today)
    .map((r) => r.series);
}
