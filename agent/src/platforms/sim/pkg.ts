/**
 * The simulated host's pkg (the `pkg` slice): repositories with categories, installed packages with
 * locks and the automatic flag, searches, and queued jobs that change the slice while reporting
 * progress and writing pkg-like output to `pkg_log`. Nothing runs on this machine: the commands shown
 * are the ones FreeBSD would run (freebsd/pkg-argv.ts).
 */
import { createHash } from 'node:crypto';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import type { SimSlice } from './store.ts';
import { seedPkg, type SimInstalled, type SimPkgState, type SimRepoPackage } from './pkg-catalogue.ts';
import { pkgJobArgv } from '../freebsd/pkg-argv.ts';
import { categoryOf, LOCAL_REPO, type PackageRecord, type PackageSearchRecord, type PkgJob, type PkgPort, type PkgWork } from '../ports/pkg.ts';
import type { JobContext, JobOutcome } from '../../jobs/types.ts';

const ARCH = 'FreeBSD:14:amd64';
/** A pause between packages, so subscribers see the progress of a job move. */
const STEP_MS = 40;

export function simPkg(ctx: SimContext): PkgPort {
  const slice = ctx.store.slice('pkg', seedPkg);
  const catalogue = (repo: string): SimRepoPackage[] => (repo === LOCAL_REPO ? installedPackages(slice.get()) : (slice.get().repos[repo] ?? []));
  const filtered = (repo: string, filter: { origins?: readonly string[]; category?: string }) =>
    catalogue(repo).filter((p) => (!filter.origins || filter.origins.includes(p.origin)) && (!filter.category || categoryOf(p.origin) === filter.category));
  return {
    async repos() {
      return Object.keys(slice.get().repos);
    },
    async packages(repo, filter) {
      const state = slice.get();
      return filtered(repo, filter).map((p) => packageRecord(p, repo === LOCAL_REPO ? state.installed[p.origin] : undefined, repo, filter.full === true));
    },
    async candidates(repo, category) {
      return filtered(repo, category ? { category } : {}).map(({ origin, name, comment, desc }) => ({ origin, name, comment, desc }));
    },
    async searchRecords(repo, origins) {
      return filtered(repo, { origins }).map(searchRecord);
    },
    async categories(repo) {
      return [...new Set(catalogue(repo).map((p) => categoryOf(p.origin)))].sort();
    },
    async plan(job) {
      return simWork(slice, job);
    },
  };
}

/** Installed packages as catalogue entries: the repository's data at the installed version. */
function installedPackages(state: SimPkgState): SimRepoPackage[] {
  const out: SimRepoPackage[] = [];
  for (const [origin, installed] of Object.entries(state.installed)) {
    const known = Object.values(state.repos)
      .flat()
      .find((p) => p.origin === origin);
    if (known) out.push({ ...known, version: installed.version });
  }
  return out.sort((a, b) => a.origin.localeCompare(b.origin));
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

function packageRecord(p: SimRepoPackage, installed: SimInstalled | undefined, repo: string, full: boolean): PackageRecord {
  return {
    arch: ARCH,
    automatic: installed?.automatic ? '1' : '0',
    comment: p.comment,
    dep_formula: '',
    desc: p.desc,
    flatsize: String(p.flatsize),
    id: String(installed?.id ?? 0),
    licenselogic: p.licenses.length > 1 ? 'and' : 'single',
    locked: installed?.locked ? '1' : '0',
    maintainer: p.maintainer,
    manifestdigest: `1$${digest(`${p.origin}-${p.version}`)}`,
    message: '',
    mtree_id: '',
    name: p.name,
    origin: p.origin,
    pkg_format_version: '',
    prefix: '/usr/local',
    repo_type: 'binary',
    repository: installed?.repository ?? repo,
    time: String(installed?.time ?? 0),
    version: p.version,
    www: p.www,
    ...(full
      ? {
          dependencies: [...p.deps],
          files: [`/usr/local/share/licenses/${p.name}-${p.version}/catalog.mk`, `/usr/local/share/doc/${p.name}/README`],
          licenses: [...p.licenses],
          options: { ...p.options },
          shlibs_provided: [],
          shlibs_required: [],
        }
      : {}),
  };
}

function searchRecord(p: SimRepoPackage): PackageSearchRecord {
  return {
    arch: ARCH,
    cksum: digest(`${p.name}-${p.version}.pkg`),
    comment: p.comment,
    dep_formula: '',
    desc: p.desc,
    flatsize: String(p.flatsize),
    id: '0',
    licenselogic: p.licenses.length > 1 ? 'and' : 'single',
    maintainer: p.maintainer,
    manifestdigest: `1$${digest(`${p.origin}-${p.version}`)}`,
    name: p.name,
    olddigest: '',
    origin: p.origin,
    osversion: '1402000',
    path: `All/${p.name}-${p.version}.pkg`,
    pkg_format_version: '',
    pkgsize: String(p.pkgsize),
    prefix: '/usr/local',
    version: p.version,
    www: p.www,
  };
}

/** pkg-version(8)-like ordering: epoch after `,`, then the version parts, then the port revision after `_`. */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [rest = '', epoch = '0'] = v.split(',');
    const [main = '', revision = '0'] = rest.split('_');
    return { epoch: Number(epoch), main: main.split(/[.+~-]|(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)/i), revision: Number(revision) };
  };
  const x = split(a);
  const y = split(b);
  if (x.epoch !== y.epoch) return x.epoch - y.epoch;
  for (let i = 0; i < Math.max(x.main.length, y.main.length); i++) {
    const p = x.main[i] ?? '';
    const q = y.main[i] ?? '';
    const diff = /^\d+$/.test(p) && /^\d+$/.test(q) ? Number(p) - Number(q) : p.localeCompare(q);
    if (diff !== 0) return diff;
  }
  return x.revision - y.revision;
}

const pause = (signal: AbortSignal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : setTimeout(resolve, STEP_MS)));

function simWork(slice: SimSlice<SimPkgState>, job: PkgJob): PkgWork {
  const command = pkgJobArgv(job).join(' ');
  const work = (run: (ctx: JobContext) => Promise<JobOutcome>): PkgWork => ({ commands: [command], work: run });
  const repoPackage = (origin: string, repo?: string) =>
    Object.entries(slice.get().repos)
      .filter(([name]) => !repo || name === repo)
      .flatMap(([name, list]) => list.map((p) => ({ repo: name, p })))
      .find(({ p }) => p.origin === origin);
  const label = (origin: string) => {
    const installed = slice.get().installed[origin];
    return `${origin.slice(origin.indexOf('/') + 1)}-${installed?.version ?? '?'}`;
  };
  const upgradable = () =>
    Object.entries(slice.get().installed).flatMap(([origin, installed]) => {
      const offered = repoPackage(origin);
      return offered && compareVersions(offered.p.version, installed.version) > 0 ? [{ origin, installed, offered }] : [];
    });
  switch (job.action) {
    case 'pkg_update':
      return work(async (ctx) => {
        for (const repo of Object.keys(slice.get().repos)) ctx.log(`Updating ${repo} repository catalogue...\n${repo} repository is up to date.\n`);
        ctx.log('All repositories are up to date.\n');
        return { success: true };
      });
    case 'pkg_check_upgrade':
      return work(async (ctx) => {
        const pending = upgradable().filter((u) => !u.installed.locked);
        if (pending.length === 0) {
          ctx.log('Checking for upgrades (0 candidates): 100%\nYour packages are up to date.\n');
          return { success: true, fields: { updates_available: 'false' } };
        }
        ctx.log(`The following ${pending.length} package(s) will be affected (of 0 checked):\n\nInstalled packages to be UPGRADED:\n`);
        for (const u of pending) ctx.log(`\t${u.offered.p.name}: ${u.installed.version} -> ${u.offered.p.version} [${u.offered.repo}]\n`);
        return { success: true, fields: { updates_available: 'true' } };
      });
    case 'pkg_upgrade':
      return work(async (ctx) => {
        const all = upgradable();
        for (const u of all.filter((x) => x.installed.locked)) ctx.log(`${label(u.origin)} is locked, skipping its upgrade\n`);
        const pending = all.filter((u) => !u.installed.locked);
        if (pending.length === 0) ctx.log('Your packages are up to date.\n');
        for (const [i, u] of pending.entries()) {
          if (ctx.signal.aborted) return { success: false };
          ctx.log(`[${i + 1}/${pending.length}] Upgrading ${u.offered.p.name} from ${u.installed.version} to ${u.offered.p.version}...\n`);
          slice.update((draft) => {
            const entry = draft.installed[u.origin];
            if (entry) Object.assign(entry, { version: u.offered.p.version, repository: u.offered.repo, time: Math.floor(Date.now() / 1000) });
          });
          ctx.progress(((i + 1) / pending.length) * 100);
          await pause(ctx.signal);
        }
        return { success: true };
      });
    case 'pkg_lock':
    case 'pkg_unlock':
      return work(async (ctx) => {
        const lock = job.action === 'pkg_lock';
        slice.update((draft) => {
          for (const origin of job.origins) {
            const entry = draft.installed[origin];
            if (entry) entry.locked = lock;
          }
        });
        for (const origin of job.origins) ctx.log(`${lock ? 'Locking' : 'Unlocking'} ${label(origin)}\n`);
        return { success: true };
      });
    case 'pkg_install':
      return work(async (ctx) => installJob(slice, ctx, job.origins, job.repo, repoPackage));
    case 'pkg_remove':
      return work(async (ctx) => removeJob(slice, ctx, job.origins, job.recursive));
    case 'pkg_autoremove':
      return work(async (ctx) => {
        const state = slice.get();
        const needed = new Set(Object.keys(state.installed).flatMap((origin) => repoPackage(origin)?.p.deps ?? []));
        const orphans = Object.entries(state.installed).filter(([origin, i]) => i.automatic && !i.locked && !needed.has(origin));
        if (orphans.length === 0) {
          ctx.log('Nothing to do.\n');
          return { success: true };
        }
        return removeJob(
          slice,
          ctx,
          orphans.map(([o]) => o),
          false,
        );
      });
    case 'pkg_audit':
      return work(async (ctx) => {
        const state = slice.get();
        ctx.log('Fetching vuln.xml.xz: 100%\n');
        const vulnerable = state.vulnerabilities.flatMap((v) =>
          Object.entries(state.installed)
            .filter(([origin, i]) => origin.endsWith(`/${v.name}`) && compareVersions(i.version, v.fixedIn) < 0)
            .map(([origin, i]) => ({ v, origin, i })),
        );
        for (const { v, origin, i } of vulnerable) {
          ctx.log(`${v.name}-${i.version} is vulnerable:\n  ${v.topic}\n  CVE: ${v.cve}\n  WWW: https://vuxml.freebsd.org/\n\n`);
          const dependents = Object.keys(state.installed).filter((o) => repoPackage(o)?.p.deps.includes(origin));
          if (dependents.length) ctx.log(`Packages that depend on ${v.name}: ${dependents.map(label).join(', ')}\n\n`);
        }
        ctx.log(`${vulnerable.length} problem(s) in ${new Set(vulnerable.map((x) => x.origin)).size} installed package(s) found.\n`);
        return { success: true, fields: { vulnerable_pkgs: vulnerable.map(({ v, i }) => `${v.name}-${i.version}`) } };
      });
  }
}

type Finder = (origin: string, repo?: string) => { repo: string; p: SimRepoPackage } | undefined;

async function installJob(
  slice: SimSlice<SimPkgState>,
  ctx: JobContext,
  origins: readonly string[],
  repo: string | undefined,
  find: Finder,
): Promise<JobOutcome> {
  // The asked packages and their dependencies not yet installed, dependencies first.
  const plan: Array<{ origin: string; repo: string; p: SimRepoPackage; automatic: boolean }> = [];
  const visit = (origin: string, automatic: boolean) => {
    if (plan.some((x) => x.origin === origin) || slice.get().installed[origin]) return;
    const found = find(origin, automatic ? undefined : repo);
    if (!found) throw new HostadmError('HOST_ERROR', `${origin} is in no repository`);
    for (const dep of found.p.deps) visit(dep, true);
    plan.push({ origin, ...found, automatic });
  };
  for (const origin of origins) visit(origin, false);
  if (plan.length === 0) {
    ctx.log('The most recent versions of packages are already installed\n');
    return { success: true };
  }
  ctx.log(`The following ${plan.length} package(s) will be affected:\n\nNew packages to be INSTALLED:\n`);
  for (const x of plan) ctx.log(`\t${x.p.name}: ${x.p.version} [${x.repo}]\n`);
  for (const [i, x] of plan.entries()) {
    if (ctx.signal.aborted) return { success: false };
    ctx.log(`[${i + 1}/${plan.length}] Installing ${x.p.name}-${x.p.version}...\n`);
    slice.update((draft) => {
      draft.installed[x.origin] = {
        version: x.p.version,
        automatic: x.automatic,
        locked: false,
        time: Math.floor(Date.now() / 1000),
        repository: x.repo,
        id: draft.nextId++,
      };
    });
    ctx.progress(((i + 1) / plan.length) * 100);
    await pause(ctx.signal);
  }
  return { success: true };
}

async function removeJob(slice: SimSlice<SimPkgState>, ctx: JobContext, origins: readonly string[], recursive: boolean): Promise<JobOutcome> {
  const state = slice.get();
  const dependsOn = (origin: string) =>
    Object.keys(state.installed).filter((o) =>
      Object.values(state.repos)
        .flat()
        .some((p) => p.origin === o && p.deps.includes(origin)),
    );
  const doomed = new Set(origins);
  if (recursive) for (const origin of doomed) for (const dependent of dependsOn(origin)) doomed.add(dependent);
  const nameOf = (origin: string) => `${origin.slice(origin.indexOf('/') + 1)}-${state.installed[origin]?.version ?? '?'}`;
  const locked = [...doomed].filter((o) => state.installed[o]?.locked);
  if (locked.length) {
    for (const o of locked) ctx.log(`pkg: ${nameOf(o)} is locked and may not be modified\n`);
    return { success: false, reason: `locked: ${locked.map(nameOf).join(', ')}` };
  }
  const needed = [...doomed].filter((o) => dependsOn(o).some((d) => !doomed.has(d)));
  if (needed.length) {
    ctx.log(`pkg: ${needed.map(nameOf).join(', ')} is required by other packages (remove recursively to remove them too)\n`);
    return { success: false, reason: `required by other packages: ${needed.map(nameOf).join(', ')}` };
  }
  ctx.log(`Installed packages to be REMOVED:\n${[...doomed].map((o) => `\t${nameOf(o)}\n`).join('')}\n`);
  for (const [i, origin] of [...doomed].entries()) {
    if (ctx.signal.aborted) return { success: false };
    ctx.log(`[${i + 1}/${doomed.size}] Deinstalling ${nameOf(origin)}...\n`);
    slice.update((draft) => {
      delete draft.installed[origin];
    });
    ctx.progress(((i + 1) / doomed.size) * 100);
    await pause(ctx.signal);
  }
  return { success: true };
}
