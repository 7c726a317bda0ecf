/**
 * FreeBSD updates: freebsd-update(8) for the base system and pkg(8) for packages, or TrueOS's /
 * PC-BSD's `pc-updatemanager` where it is installed (it then does all of it, boot environments
 * included, as the original drove it).
 * - check: `freebsd-update --not-running-from-cron fetch` (PAGER=cat: never waits on a pager), then
 *   `pkg update` and `pkg upgrade -n -U`. Either failing, or saying something we cannot read, fails the
 *   check. A base patch level is `security` (its name is the `standalone` tag that installs it),
 *   packages are `packageupdate`, a newer release from the configured list is `majorupgrade`.
 * - branches: the installed release (`freebsd-version -u`) and the releases listed, one a line, in
 *   `/usr/local/etc/hostadm/update-releases` (freebsd-update cannot list releases itself).
 * - startupdate takes a boot environment first where bectl (or beadm) works, then destroys the oldest
 *   boot environments the agent made (`hostadm-update-*`, never an active one) beyond `maxbe`.
 *   `chbranch` = `freebsd-update -r <release> upgrade` + `install`; a reboot and one more
 *   `install` finish it (`rebootrequired` says so). Merge conflicts in /etc make the job fail, logged.
 * - rebootrequired: the installed kernel (`freebsd-version -k`) is not the running one (`uname -r`).
 */
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner } from '../../runner/runner.ts';
import type { JobContext } from '../../jobs/types.ts';
import { fileUpdateStore } from '../common/update-files.ts';
import type { BranchState, UpdateCheck, UpdatePort, UpdateRun, UpdateSettings, UpdateTarget } from '../ports/update.ts';
import type { FreebsdContext } from './index.ts';
import { compareReleases, parseBootEnvironments, parseFreebsdUpdateFetch, parsePkgUpgradeDryRun, releaseOf } from './parse/update.ts';
import { trueosUpdate, PC_UPDATEMANAGER } from './update-trueos.ts';

export const RELEASES_FILE = '/usr/local/etc/hostadm/update-releases';
const RELEASE = /^\d+\.\d+-(RELEASE|BETA\d*|RC\d*)$/;
const AUTO_BE = 'hostadm-update-';
const CHECK_TIMEOUT_MS = 30 * 60_000;
const UPDATE_TIMEOUT_MS = 6 * 3600_000;
const FREEBSD_UPDATE = ['env', 'PAGER=cat', 'freebsd-update', '--not-running-from-cron'];
/** Answers for freebsd-update upgrade's "Does this look reasonable (y/n)?" questions. */
const YES = 'y\n'.repeat(20);

type BeTool = 'bectl' | 'beadm' | null;

export function freebsdUpdate(ctx: FreebsdContext): UpdatePort {
  const { runner } = ctx;
  const read = async (path: string) => {
    const result = await runner.run(['cat', '--', path], { timeoutMs: 10_000 });
    return result.code === 0 ? result.stdout : null;
  };
  let trueos: Promise<boolean> | null = null;
  const isTrueos = () => (trueos ??= runner.run(['test', '-x', PC_UPDATEMANAGER], { timeoutMs: 10_000 }).then((r) => r.code === 0));
  const trueosPort = trueosUpdate(runner, isTrueos);
  const store = fileUpdateStore(ctx.dataDir, trueosPort.logs);

  const installed = async () => {
    const result = await runner.run(['freebsd-version', '-u'], { timeoutMs: 10_000 });
    if (result.code !== 0) throw new HostadmError('HOST_ERROR', failureText('freebsd-version -u', result));
    return result.stdout.trim();
  };

  const branches = async (): Promise<Record<string, BranchState>> => {
    const active = releaseOf(await installed());
    const listed = ((await read(RELEASES_FILE)) ?? '')
      .split('\n')
      .map((l) => l.replace(/#.*/, '').trim())
      .filter((l) => RELEASE.test(l));
    const out: Record<string, BranchState> = { [active]: 'active' };
    for (const r of [...new Set(listed)].sort(compareReleases)) if (compareReleases(r, active) > 0) out[r] = 'available';
    return out;
  };

  const check = async (signal: AbortSignal): Promise<UpdateCheck> => {
    const version = await installed();
    const fetched = await runner.run([...FREEBSD_UPDATE, 'fetch'], { timeoutMs: CHECK_TIMEOUT_MS, signal });
    const base = fetched.code === 0 ? parseFreebsdUpdateFetch(fetched.stdout) : null;
    if (!base) throw new HostadmError('HOST_ERROR', failureText('freebsd-update fetch', fetched));
    const out: UpdateCheck = { status: 'noupdates', details: '' };
    const details: string[] = [];
    if (base.current) details.push(`No updates needed to update system to ${base.target}.`);
    else {
      out.security = { name: base.target };
      details.push(`The following files will be updated as part of updating to ${base.target}:`, ...base.files);
    }
    // pkg(8) without a bootstrapped pkg would offer to install it: such a host has no packages to update.
    const bootstrapped = (await runner.run(['pkg', '-N'], { timeoutMs: 10_000, signal })).code === 0;
    if (bootstrapped) {
      const refreshed = await runner.run(['pkg', 'update'], { timeoutMs: CHECK_TIMEOUT_MS, signal });
      if (refreshed.code !== 0) throw new HostadmError('HOST_ERROR', failureText('pkg update', refreshed));
      const planned = await runner.run(['pkg', 'upgrade', '-n', '-U'], { timeoutMs: CHECK_TIMEOUT_MS, signal });
      const pkgs = planned.code === 0 || planned.code === 1 ? parsePkgUpgradeDryRun(planned.stdout) : null;
      if (!pkgs) throw new HostadmError('HOST_ERROR', failureText('pkg upgrade -n', planned));
      if (pkgs.upgrades.length > 0) {
        out.packageupdate = { name: `${pkgs.upgrades.length} package update${pkgs.upgrades.length > 1 ? 's' : ''}` };
        details.push('Installed packages to be UPGRADED:', ...pkgs.upgrades.map((u) => `\t${u.name}: ${u.from} -> ${u.to}`));
      } else details.push('Your packages are up to date.');
    } else details.push('pkg is not bootstrapped: no packages to update.');
    const newer = Object.entries(await branches()).filter(([, s]) => s === 'available');
    const next = newer.at(-1)?.[0];
    if (next) {
      out.majorupgrade = { name: `FreeBSD ${next}`, tag: next, version: next };
      details.push(`FreeBSD ${next} is available (startupdate target chbranch, branch ${next}); ${version} is installed.`);
    }
    out.status = out.security || out.packageupdate || out.majorupgrade ? 'updatesavailable' : 'noupdates';
    out.details = `${details.join('\n')}\n`;
    return out;
  };

  const plan = async (target: UpdateTarget, settings: UpdateSettings, lastCheck: UpdateCheck | null): Promise<UpdateRun> => {
    let release: string | null = null;
    let base = false;
    if (target.target === 'chbranch') release = target.branch;
    else if (target.target === 'standalone') {
      if (lastCheck?.majorupgrade?.tag === target.tag) release = target.tag;
      else if (lastCheck?.security?.name === target.tag) base = true;
      else
        throw badRequest(`tag: no update named ${target.tag} in the last check (checkupdates names them)`, [
          { field: 'tag', message: 'not an available update' },
        ]);
    }
    if (release !== null && (await branches())[release] !== 'available') {
      const field = target.target === 'chbranch' ? 'branch' : 'tag';
      throw badRequest(`${field}: ${release} is not a release this host can switch to (listbranches)`, [{ field, message: 'not an available branch' }]);
    }
    const steps: Array<{ argv: string[]; input?: string }> = [];
    if (release) steps.push({ argv: [...FREEBSD_UPDATE, '-r', release, 'upgrade'], input: YES }, { argv: [...FREEBSD_UPDATE, 'install'] });
    if (base) steps.push({ argv: [...FREEBSD_UPDATE, 'install'] });
    if (target.target === 'pkgupdate') steps.push({ argv: ['pkg', 'upgrade', '-y'] });
    const tool = await beTool(runner);
    const be = `${AUTO_BE}${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '')}`;
    const maxbe = Number(settings.maxbe ?? '') || 5;
    return {
      commands: [...(tool ? [`${tool} create ${be}`] : []), ...steps.map((s) => s.argv.join(' '))],
      async run(job) {
        if (tool) {
          const made = await job.run([tool, 'create', be], { timeoutMs: 10 * 60_000 });
          if (made.code !== 0) return { success: false, reason: failureText(`${tool} create`, made) };
          await pruneBootEnvironments(job, runner, tool, maxbe);
        } else job.log('No boot environment taken: neither bectl nor beadm works here (not a ZFS root?).\n');
        for (const [i, step] of steps.entries()) {
          if (job.signal.aborted) return { success: false };
          const result = await job.run(step.argv, { timeoutMs: UPDATE_TIMEOUT_MS, ...(step.input ? { input: step.input } : {}) });
          if (result.code !== 0) return { success: false, reason: failureText(step.argv.slice(2).join(' '), result) };
          job.progress(((i + 1) / steps.length) * 100);
        }
        return { success: true };
      },
    };
  };

  return {
    store,
    check: async (signal) => ((await isTrueos()) ? trueosPort.check(signal) : check(signal)),
    async rebootRequired() {
      if (await isTrueos()) return trueosPort.rebootRequired();
      const kernel = await runner.run(['freebsd-version', '-k'], { timeoutMs: 10_000 });
      const running = await runner.run(['uname', '-r'], { timeoutMs: 10_000 });
      if (kernel.code !== 0 || running.code !== 0) return null;
      const [k, r] = [kernel.stdout.trim(), running.stdout.trim()];
      return k !== r
        ? `Kernel ${k} is installed but ${r} is running: reboot to finish the update (after an upgrade, run startupdate again once rebooted).`
        : null;
    },
    branches: async () => ((await isTrueos()) ? trueosPort.branches() : branches()),
    planUpdate: async (target, context) =>
      (await isTrueos()) ? trueosPort.plan(target, context.lastCheck) : plan(target, context.settings, context.lastCheck),
    stopOthers: async () => ((await isTrueos()) ? trueosPort.stop() : false),
  };
}

/** bectl where it works (FreeBSD 12 and later on a ZFS root), else beadm, else none. */
async function beTool(runner: CommandRunner): Promise<BeTool> {
  for (const tool of ['bectl', 'beadm'] as const) {
    if ((await runner.run([tool, 'list', '-H'], { timeoutMs: 30_000 })).code === 0) return tool;
  }
  return null;
}

/** Destroys the oldest boot environments the agent made beyond `maxbe`; an active one is never touched. */
async function pruneBootEnvironments(job: JobContext, runner: CommandRunner, tool: 'bectl' | 'beadm', maxbe: number): Promise<void> {
  const listed = await runner.run([tool, 'list', '-H'], { timeoutMs: 30_000 });
  if (listed.code !== 0) return;
  const ours = parseBootEnvironments(listed.stdout)
    .filter((be) => be.name.startsWith(AUTO_BE))
    .sort((a, b) => a.name.localeCompare(b.name));
  const surplus = ours.slice(0, Math.max(0, ours.length - maxbe)).filter((be) => !be.active);
  for (const be of surplus) {
    const argv = tool === 'bectl' ? ['bectl', 'destroy', '-o', be.name] : ['beadm', 'destroy', '-F', be.name];
    const done = await job.run(argv, { timeoutMs: 10 * 60_000 });
    if (done.code !== 0) job.log(`Could not destroy boot environment ${be.name} (maxbe ${maxbe}); it stays.\n`);
  }
}
