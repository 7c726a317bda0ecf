/**
 * Parsers of apt and dpkg output for the Linux pkg port: `dpkg-query -W` with our own format, the
 * deb822 stanzas of apt's Packages indexes (streamed: Debian's main index is about 50 MB), `apt-get
 * indextargets`, `apt-get -s upgrade` and `debsecan --format packages`. An origin is
 * `<section>/<name>`, the section's last part (`contrib/net` → `net`), `misc` when a package has none.
 */
import type { PackageRecord, PackageSearchRecord } from '../../ports/pkg.ts';

/** Field and record separators of our dpkg-query format: control characters no field holds. */
const FS = '\x1f';
const RS = '\x1e';

const DPKG_FIELDS = [
  'Package',
  'Version',
  'Architecture',
  'Section',
  'Installed-Size',
  'Maintainer',
  'Homepage',
  'Description',
  'db:Status-Status',
  'db:Status-Want',
  'db-fsys:Last-Modified',
  'Depends',
  'Pre-Depends',
] as const;

/** `dpkg-query -W -f <this>`: one record per package, fields in DPKG_FIELDS order. */
export const DPKG_FORMAT = `${DPKG_FIELDS.map((f) => `\${${f}}`).join(FS)}${RS}\n`;

export function originOf(section: string | undefined, name: string): string {
  const last = (section ?? '').split('/').pop()?.toLowerCase() ?? '';
  return `${/^[a-z0-9][a-z0-9_+-]*$/.test(last) ? last : 'misc'}/${name}`;
}

/** Debian's Description: the first line is the summary, the rest (one space in, `.` for a blank line) the long text. */
export function splitDescription(text: string): { comment: string; desc: string } {
  const [first = '', ...rest] = text.split('\n');
  const desc = rest.map((line) => line.replace(/^ /, '')).map((line) => (line === '.' ? '' : line));
  return { comment: first.trim(), desc: desc.join('\n').trim() };
}

/** Package names of a Depends formula (versions and architecture qualifiers dropped, every alternative kept). */
export function dependencyNames(formula: string): string[] {
  return formula
    .split(/[,|]/)
    .map((part) => part.trim().split(/[\s(:]/)[0] ?? '')
    .filter((name) => /^[a-z0-9][a-z0-9+.-]+$/.test(name));
}

export interface InstalledDeb {
  name: string;
  origin: string;
  record: PackageRecord;
  /** Names it depends on (Depends and Pre-Depends). */
  depends: string[];
}

/** Installed packages from `dpkg-query -W -f DPKG_FORMAT` (packages known to dpkg but not installed are left out). */
export function parseDpkgQuery(stdout: string, auto: ReadonlySet<string>): InstalledDeb[] {
  const out: InstalledDeb[] = [];
  for (const raw of stdout.split(`${RS}\n`)) {
    if (raw.trim() === '') continue;
    const values = raw.split(FS);
    const field = (name: (typeof DPKG_FIELDS)[number]) => values[DPKG_FIELDS.indexOf(name)] ?? '';
    if (field('db:Status-Status') !== 'installed') continue;
    const name = field('Package');
    const { comment, desc } = splitDescription(field('Description'));
    const formula = [field('Pre-Depends'), field('Depends')].filter(Boolean).join(', ');
    const origin = originOf(field('Section'), name);
    out.push({
      name,
      origin,
      depends: dependencyNames(formula),
      record: {
        ...blankRecord(),
        arch: field('Architecture'),
        automatic: auto.has(name) ? '1' : '0',
        comment,
        dep_formula: formula,
        desc,
        flatsize: kibToBytes(field('Installed-Size')),
        locked: field('db:Status-Want') === 'hold' ? '1' : '0',
        maintainer: field('Maintainer'),
        name,
        origin,
        time: field('db-fsys:Last-Modified'),
        version: field('Version'),
        www: field('Homepage'),
      },
    });
  }
  return out;
}

const kibToBytes = (kib: string) => (/^\d+$/.test(kib) ? String(Number(kib) * 1024) : '');

/** The Package fields Debian has no equivalent for, empty (docs/protocol.md lists them). */
function blankRecord(): PackageRecord {
  return {
    arch: '',
    automatic: '0',
    comment: '',
    dep_formula: '',
    desc: '',
    flatsize: '',
    id: '',
    licenselogic: '',
    locked: '0',
    maintainer: '',
    manifestdigest: '',
    message: '',
    mtree_id: '',
    name: '',
    origin: '',
    pkg_format_version: '',
    prefix: '/',
    time: '',
    version: '',
    www: '',
  };
}

export type Stanza = Record<string, string>;

/**
 * A deb822 parser fed in chunks (`push`), calling `onStanza` for each paragraph; continuation lines
 * (starting with a space or tab) join their field with `\n`.
 */
export function stanzaParser(onStanza: (stanza: Stanza) => void): { push(text: string): void; end(): void } {
  let pending = '';
  let stanza: Stanza = {};
  let last = '';
  const flush = () => {
    if (Object.keys(stanza).length > 0) onStanza(stanza);
    stanza = {};
    last = '';
  };
  const line = (text: string) => {
    if (text.trim() === '') return flush();
    if ((text.startsWith(' ') || text.startsWith('\t')) && last) {
      stanza[last] += `\n${text}`;
      return;
    }
    const colon = text.indexOf(':');
    if (colon <= 0) return;
    last = text.slice(0, colon);
    stanza[last] = text.slice(colon + 1).trim();
  };
  return {
    push(text) {
      const lines = (pending + text).split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) line(l);
    },
    end() {
      if (pending) line(pending);
      pending = '';
      flush();
    },
  };
}

export function originOfStanza(s: Stanza): string {
  return originOf(s.Section, s.Package ?? '');
}

/** A repository's package as a Package record (what a repository cannot know, like locks, is `0`/empty). */
export function stanzaToRecord(s: Stanza, repository: string): PackageRecord {
  const { comment, desc } = splitDescription(s.Description ?? '');
  const formula = [s['Pre-Depends'], s.Depends].filter(Boolean).join(', ');
  return {
    ...blankRecord(),
    arch: s.Architecture ?? '',
    comment,
    dep_formula: formula,
    desc,
    flatsize: kibToBytes(s['Installed-Size'] ?? ''),
    maintainer: s.Maintainer ?? '',
    manifestdigest: s.SHA256 ?? '',
    name: s.Package ?? '',
    origin: originOfStanza(s),
    version: s.Version ?? '',
    www: s.Homepage ?? '',
    repository,
    repo_type: 'apt',
  };
}

export function stanzaToSearchRecord(s: Stanza): PackageSearchRecord {
  const record = stanzaToRecord(s, '');
  return {
    arch: record.arch,
    cksum: s.SHA256 ?? '',
    comment: record.comment,
    dep_formula: record.dep_formula,
    desc: record.desc,
    flatsize: record.flatsize,
    id: '',
    licenselogic: '',
    maintainer: record.maintainer,
    manifestdigest: s.SHA256 ?? '',
    name: record.name,
    olddigest: s.MD5sum ?? '',
    origin: record.origin,
    osversion: '',
    path: s.Filename ?? '',
    pkg_format_version: '',
    pkgsize: s.Size ?? '',
    prefix: '/',
    version: record.version,
    www: record.www,
  };
}

/** One Packages index of one repository. */
export interface IndexTarget {
  repo: string;
  /** The index file under /var/lib/apt/lists (possibly compressed; read with apt-helper cat-file). */
  filename: string;
}

/** `apt-get indextargets --format INDEXTARGETS_FORMAT`: tab-separated, one index per line. */
export const INDEXTARGETS_FORMAT = '$(IDENTIFIER)\t$(SITE)\t$(RELEASE)\t$(COMPONENT)\t$(FILENAME)';

/**
 * A repository is one sources entry's suite and component, named from where it is (the way apt names
 * its lists files): `deb.debian.org_debian_bookworm_main`; a flat repository (`./`) by its site alone.
 */
export function repoName(site: string, release: string, component: string): string {
  const where = site.replace(/^[a-z+]+:\/*/, '');
  const suite = release === './' || release === '.' ? '' : release;
  return [where, suite, component]
    .join('_')
    .replace(/[^A-Za-z0-9_.:@+-]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^[_.]+|_+$/g, '');
}

export function parseIndexTargets(stdout: string): IndexTarget[] {
  const out: IndexTarget[] = [];
  for (const line of stdout.split('\n')) {
    // A field the target lacks (a flat repository has no component) stays as its `$(NAME)` placeholder.
    const [identifier, site = '', release = '', component = '', filename = ''] = line.split('\t').map((f) => (/^\$\([A-Z_-]+\)$/.test(f) ? '' : f));
    if (identifier !== 'Packages' || !filename) continue;
    const repo = repoName(site, release, component);
    if (repo) out.push({ repo, filename });
  }
  return out;
}

/** `apt-get -s upgrade`: the packages it would upgrade (`Inst <name> [<old>] (<new> ...)`). */
export function parseSimulatedUpgrade(stdout: string): Array<{ name: string; from: string; to: string }> {
  const out: Array<{ name: string; from: string; to: string }> = [];
  for (const line of stdout.split('\n')) {
    const match = /^Inst (\S+) \[([^\]]+)\] \((\S+)/.exec(line);
    if (match) out.push({ name: match[1] as string, from: match[2] as string, to: match[3] as string });
  }
  return out;
}

/** `debsecan --format packages`: one vulnerable package name per line. */
export function parseDebsecanPackages(stdout: string): string[] {
  return [
    ...new Set(
      stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /^[a-z0-9][a-z0-9+.-]+$/.test(l)),
    ),
  ];
}
