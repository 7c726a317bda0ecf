/**
 * Linux updates with apt (Debian, Ubuntu and their derivatives; a host without apt-get does not
 * serve `update`). Every host access goes through the runner, so a test can aim it into a sandbox.
 * - check: `apt-get update --error-on=any` (a repository that cannot be read fails the check instead
 *   of being skipped with a warning) then `apt-get -s upgrade`; each upgradable package is a
 *   `patch<N>` whose `tag` installs it alone, those from a security archive make `security`, and a
 *   newer release of the distribution (distro-info-data) is `majorupgrade`.
 * - branches: the release the apt sources follow (`active`) and the distribution's later releases
 *   (`available`) from `/usr/share/distro-info/<ID>.csv`; without that file, only the active one.
 * - startupdate: `pkgupdate` = `apt-get upgrade`; `standalone` = `apt-get install --only-upgrade <tag>`;
 *   `chbranch` = the release notes' way: the codename replaced in the sources files that name it
 *   (sed, a copy kept as `/var/backups/<file>.hostadm-bak`), `apt-get update`, `upgrade --without-new-pkgs`, `dist-upgrade`.
 *   All non-interactive (DEBIAN_FRONTEND=noninteractive, changed configuration files kept as they are).
 * - rebootrequired: `/run/reboot-required` (and `.pkgs`), as Debian's and Ubuntu's packages leave it.
 * - logs: the agent's own, plus apt's history as `apt-history.log`. `maxbe`, `package_set` and
 *   `package_url` are kept and listed but have no effect here (no boot environments, no package sets).
 */
import { basename } from 'node:path';
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner } from '../../runner/runner.ts';
import { fileUpdateStore, type HostLogs } from '../common/update-files.ts';
import type { UpdateCheck, UpdatePort, UpdateRun, UpdateTarget, BranchState } from '../ports/update.ts';
import type { LinuxContext } from './index.ts';
import { newerReleases, parseAptSimulation, parseDistroInfo, parseIndexTargets, releaseOfSuite, type IndexTarget } from './parse/update.ts';

const APT_HISTORY = '/var/log/apt/history.log';
const APT_HISTORY_NAME = 'apt-history.log';
const CHECK_TIMEOUT_MS = 10 * 60_000;
/** An upgrade of a whole system over a slow mirror takes long; a stuck one is stopped by stopupdate. */
const UPDATE_TIMEOUT_MS = 6 * 3600_000;
const MAX_PATCHES = 1000;
const DEB_NAME = /^[a-z0-9][a-z0-9+.-]+$/;
const CODENAME = /^[a-z][a-z0-9]*$/;

const NONINTERACTIVE = [
  'env',
  'DEBIAN_FRONTEND=noninteractive',
  'apt-get',
  '-y',
  '-o',
  'Dpkg::Options::=--force-confdef',
  '-o',
  'Dpkg::Options::=--force-confold',
];
export const APT_UPDATE = ['apt-get', 'update', '--error-on=any'];

export function linuxUpdate(ctx: LinuxContext): UpdatePort {
  const { runner } = ctx;
  const read = async (path: string): Promise<string | null> => {
    const result = await runner.run(['cat', '--', path], { timeoutMs: 10_000 });
    return result.code === 0 ? result.stdout : null;
  };

  const aptHistory: HostLogs = {
    async list() {
      const result = await runner.run(['stat', '-c', '%W %Y', '--', APT_HISTORY], { timeoutMs: 10_000 });
      if (result.code !== 0) return [];
      const [born = 0, modified = 0] = result.stdout.trim().split(' ').map(Number);
      return [{ name: APT_HISTORY_NAME, started: born > 0 ? born : modified, finished: modified }];
    },
    read: async (name) => (name === APT_HISTORY_NAME ? read(APT_HISTORY) : null),
  };

  /** What the sources follow, and what the distribution has released since. */
  const releases = async () => {
    const targets = await indexTargets(runner);
    const osRelease = parseOsRelease((await read('/etc/os-release')) ?? '');
    const distro = targets.filter((t) => t.origin !== '' && t.origin.toLowerCase().startsWith(osRelease.id) && CODENAME.test(releaseOfSuite(t.release)));
    const active = [...new Set(distro.map((t) => releaseOfSuite(t.release)))];
    if (active.length === 0 && osRelease.codename) active.push(osRelease.codename);
    const table = CODENAME.test(osRelease.id) ? parseDistroInfo((await read(`/usr/share/distro-info/${osRelease.id}.csv`)) ?? '') : [];
    const today = new Date().toISOString().slice(0, 10);
    const newer = active.length === 1 ? newerReleases(table, active[0] as string, today) : [];
    const versionOf = (series: string) => table.find((r) => r.series === series)?.version ?? '';
    return { active, newer, distro, osRelease, versionOf };
  };

  const check = async (signal: AbortSignal): Promise<UpdateCheck> => {
    const updated = await runner.run(APT_UPDATE, { timeoutMs: CHECK_TIMEOUT_MS, signal });
    if (updated.code !== 0) throw new HostadmError('HOST_ERROR', failureText('apt-get update', updated));
    const simulated = await runner.run(['apt-get', '-s', 'upgrade'], { timeoutMs: CHECK_TIMEOUT_MS, signal });
    if (simulated.code !== 0) throw new HostadmError('HOST_ERROR', failureText('apt-get -s upgrade', simulated));
    const upgrades = parseAptSimulation(simulated.stdout);
    const { newer, osRelease, versionOf } = await releases();
    const out: UpdateCheck = { status: 'noupdates', details: '' };
    const lines = simulated.stdout.split('\n').filter((l) => /^(Inst |\d+ upgraded)/.test(l) || /kept back/.test(l));
    const security = upgrades.filter((u) => u.security);
    if (security.length > 0)
      out.security = { name: `${security.length} security update${security.length > 1 ? 's' : ''}: ${security.map((u) => u.name).join(', ')}` };
    if (upgrades.length > 0) {
      out.packageupdate = { name: `${upgrades.length} package update${upgrades.length > 1 ? 's' : ''}` };
      out.patches = upgrades.slice(0, MAX_PATCHES).map((u) => ({
        name: u.name,
        tag: u.name,
        details: `${u.from || '(new)'} -> ${u.to} (${u.archives.join(', ')})`,
        date: '',
        size: '',
      }));
    }
    const next = newer.at(-1);
    if (next) {
      const name = `${osRelease.name || osRelease.id} ${next}`.trim();
      out.majorupgrade = { name, tag: next, version: versionOf(next) || next };
      lines.push(`${name} is available (startupdate target chbranch, branch ${next}).`);
    }
    out.status = upgrades.length > 0 || next ? 'updatesavailable' : 'noupdates';
    out.details = `${lines.join('\n')}\n`;
    return out;
  };

  const plan = async (target: UpdateTarget, lastCheck: UpdateCheck | null): Promise<UpdateRun> => {
    if (target.target === 'pkgupdate') return steps([APT_UPDATE, [...NONINTERACTIVE, 'upgrade']]);
    if (target.target === 'standalone') {
      const offered = new Set((lastCheck?.patches ?? []).map((p) => p.tag));
      if (!DEB_NAME.test(target.tag) || !offered.has(target.tag)) {
        throw badRequest(`tag: no update named ${target.tag} in the last check (checkupdates names them)`, [
          { field: 'tag', message: 'not an available update' },
        ]);
      }
      return steps([APT_UPDATE, [...NONINTERACTIVE, 'install', '--only-upgrade', target.tag]]);
    }
    const { active, newer, distro } = await releases();
    const from = active[0];
    if (!from || active.length !== 1 || !newer.includes(target.branch) || !CODENAME.test(target.branch)) {
      throw badRequest(`branch: ${target.branch} is not a release this host can switch to (listbranches)`, [
        { field: 'branch', message: 'not an available branch' },
      ]);
    }
    const files = [...new Set(distro.map((t) => t.sourcesFile).filter((f) => f.startsWith('/etc/apt/')))].sort();
    if (files.length === 0) throw new HostadmError('HOST_ERROR', `no apt sources file names ${from}`);
    return steps([
      // A copy of each sources file first, outside sources.list.d (apt would read a backup left there).
      ...files.map((f) => ['cp', '-p', '--', f, `/var/backups/${basename(f)}.hostadm-bak`]),
      ['sed', '-i', '-E', `s/\\b${from}\\b/${target.branch}/g`, '--', ...files],
      APT_UPDATE,
      [...NONINTERACTIVE, 'upgrade', '--without-new-pkgs'],
      [...NONINTERACTIVE, 'dist-upgrade'],
    ]);
  };

  return {
    store: fileUpdateStore(ctx.dataDir, aptHistory),
    check,
    async rebootRequired() {
      const flag = await read('/run/reboot-required');
      if (flag === null) return null;
      const pkgs = (await read('/run/reboot-required.pkgs')) ?? '';
      return `${flag.trim() || 'A reboot is required.'}${pkgs.trim() ? `\nPackages: ${pkgs.trim().split('\n').join(', ')}` : ''}`;
    },
    async branches() {
      const { active, newer } = await releases();
      const out: Record<string, BranchState> = {};
      for (const b of active) out[b] = 'active';
      for (const b of newer) out[b] = 'available';
      return out;
    },
    planUpdate: (target, context) => plan(target, context.lastCheck),
  };
}

/** Commands run in order, stopping at the first that fails; progress by commands done. */
function steps(argvs: string[][]): UpdateRun {
  return {
    commands: argvs.map((a) => a.join(' ')),
    async run(job) {
      for (const [i, argv] of argvs.entries()) {
        if (job.signal.aborted) return { success: false };
        const result = await job.run(argv, { timeoutMs: UPDATE_TIMEOUT_MS });
        if (result.code !== 0) return { success: false, reason: failureText(argv.join(' '), result) };
        job.progress(((i + 1) / argvs.length) * 100);
      }
      return { success: true };
    },
  };
}

async function indexTargets(runner: CommandRunner): Promise<IndexTarget[]> {
  const result = await runner.run(['apt-get', 'indextargets'], { timeoutMs: 30_000 });
  if (result.code !== 0) throw new HostadmError('HOST_ERROR', failureText('apt-get indextargets', result));
  return parseIndexTargets(result.stdout);
}

function parseOsRelease(text: string): { id: string; codename: string; name: string } {
  const get = (key: string) => new RegExp(`^${key}="?([^"\\n]*)"?$`, 'm').exec(text)?.[1] ?? '';
  return { id: get('ID').toLowerCase(), codename: get('VERSION_CODENAME'), name: get('NAME').replace(/ GNU\/Linux$/, '') };
}
