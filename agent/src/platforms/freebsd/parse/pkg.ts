/**
 * Parsers of pkg(8) output for the FreeBSD pkg port. Package data comes from `pkg query` (installed)
 * and `pkg rquery` (repositories) with explicit formats whose fields are separated by control
 * characters no field holds (descriptions span lines), so nothing is parsed from human output except
 * the repository list (`pkg -vv`), the dry-run upgrade and the audit report.
 */
import type { PackageRecord, PackageSearchRecord, SearchCandidate } from '../../ports/pkg.ts';

const FS = '\x1f';
const RS = '\x1e';

/** The normal fields both `pkg query` and `pkg rquery` know, in this order. */
const COMMON = ['%o', '%n', '%v', '%q', '%c', '%e', '%sb', '%m', '%w', '%l', '%p', '%M'] as const;
/** Only installed packages have these: automatic, locked, install time, the repository it came from. */
const LOCAL_ONLY = ['%a', '%k', '%t', '%R'] as const;

// pkg ends every output record with a newline of its own.
const format = (fields: readonly string[]) => `${fields.join(FS)}${RS}`;
export const QUERY_FORMAT = format([...COMMON, ...LOCAL_ONLY]);
export const RQUERY_FORMAT = format([...COMMON, '%R']);
/** Search candidates: origin, name, comment, description. */
export const CANDIDATE_FORMAT = format(['%o', '%n', '%c', '%e']);

/** Multi-valued fields (`result: full`): one line per element, prefixed by the origin. */
export const MULTI_FORMATS = {
  dependencies: `%o${FS}%do`,
  files: `%o${FS}%Fp`,
  options: `%o${FS}%Ok${FS}%Ov`,
  licenses: `%o${FS}%L`,
  shlibs_provided: `%o${FS}%b`,
  shlibs_required: `%o${FS}%B`,
} as const;

function records(stdout: string): string[][] {
  return stdout
    .split(`${RS}\n`)
    .filter((r) => r.trim() !== '')
    .map((r) => r.replace(/^\n/, '').split(FS));
}

/** pkg prints the license logic as a word (rquery) or a sign (query): `single`, `and`, `or`. */
function licenseLogic(text: string): string {
  if (text === '&' || text === 'and') return 'and';
  if (text === '|' || text === 'or') return 'or';
  return 'single';
}

function common(values: string[]): PackageRecord {
  const [
    origin = '',
    name = '',
    version = '',
    arch = '',
    comment = '',
    desc = '',
    flatsize = '',
    maintainer = '',
    www = '',
    logic = '',
    prefix = '',
    message = '',
  ] = values;
  return {
    arch,
    automatic: '0',
    comment,
    dep_formula: '',
    desc,
    flatsize,
    id: '',
    licenselogic: licenseLogic(logic),
    locked: '0',
    maintainer,
    manifestdigest: '',
    message,
    mtree_id: '',
    name,
    origin,
    pkg_format_version: '',
    prefix,
    time: '',
    version,
    www,
  };
}

/** `pkg query QUERY_FORMAT ...`: installed packages. */
export function parseQuery(stdout: string): PackageRecord[] {
  return records(stdout).map((values) => {
    const [automatic = '0', locked = '0', time = '', repository = ''] = values.slice(COMMON.length);
    return {
      ...common(values),
      automatic: automatic === '1' ? '1' : '0',
      locked: locked === '1' ? '1' : '0',
      time,
      ...(repository && repository !== 'unknown-repository' ? { repository } : {}),
    };
  });
}

/** `pkg rquery RQUERY_FORMAT ...`: a repository's packages. */
export function parseRquery(stdout: string): PackageRecord[] {
  return records(stdout).map((values) => ({ ...common(values), repository: values[COMMON.length] ?? '', repo_type: 'binary' }));
}

/** A repository record as a search result; pkg's query formats do not print the file's path, size or checksum. */
export function toSearchRecord(r: PackageRecord): PackageSearchRecord {
  return {
    arch: r.arch,
    cksum: '',
    comment: r.comment,
    dep_formula: '',
    desc: r.desc,
    flatsize: r.flatsize,
    id: '',
    licenselogic: r.licenselogic,
    maintainer: r.maintainer,
    manifestdigest: '',
    name: r.name,
    olddigest: '',
    origin: r.origin,
    osversion: '',
    path: '',
    pkg_format_version: '',
    pkgsize: '',
    prefix: r.prefix,
    version: r.version,
    www: r.www,
  };
}

export function parseCandidates(stdout: string): SearchCandidate[] {
  return records(stdout).map(([origin = '', name = '', comment = '', desc = '']) => ({ origin, name, comment, desc }));
}

/** A MULTI_FORMATS output: the elements by origin (options as `key → value`). */
export function parseMulti(stdout: string): Map<string, string[][]> {
  const out = new Map<string, string[][]>();
  for (const line of stdout.split('\n')) {
    if (!line.includes(FS)) continue;
    const [origin = '', ...rest] = line.split(FS);
    if (rest.every((v) => v === '')) continue;
    out.set(origin, [...(out.get(origin) ?? []), rest]);
  }
  return out;
}

/** `pkg -vv`: the enabled repositories of the `Repositories:` section, in order. */
export function parseRepositories(stdout: string): string[] {
  const section = stdout.split(/^Repositories:\s*$/m)[1] ?? '';
  const out: string[] = [];
  let current: string | null = null;
  for (const line of section.split('\n')) {
    const open = /^ {2}([A-Za-z0-9_][A-Za-z0-9_.:@+-]*): \{\s*$/.exec(line);
    if (open) {
      current = open[1] as string;
      continue;
    }
    const enabled = /^\s+enabled\s*:\s*(yes|no|true|false)/.exec(line);
    if (enabled && current) {
      if (enabled[1] === 'yes' || enabled[1] === 'true') out.push(current);
      current = null;
    }
  }
  return out;
}

/**
 * `pkg upgrade -n`: whether anything would change. `Your packages are up to date.` is no; a work
 * list (`to be UPGRADED`, `INSTALLED`, `REINSTALLED`) is yes; anything else is not a answer.
 */
export function parseDryRun(stdout: string): boolean | null {
  if (/Your packages are up to date\./.test(stdout)) return false;
  if (/to be (UPGRADED|INSTALLED|REINSTALLED|DOWNGRADED):/.test(stdout)) return true;
  return null;
}

/** `pkg audit`: the `<name>-<version>` of each `... is vulnerable:` line, once each. */
export function parseAudit(stdout: string): string[] {
  return [...new Set([...stdout.matchAll(/^(\S+) is vulnerable:$/gm)].map((m) => m[1] as string))];
}
