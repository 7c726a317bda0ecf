/**
 * TrueOS / PC-BSD: `pc-updatemanager` does the updates, boot environments included, and the agent
 * drives it as the original did (its commands, its `NAME:`/`TYPE:` report, its logs
 * `/var/log/pc-updatemanager*`, its staged-update marker and pid file), minus the original's bugs: a
 * report we cannot read fails the check instead of reading as "no updates", and `stopupdate` finds
 * the agent's own jobs (the handler) before the updater's pid file. The security update's name has
 * spaces (`FreeBSD security updates`), so `standalone` takes the command its report names, `fbsdupdate`.
 */
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner } from '../../runner/runner.ts';
import type { HostLogs } from '../common/update-files.ts';
import type { UpdateCheck, UpdatePatch, UpdateRun, UpdateTarget } from '../ports/update.ts';
import { parseTrueosBranches, parseTrueosUpdates } from './parse/update.ts';

export const PC_UPDATEMANAGER = '/usr/local/bin/pc-updatemanager';
const STAGED = '/tmp/.trueos-update-staged';
const PID_FILE = '/tmp/.updateInProgress';
const LOG_NAME = /^pc-updatemanager[A-Za-z0-9_.:@+-]*$/;
const TIMEOUT_MS = 30 * 60_000;

const second = (line: string | undefined) => (line ?? '').split(/\s+/)[1] ?? '';

export function trueosUpdate(runner: CommandRunner, present: () => Promise<boolean>) {
  const run = async (args: string[], signal?: AbortSignal) => {
    const result = await runner.run([PC_UPDATEMANAGER, ...args], { timeoutMs: TIMEOUT_MS, ...(signal ? { signal } : {}) });
    if (result.code !== 0) throw new HostadmError('HOST_ERROR', failureText(`pc-updatemanager ${args.join(' ')}`, result));
    return result.stdout;
  };

  const logs: HostLogs = {
    async list() {
      if (!(await present())) return [];
      const found = await runner.run(['find', '/var/log', '-maxdepth', '1', '-type', 'f', '-name', 'pc-updatemanager*'], { timeoutMs: 10_000 });
      const out = [];
      for (const path of found.stdout.split('\n').filter(Boolean)) {
        const name = path.slice('/var/log/'.length);
        if (!LOG_NAME.test(name)) continue;
        const st = await runner.run(['stat', '-f', '%B %m', '--', path], { timeoutMs: 10_000 });
        const [born = 0, modified = 0] = st.stdout.trim().split(' ').map(Number);
        if (st.code === 0) out.push({ name, started: born || modified, finished: modified });
      }
      return out;
    },
    async read(name) {
      if (!LOG_NAME.test(name) || !(await present())) return null;
      const result = await runner.run(['cat', '--', `/var/log/${name}`], { timeoutMs: 10_000 });
      return result.code === 0 ? result.stdout : null;
    },
  };

  const branches = async () => parseTrueosBranches(await run(['branches']));

  return {
    logs,
    async check(signal: AbortSignal): Promise<UpdateCheck> {
      const system = await run(['check'], signal);
      const packages = await run(['pkgcheck'], signal);
      const text = `${system}\n${packages}`;
      const found = parseTrueosUpdates(text);
      if (found.length === 0 && !/up to date/i.test(text))
        throw new HostadmError('HOST_ERROR', `pc-updatemanager gave no report we can read: ${text.trim().slice(0, 300)}`);
      const out: UpdateCheck = { status: found.length > 0 ? 'updatesavailable' : 'noupdates', details: text };
      const patches: UpdatePatch[] = [];
      for (const u of found) {
        if (u.type === 'SECURITYUPDATE') out.security = { name: u.name };
        else if (u.type === 'SYSTEMUPDATE') out.majorupgrade = { name: u.name, tag: second(u.rest[0]), version: second(u.rest[1]) };
        else if (u.type === 'PKGUPDATE') out.packageupdate = { name: u.name };
        else if (u.type === 'PATCH') {
          patches.push({ name: u.name, tag: second(u.rest[0]), details: second(u.rest[1]), date: second(u.rest[2]), size: second(u.rest[3]) });
        }
      }
      if (patches.length > 0) out.patches = patches;
      return out;
    },
    async rebootRequired() {
      const staged = await runner.run(['cat', '--', STAGED], { timeoutMs: 10_000 });
      return staged.code === 0 ? staged.stdout.trim() || 'An update is staged; reboot to install it.' : null;
    },
    branches,
    async plan(target: UpdateTarget, lastCheck: UpdateCheck | null): Promise<UpdateRun> {
      let args: string[];
      if (target.target === 'pkgupdate') args = ['pkgupdate'];
      else if (target.target === 'chbranch') {
        if ((await branches())[target.branch] !== 'available') {
          throw badRequest(`branch: ${target.branch} is not a branch this host can switch to (listbranches)`, [
            { field: 'branch', message: 'not an available branch' },
          ]);
        }
        args = ['chbranch', target.branch];
      } else if (lastCheck?.security && target.tag === 'fbsdupdate') args = ['fbsdupdate'];
      else if (lastCheck?.majorupgrade?.tag === target.tag || lastCheck?.patches?.some((p) => p.tag === target.tag)) args = ['install', target.tag];
      else
        throw badRequest(`tag: no update named ${target.tag} in the last check (checkupdates names them)`, [
          { field: 'tag', message: 'not an available update' },
        ]);
      const argv = [PC_UPDATEMANAGER, ...args];
      return {
        commands: [argv.join(' ')],
        async run(job) {
          const result = await job.run(argv, { timeoutMs: 6 * 3600_000 });
          return result.code === 0 ? { success: true } : { success: false, reason: failureText(`pc-updatemanager ${args.join(' ')}`, result) };
        },
      };
    },
    /** The updater's own pid file (an update started outside the agent). */
    async stop(): Promise<boolean> {
      const result = await runner.run(['pkill', '-F', PID_FILE], { timeoutMs: 10_000 });
      return result.code === 0;
    },
  };
}
