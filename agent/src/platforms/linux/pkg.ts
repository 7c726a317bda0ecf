/**
 * pkg on Debian-like Linux: dpkg for what is installed (`dpkg-query -W` with our own format,
 * `apt-mark showauto`, `dpkg-query -L`), apt's downloaded Packages indexes for the repositories (found
 * with `apt-get indextargets`, which reads one-line `.list` and deb822 `.sources` alike, and read with
 * `apt-helper cat-file`, which undoes any compression), and apt-get/apt-mark/dpkg for the queued jobs.
 * Locks are `apt-mark hold`. A host without apt and dpkg has no pkg class (left out of `query`).
 */
import { existsSync } from 'node:fs';
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { runOrHostError } from '../common/host-command.ts';
import { mapLimit } from '../common/map-limit.ts';
import { categoryOf, LOCAL_REPO, type PackageFilter, type PackageRecord, type PkgJob, type PkgPort, type PkgWork } from '../ports/pkg.ts';
import {
  DPKG_FORMAT,
  INDEXTARGETS_FORMAT,
  originOfStanza,
  parseDebsecanPackages,
  parseDpkgQuery,
  parseIndexTargets,
  parseSimulatedUpgrade,
  stanzaParser,
  stanzaToRecord,
  stanzaToSearchRecord,
  type IndexTarget,
  type InstalledDeb,
  type Stanza,
} from './parse/pkg.ts';

const APT_HELPER = '/usr/lib/apt/apt-helper';
const DEBSECAN = '/usr/bin/debsecan';
/** apt-get never asks; a changed configuration file keeps the administrator's version. */
const APT_GET = ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', '-y', '-o', 'Dpkg::Options::=--force-confold'];

export function linuxPkg(ctx: LinuxContext): PkgPort | null {
  if (!existsSync('/usr/bin/dpkg-query') || !existsSync('/usr/bin/apt-get')) return null;
  const { runner } = ctx;
  const targets = async (): Promise<IndexTarget[]> =>
    parseIndexTargets(await runOrHostError(runner, ['apt-get', 'indextargets', '--format', INDEXTARGETS_FORMAT], 'listing the apt indexes failed'));
  const stanzas = async (repo: string, keep: (s: Stanza) => boolean): Promise<Stanza[]> => {
    const files = (await targets()).filter((t) => t.repo === repo);
    if (files.length === 0) throw new HostadmError('HOST_ERROR', `repository ${repo} has no downloaded index yet: run pkg_update`);
    const byOrigin = new Map<string, Stanza>();
    for (const file of files) await readIndex(runner, file.filename, (s) => keep(s) && !byOrigin.has(originOfStanza(s)) && byOrigin.set(originOfStanza(s), s));
    return [...byOrigin.values()];
  };
  const matches = (filter: PackageFilter) => (origin: string) =>
    (!filter.origins || filter.origins.includes(origin)) && (!filter.category || categoryOf(origin) === filter.category);

  return {
    async repos() {
      const configured = parseIndexTargets(
        await runOrHostError(runner, ['apt-get', 'indextargets', '--no-release-info', '--format', INDEXTARGETS_FORMAT], 'listing the apt sources failed'),
      );
      return [...new Set([...configured, ...(await targets())].map((t) => t.repo))].sort();
    },
    async packages(repo, filter) {
      const wanted = matches(filter);
      if (repo === LOCAL_REPO) {
        const names = filter.origins?.map((o) => o.slice(o.indexOf('/') + 1));
        const all = filter.full || !names ? await installed(runner) : await installed(runner, names);
        const chosen = all.filter((p) => wanted(p.origin));
        return filter.full ? fullRecords(runner, chosen, all) : chosen.map((p) => p.record);
      }
      const found = await stanzas(repo, (s) => wanted(originOfStanza(s)));
      if (!filter.full) return found.map((s) => stanzaToRecord(s, repo));
      const originByName = new Map((await stanzas(repo, () => true)).map((s) => [s.Package ?? '', originOfStanza(s)]));
      return found.map((s) => {
        const record = stanzaToRecord(s, repo);
        const deps = record.dep_formula.split(/[,|]/).map((d) => originByName.get(d.trim().split(/[\s(:]/)[0] ?? ''));
        return { ...record, ...fullExtras(), dependencies: deps.filter((d): d is string => d !== undefined) };
      });
    },
    async candidates(repo, category) {
      const keep = matches(category ? { category } : {});
      if (repo === LOCAL_REPO)
        return (await installed(runner))
          .filter((p) => keep(p.origin))
          .map(({ origin, name, record }) => ({ origin, name, comment: record.comment, desc: record.desc }));
      return (await stanzas(repo, (s) => keep(originOfStanza(s)))).map((s) => {
        const r = stanzaToRecord(s, repo);
        return { origin: r.origin, name: r.name, comment: r.comment, desc: r.desc };
      });
    },
    async searchRecords(repo, origins) {
      if (repo === LOCAL_REPO) {
        // What dpkg knows of an installed package; the repository's fields (path, sizes, checksums) stay empty.
        return (await installed(runner))
          .filter((p) => origins.includes(p.origin))
          .map(({ record: r }) => ({
            ...stanzaToSearchRecord({}),
            ...{ arch: r.arch, comment: r.comment, dep_formula: r.dep_formula, desc: r.desc, flatsize: r.flatsize, maintainer: r.maintainer },
            ...{ name: r.name, origin: r.origin, version: r.version, www: r.www },
          }));
      }
      return (await stanzas(repo, (s) => origins.includes(originOfStanza(s)))).map(stanzaToSearchRecord);
    },
    async categories(repo) {
      const origins = repo === LOCAL_REPO ? (await installed(runner)).map((p) => p.origin) : (await stanzas(repo, () => true)).map(originOfStanza);
      return [...new Set(origins.map(categoryOf))].sort();
    },
    plan: (job) => planJob(runner, job, stanzas),
  };
}

/** Installed packages (all, or of these names), with the automatic flag from apt. */
async function installed(runner: CommandRunner, names?: readonly string[]): Promise<InstalledDeb[]> {
  const query = await runner.run(['dpkg-query', '-W', '-f', DPKG_FORMAT, ...(names ?? [])], { maxOutputBytes: 128 * 1024 * 1024 });
  // 1: some of the names are not known to dpkg; the others are printed.
  if (query.code !== 0 && !(query.code === 1 && names)) throw new HostadmError('HOST_ERROR', `dpkg-query failed: ${query.stderr.trim()}`);
  const auto = await runOrHostError(runner, ['apt-mark', 'showauto', ...(names ?? [])], 'apt-mark showauto failed');
  return parseDpkgQuery(query.stdout, new Set(auto.split('\n').map((l) => l.trim())));
}

const fullExtras = () => ({ files: [] as string[], licenses: [] as string[], options: {}, shlibs_provided: [] as string[], shlibs_required: [] as string[] });

/** Installed records with their dependencies as origins and their files (`dpkg-query -L`, a few at a time). */
async function fullRecords(runner: CommandRunner, chosen: readonly InstalledDeb[], all: readonly InstalledDeb[]): Promise<PackageRecord[]> {
  const originByName = new Map(all.map((p) => [p.name, p.origin]));
  return mapLimit(chosen, 4, async (p) => {
    const list = await runner.run(['dpkg-query', '-L', p.name], { maxOutputBytes: 32 * 1024 * 1024 });
    const files = list.code === 0 ? list.stdout.split('\n').filter((f) => f.startsWith('/') && f !== '/.') : [];
    const dependencies = [...new Set(p.depends.flatMap((d) => originByName.get(d) ?? []))];
    return { ...p.record, ...fullExtras(), files, dependencies };
  });
}

/** Streams one Packages index through the stanza parser, keeping only what `onStanza` keeps. */
async function readIndex(runner: CommandRunner, filename: string, onStanza: (s: Stanza) => unknown): Promise<void> {
  const parser = stanzaParser((s) => void onStanza(s));
  const result = await runner.run([APT_HELPER, 'cat-file', filename], {
    maxOutputBytes: 64 * 1024,
    onOutput: (text, stream) => stream === 'stdout' && parser.push(text),
  });
  if (result.code !== 0) throw new HostadmError('HOST_ERROR', `reading the apt index ${filename} failed: ${result.stderr.trim()}`);
  parser.end();
}

type StanzaReader = (repo: string, keep: (s: Stanza) => boolean) => Promise<Stanza[]>;

async function planJob(runner: CommandRunner, job: PkgJob, stanzas: StanzaReader): Promise<PkgWork> {
  const names = (origins: readonly string[]) => origins.map((o) => o.slice(o.indexOf('/') + 1));
  const update = ['apt-get', 'update', ...('force' in job && job.force ? ['-o', 'Acquire::http::No-Cache=true'] : [])];
  switch (job.action) {
    case 'pkg_update':
      return { steps: [{ argv: update }] };
    case 'pkg_lock':
      return { steps: [{ argv: ['apt-mark', 'hold', ...names(job.origins)] }] };
    case 'pkg_unlock':
      return { steps: [{ argv: ['apt-mark', 'unhold', ...names(job.origins)] }] };
    case 'pkg_install': {
      // From a named repository: the version that repository offers, `name=version`.
      let targets = names(job.origins);
      if (job.repo) {
        const offered = await stanzas(job.repo, (s) => job.origins.includes(originOfStanza(s)));
        targets = offered.map((s) => `${s.Package}=${s.Version}`);
      }
      return { steps: [{ argv: [...APT_GET, 'install', ...targets] }] };
    }
    case 'pkg_remove':
      // apt-get remove also removes what depends on them; dpkg --remove refuses when something does.
      return { steps: [{ argv: job.recursive ? [...APT_GET, 'remove', ...names(job.origins)] : ['dpkg', '--remove', ...names(job.origins)] }] };
    case 'pkg_autoremove':
      return { steps: [{ argv: [...APT_GET, 'autoremove'] }] };
    case 'pkg_upgrade':
      // Held (locked) packages are kept back by apt-get itself.
      return { steps: [{ argv: update }, { argv: [...APT_GET, 'upgrade', '--with-new-pkgs'] }] };
    case 'pkg_check_upgrade': {
      const simulate = ['apt-get', '-s', 'upgrade', '--with-new-pkgs'];
      return {
        commands: [update.join(' '), simulate.join(' ')],
        async work(ctx) {
          // A catalogue that cannot be refreshed is a failed check, never "no updates".
          const refreshed = await ctx.run(update);
          if (refreshed.code !== 0) return { success: false, reason: `"${update.join(' ')}" exited with code ${refreshed.code}` };
          const simulated = await ctx.run(simulate);
          if (simulated.code !== 0) return { success: false, reason: `"${simulate.join(' ')}" exited with code ${simulated.code}` };
          return { success: true, fields: { updates_available: parseSimulatedUpgrade(simulated.stdout).length > 0 ? 'true' : 'false' } };
        },
      };
    }
    case 'pkg_audit': {
      const present = await runner.run(['test', '-x', DEBSECAN]);
      if (present.code !== 0) {
        throw unsupported(
          'pkg_audit: debsecan is not installed on this host (apt-get install debsecan); without it nothing here knows which installed packages are vulnerable',
        );
      }
      const argv = ['debsecan', '--format', 'packages'];
      return {
        commands: [argv.join(' ')],
        async work(ctx) {
          const audited = await ctx.run(argv);
          if (audited.code !== 0) return { success: false, reason: `"${argv.join(' ')}" exited with code ${audited.code}` };
          return { success: true, fields: { vulnerable_pkgs: parseDebsecanPackages(audited.stdout) } };
        },
      };
    }
  }
}
