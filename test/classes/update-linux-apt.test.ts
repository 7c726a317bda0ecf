/**
 * Linux updates for real: the agent's runner is aimed into an apt sandbox (the host's / under an
 * overlay in its own namespaces, a local repository built with dpkg-deb, no network). A package is
 * installed at 1.0, then 1.1 is published: the check finds it, `standalone` and `pkgupdate` install
 * it as queued jobs whose events carry `update_log`, the logs are listed and read (the agent's and
 * apt's history), a repository that cannot be read makes the check fail instead of "no updates", and
 * `stopupdate` kills a running upgrade's whole process group. The host's dpkg database never changes.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { canAptSandbox, createAptSandbox, hostHasPackage, type AptSandbox } from '../helpers/apt-sandbox.ts';
import { sessionClientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { checkUntilAnswered, eventsOf, finishedEvent, startUpdate, upd, updError } from './update-support.ts';

const able = canAptSandbox();
const skip = able.ok ? false : `the apt sandbox ${able.reason}`;

async function sandboxed(t: TestContext, app: string): Promise<AptSandbox> {
  const sandbox = await createAptSandbox({ hostname: 'updatebox' });
  t.after(async () => {
    await sandbox.dispose();
    assert.equal(hostHasPackage(app), false, 'the host dpkg database never heard of the test package');
  });
  return sandbox;
}

async function inside(sandbox: AptSandbox, argv: string[]): Promise<string> {
  const result = await sandbox.runner.run(argv, { timeoutMs: 120_000 });
  assert.equal(result.code, 0, `${argv.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** `app` and `app-extra` at 1.0 installed, 1.1 of both published and known to apt. */
async function installedThenNewer(sandbox: AptSandbox, app: string): Promise<void> {
  sandbox.publish([
    { name: app, version: '1.0', section: 'utils' },
    { name: `${app}-extra`, version: '1.0', section: 'utils' },
  ]);
  await inside(sandbox, ['apt-get', 'update']);
  await inside(sandbox, ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', app, `${app}-extra`]);
  sandbox.publish([
    { name: app, version: '1.1', section: 'utils' },
    { name: `${app}-extra`, version: '1.1', section: 'utils' },
  ]);
}

async function agentIn(t: TestContext, sandbox: AptSandbox): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }) });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher']);
  return root;
}

const versions = (sandbox: AptSandbox, app: string) => inside(sandbox, ['dpkg-query', '-W', '-f', '${Package} ${Version}\n', app, `${app}-extra`]);

test('check, standalone, pkgupdate: updates found and installed as queued jobs with update_log; logs listed and read', { skip }, async (t) => {
  const app = `hostadm-upd-${process.pid}`;
  const sandbox = await sandboxed(t, app);
  await installedThenNewer(sandbox, app);
  const root = await agentIn(t, sandbox);

  const found = (await checkUntilAnswered(root, true)).checkupdates;
  assert.equal(found.status, 'updatesavailable', JSON.stringify(found));
  assert.deepEqual(found.packageupdate, { name: '2 package updates' });
  assert.equal(found.security, undefined, 'nothing came from a security archive');
  const patches = Object.entries(found).filter(([k]) => /^patch\d+$/.test(k));
  assert.deepEqual(
    patches.map(([, p]) => (p as { tag: string }).tag),
    [app, `${app}-extra`],
  );
  assert.match(((patches[0] ?? [])[1] as { details: string } | undefined)?.details ?? '', /^1\.0 -> 1\.1 \(/);
  assert.match(found.details, new RegExp(`Inst ${app} \\[1\\.0\\] \\(1\\.1 `));

  await updError(root, 'startupdate', { target: 'standalone', tag: 'not-offered' }, 400);
  const one = await startUpdate(root, { target: 'standalone', tag: app });
  assert.equal(
    one.command,
    `apt-get update --error-on=any; env DEBIAN_FRONTEND=noninteractive apt-get -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install --only-upgrade ${app}`,
  );
  const oneDone = await finishedEvent(root, one.queueid);
  assert.equal(oneDone.success, 'true', String(oneDone.update_log));
  assert.equal(oneDone.event_system, 'admin/update');
  assert.match(String(oneDone.update_log), new RegExp(`Setting up ${app} \\(1\\.1\\)`));
  assert.equal(await versions(sandbox, app), `${app} 1.1\n${app}-extra 1.0\n`, 'standalone upgraded that package alone');

  const all = await startUpdate(root, { target: 'pkgupdate' });
  const allDone = await finishedEvent(root, all.queueid);
  assert.equal(allDone.success, 'true', String(allDone.update_log));
  assert.match(String(allDone.update_log), new RegExp(`Setting up ${app}-extra \\(1\\.1\\)`));
  assert.equal((allDone.process_details as Record<string, string>)['return_codes/apt-get update --error-on=any'], '0');
  assert.ok(
    eventsOf(root, all.queueid).some((e) => e.state === 'running'),
    'progress events reached the subscriber',
  );
  assert.equal(await versions(sandbox, app), `${app} 1.1\n${app}-extra 1.1\n`);

  const after = (await checkUntilAnswered(root)).checkupdates;
  assert.equal(after.packageupdate, undefined, 'the cached check was dropped after the update; nothing left to upgrade');

  const logs = (await upd(root, 'listlogs')).listlogs as Record<string, { name: string; started: string; finished: string }>;
  const agentLogs = Object.keys(logs).filter((n) => n.startsWith('update-'));
  assert.equal(agentLogs.length, 2, JSON.stringify(logs));
  assert.ok(agentLogs.some((n) => n.endsWith('-standalone.log')) && agentLogs.some((n) => n.endsWith('-pkgupdate.log')));
  assert.ok(logs['apt-history.log'], 'apt keeps its own history, listed beside ours');
  const texts = (await upd(root, 'readlogs', { logs: [...agentLogs, 'apt-history.log'] })).readlogs as Record<string, string>;
  const pkgLog = texts[agentLogs.find((n) => n.endsWith('-pkgupdate.log')) as string] ?? '';
  assert.match(pkgLog, /^Updating installed packages, started /);
  assert.match(pkgLog, /# apt-get update --error-on=any\n/);
  assert.match(pkgLog, /Update finished, /);
  assert.match(texts['apt-history.log'] ?? '', new RegExp(`Upgrade: ${app}-extra:\\w+ \\(1\\.0, 1\\.1\\)`));
  await updError(root, 'readlogs', { logs: ['history.log'] }, 400);
});

test('listbranches: the release the sources follow, and the ones the distribution released since', { skip }, async (t) => {
  const sandbox = await sandboxed(t, `hostadm-br-${process.pid}`);
  const root = await agentIn(t, sandbox);
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  const codename = /^VERSION_CODENAME=(\S+)$/m.exec(osRelease)?.[1] ?? '';
  const branches = (await upd(root, 'listbranches')).listbranches as Record<string, string>;
  assert.equal(branches[codename], 'active');
  const id = /^ID=(\S+)$/m.exec(osRelease)?.[1] ?? '';
  const table = `/usr/share/distro-info/${id}.csv`;
  if (existsSync(table)) {
    const rows = readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((l) => l.split(','));
    const from = rows.findIndex((r) => r[2] === codename);
    const today = new Date().toISOString().slice(0, 10);
    const released = rows
      .slice(from + 1)
      .filter((r) => r[4] && (r[4] as string) <= today)
      .map((r) => r[2]);
    assert.deepEqual(Object.keys(branches).sort(), [codename, ...released].sort());
  }
  await updError(root, 'startupdate', { target: 'chbranch', branch: codename }, 400);
  await updError(root, 'startupdate', { target: 'chbranch', branch: 'hamm' }, 400);
});

test('a repository that cannot be read: checkfailed with apt saying why, never noupdates; cached only briefly', { skip }, async (t) => {
  const sandbox = await sandboxed(t, `hostadm-off-${process.pid}`);
  sandbox.writeFile('/etc/apt/sources.list.d/hostadm-gone.list', 'deb [trusted=yes] file:/srv/hostadm-no-such-repo ./\n');
  const root = await agentIn(t, sandbox);
  const failed = await checkUntilAnswered(root, true);
  assert.equal(failed.checkupdates.status, 'checkfailed');
  assert.match(failed.checkupdates.details, /^The check failed: apt-get update exited with code 100: .*hostadm-no-such-repo/s);
  assert.ok(failed.last_check !== '');
  const again = await checkUntilAnswered(root);
  assert.deepEqual(again, failed, 'a failure is answered from the cache for a few minutes, not re-run on every request');
});

/** Host pids of the processes inside the sandbox's PID namespace whose argv is `argv`. */
function processesInside(sandbox: AptSandbox, argv: string[]): number[] {
  const ns = readlinkSync(`/proc/${sandbox.pid}/ns/pid`);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) !== ns) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `${argv.join('\0')}\0`) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

test('stopupdate kills a running upgrade with everything it started, and the packages stay as they were', { skip }, async (t) => {
  const app = `hostadm-stop-${process.pid}`;
  const sandbox = await sandboxed(t, app);
  await installedThenNewer(sandbox, app);
  // dpkg's hook runs before anything is unpacked: the upgrade hangs there, as a slow one would.
  sandbox.writeFile('/etc/apt/apt.conf.d/99hostadm-slow', 'DPkg::Pre-Invoke { "sleep 3600"; };\n');
  const root = await agentIn(t, sandbox);

  const ack = await startUpdate(root, { target: 'pkgupdate' });
  for (let i = 0; i < 600 && processesInside(sandbox, ['sleep', '3600']).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(processesInside(sandbox, ['sleep', '3600']).length, 1, 'the upgrade reached its hook');
  assert.equal((await checkUntilAnswered(root)).checkupdates.status, 'updaterunning');

  assert.deepEqual(await upd(root, 'stopupdate'), { stopupdate: { result: 'success' } });
  const done = await finishedEvent(root, ack.queueid);
  assert.equal(done.success, 'false');
  assert.match(String(done.reason), /killed by root/);
  assert.deepEqual(processesInside(sandbox, ['sleep', '3600']), [], 'the hook apt started is gone too');
  const ns = readlinkSync(`/proc/${sandbox.pid}/ns/pid`);
  const leftovers = readdirSync('/proc').filter((p) => {
    try {
      return /^\d+$/.test(p) && readlinkSync(`/proc/${p}/ns/pid`) === ns && /^(apt-get|dpkg|sh)\0/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
  assert.deepEqual(leftovers, [], 'no apt-get, dpkg or shell of the job is left');
  assert.equal(await versions(sandbox, app), `${app} 1.0\n${app}-extra 1.0\n`);
  await updError(root, 'stopupdate', {}, 409);
  // The dpkg lock went with the killed apt-get: the next update runs.
  sandbox.writeFile('/etc/apt/apt.conf.d/99hostadm-slow', '');
  const next = await startUpdate(root, { target: 'pkgupdate' });
  assert.equal((await finishedEvent(root, next.queueid)).success, 'true');
  assert.equal(await versions(sandbox, app), `${app} 1.1\n${app}-extra 1.1\n`);
});
