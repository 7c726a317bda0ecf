/**
 * The simulated host's updates (the `update` slice), shaped as the FreeBSD platform reports them: a
 * FreeBSD 14.1-RELEASE-p5 with a security patch level waiting (14.1-RELEASE-p6), newer releases to
 * switch to (freebsd-update only goes forward), and three package updates. An update runs as a job with progress and a log, takes a
 * boot environment first (pruning the auto-created ones past `maxbe`), and changes the state only
 * when it completes, so a stopped update changes nothing. Base changes need a reboot: `rebootrequired`
 * until the simulated host reboots (`systemmanager reboot`). No host command ever runs.
 */
import { abortableSleep } from '../../jobs/simulated-work.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import type { BranchState, UpdateCheck, UpdateLogInfo, UpdatePort, UpdateRun, UpdateSettings, UpdateTarget } from '../ports/update.ts';
import type { StoredCheck } from '../ports/update.ts';
import type { JobContext } from '../../jobs/types.ts';
import { seedSystem, type SimSystemState } from './systemmanager/seed.ts';

interface SimPackageUpdate {
  name: string;
  from: string;
  to: string;
}

interface SimLog extends UpdateLogInfo {
  text: string;
}

export interface SimUpdate {
  /** Installed base, `14.1-RELEASE-p5`. */
  version: string;
  /** Patch level the mirrors offer for the installed release, or null when it is current. */
  patchAvailable: string | null;
  branches: string[];
  packages: SimPackageUpdate[];
  settings: UpdateSettings;
  check: StoredCheck | null;
  logs: SimLog[];
  /** Boot environments the updates created, oldest first (pruned to `maxbe`). */
  bootEnvironments: string[];
  /** Set when a base change waits for a reboot: what changed, and when (epoch ms). */
  pendingReboot: { details: string; since: number } | null;
}

const MAX_SIM_LOGS = 20;
const MAX_SIM_LOG_CHARS = 64 * 1024;
/** How long each simulated step takes; a branch switch has the most steps (it can be stopped midway). */
const STEP_MS = 150;

export function seedUpdate(): SimUpdate {
  return {
    version: '14.1-RELEASE-p5',
    patchAvailable: '14.1-RELEASE-p6',
    branches: ['14.1-RELEASE', '14.2-RELEASE', '14.3-RELEASE', '15.0-RELEASE'],
    packages: [
      { name: 'curl', from: '8.9.1', to: '8.10.1' },
      { name: 'git', from: '2.45.2', to: '2.46.0' },
      { name: 'sudo', from: '1.9.15p5', to: '1.9.16' },
    ],
    settings: { maxbe: '5', auto_update: 'disabled' },
    check: null,
    logs: [],
    bootEnvironments: [],
    pendingReboot: null,
  };
}

const releaseOf = (version: string) => version.replace(/-p\d+$/, '');

export function simUpdate(ctx: SimContext): UpdatePort {
  const slice = ctx.store.slice('update', seedUpdate);
  // The systemmanager slice says when the simulated host last booted (a reboot ends `rebootrequired`).
  const system = ctx.store.slice<SimSystemState>('systemmanager', () => seedSystem(Date.now()));

  const findings = (): UpdateCheck => {
    const s = slice.get();
    const release = releaseOf(s.version);
    const newer = s.branches.filter((b) => compareRelease(b, release) > 0).sort(compareRelease);
    const lines: string[] = [];
    const out: UpdateCheck = { status: 'noupdates', details: '' };
    if (s.patchAvailable) {
      out.security = { name: s.patchAvailable };
      lines.push(
        `The following files will be updated as part of updating to ${s.patchAvailable}:`,
        '/bin/freebsd-version',
        '/boot/kernel/kernel',
        '/lib/libc.so.7',
      );
    }
    const next = newer.at(-1);
    if (next) {
      out.majorupgrade = { name: `FreeBSD ${next}`, tag: next, version: next };
      lines.push(`FreeBSD ${next} is available (startupdate target chbranch, branch ${next}).`);
    }
    if (s.packages.length > 0) {
      out.packageupdate = { name: `${s.packages.length} package updates` };
      lines.push(`The following ${s.packages.length} package(s) will be affected (of 0 checked):`, '', 'Installed packages to be UPGRADED:');
      for (const p of s.packages) lines.push(`\t${p.name}: ${p.from} -> ${p.to}`);
    }
    out.status = lines.length > 0 ? 'updatesavailable' : 'noupdates';
    out.details = lines.length > 0 ? `${lines.join('\n')}\n` : `No updates needed to update system to ${s.version}.\nYour packages are up to date.\n`;
    return out;
  };

  const plan = (target: UpdateTarget, settings: UpdateSettings): UpdateRun => {
    const s = slice.get();
    const release = releaseOf(s.version);
    if (target.target === 'chbranch' && (!s.branches.includes(target.branch) || compareRelease(target.branch, release) <= 0)) {
      throw badRequest(`branch: ${target.branch} is not a branch this host can switch to (listbranches)`, [
        { field: 'branch', message: 'not an available branch' },
      ]);
    }
    if (target.target === 'standalone' && target.tag !== s.patchAvailable && !(s.branches.includes(target.tag) && compareRelease(target.tag, release) > 0)) {
      throw badRequest(`tag: no update named ${target.tag} (checkupdates names them)`, [{ field: 'tag', message: 'not an available update' }]);
    }
    const be = `update-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '')}`;
    const base = target.target === 'chbranch' ? target.branch : target.target === 'standalone' ? target.tag : null;
    const upgrade = base !== null && !/-p\d+$/.test(base) ? base : null;
    const commands = [
      `bectl create ${be}`,
      ...(upgrade ? [`freebsd-update --not-running-from-cron -r ${upgrade} upgrade`, 'freebsd-update --not-running-from-cron install'] : []),
      ...(base && !upgrade ? ['freebsd-update --not-running-from-cron install'] : []),
      ...(target.target === 'pkgupdate' ? ['pkg upgrade -y'] : []),
    ];
    return {
      commands,
      async run(job: JobContext) {
        const steps = [`Created boot environment ${be}\n`];
        if (upgrade) {
          for (let i = 1; i <= 40; i++) steps.push(`Fetching files from ${release} for merging... ${i * 250} of 10000\n`);
          steps.push(`Installing updates... done.\nKernel updated to ${upgrade}; reboot, then run freebsd-update install again.\n`);
        } else if (base) {
          steps.push(`Installing updates to ${base}...`, ' done.\n');
        } else {
          if (s.packages.length === 0) steps.push('Your packages are up to date.\n');
          s.packages.forEach((p, i) => steps.push(`[${i + 1}/${s.packages.length}] Upgrading ${p.name} from ${p.from} to ${p.to}... done\n`));
        }
        for (const [i, text] of steps.entries()) {
          if (!(await abortableSleep(STEP_MS, job.signal))) return { success: false, reason: 'stopped' };
          job.log(text);
          job.progress(((i + 1) / steps.length) * 100);
        }
        const maxbe = Number(settings.maxbe ?? '5') || 5;
        slice.update((draft) => {
          draft.bootEnvironments.push(be);
          const pruned = draft.bootEnvironments.splice(0, Math.max(0, draft.bootEnvironments.length - maxbe));
          if (pruned.length > 0) job.log(`Destroyed boot environment(s) past maxbe ${maxbe}: ${pruned.join(', ')}\n`);
          if (upgrade) {
            draft.version = upgrade;
            draft.patchAvailable = null;
            draft.pendingReboot = { details: `Upgraded to ${upgrade}; reboot to finish.`, since: Date.now() };
          } else if (base) {
            draft.version = base;
            draft.patchAvailable = null;
            draft.pendingReboot = { details: `Installed ${base}; reboot to run the new kernel.`, since: Date.now() };
          } else {
            draft.packages = [];
          }
        });
        return { success: true };
      },
    };
  };

  return {
    store: {
      async readSettings() {
        return { ...slice.get().settings };
      },
      async writeSettings(settings) {
        slice.update((draft) => {
          draft.settings = { ...settings };
        });
      },
      async readCheck() {
        return slice.get().check;
      },
      async writeCheck(check) {
        slice.update((draft) => {
          draft.check = check;
        });
      },
      async listLogs() {
        return slice
          .get()
          .logs.map(({ name, started, finished }) => ({ name, started, finished }))
          .sort((a, b) => b.started - a.started || a.name.localeCompare(b.name));
      },
      async readLog(name) {
        return slice.get().logs.find((l) => l.name === name)?.text ?? null;
      },
      createLog(name) {
        const now = Math.floor(Date.now() / 1000);
        slice.update((draft) => {
          draft.logs.push({ name, started: now, finished: now, text: '' });
          draft.logs.splice(0, Math.max(0, draft.logs.length - MAX_SIM_LOGS));
        });
        return {
          append(text) {
            slice.update((draft) => {
              const log = draft.logs.find((l) => l.name === name);
              if (!log) return;
              log.text = (log.text + text).slice(0, MAX_SIM_LOG_CHARS);
              log.finished = Math.floor(Date.now() / 1000);
            });
          },
          close() {},
        };
      },
    },
    async check() {
      return findings();
    },
    async rebootRequired() {
      const pending = slice.get().pendingReboot;
      if (!pending) return null;
      if (system.get().bootedAt > pending.since) {
        slice.update((draft) => {
          draft.pendingReboot = null;
        });
        return null;
      }
      return pending.details;
    },
    async branches() {
      const s = slice.get();
      const active = releaseOf(s.version);
      const out: Record<string, BranchState> = {};
      for (const b of [...new Set([...s.branches, active])].sort(compareRelease)) out[b] = b === active ? 'active' : 'available';
      return out;
    },
    async planUpdate(target, context) {
      return plan(target, context.settings);
    },
  };
}

/** `13.4-RELEASE` < `14.1-RELEASE` < `14.2-RELEASE`, by the numbers. */
export function compareRelease(a: string, b: string): number {
  const num = (v: string) => (v.match(/^(\d+)\.(\d+)/) ?? []).slice(1).map(Number);
  const [a1 = 0, a2 = 0] = num(a);
  const [b1 = 0, b2 = 0] = num(b);
  return a1 - b1 || a2 - b2 || a.localeCompare(b);
}

/** Waits, or returns false at once when the job is stopped. */
