/**
 * FreeBSD updates: the parsers against real published outputs (test/fixtures/freebsd/update, sources
 * in update.source.md), then every action through a real agent on the FreeBSD platform whose runner
 * answers like a FreeBSD 14.0 host on a ZFS root (and like a TrueOS host with pc-updatemanager): the
 * argv each action runs is compared with the checked-in snapshot (times in names masked).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import {
  compareReleases,
  parseBootEnvironments,
  parseFreebsdUpdateFetch,
  parsePkgUpgradeDryRun,
  parseTrueosBranches,
  parseTrueosUpdates,
} from '@hostadm/agent/platforms/freebsd/parse/update.ts';
import { startTestAgent, type TestClient } from '../helpers/agent.ts';
import { keySession, snapshotArgv } from './services-support.ts';
import { checkUntilAnswered, finishedEvent, startUpdate, upd, updError } from './update-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/update/${name}`, import.meta.url), 'utf8');

test('freebsd-update fetch: nothing needed, a file list, and a fetch that says neither (cannot tell)', () => {
  assert.deepEqual(parseFreebsdUpdateFetch(fixture('freebsd-update-fetch-current.txt')), { target: '11.2-RELEASE-p4', current: true, files: [] });
  assert.deepEqual(parseFreebsdUpdateFetch(fixture('freebsd-update-fetch-updates.txt')), {
    target: '14.0-RELEASE-p5',
    current: false,
    files: ['/bin/freebsd-version', '/lib/libc.so.7', '/usr/sbin/sshd'],
  });
  assert.equal(parseFreebsdUpdateFetch(fixture('freebsd-update-fetch-partial.txt')), null);
  assert.equal(parseFreebsdUpdateFetch(''), null);
});

test('pkg upgrade -n: upgrades with versions, new packages, pkg first, up to date, and unreadable output', () => {
  const plan = parsePkgUpgradeDryRun(fixture('pkg-upgrade-n-updates.txt'));
  assert.equal(plan?.upgrades.length, 20);
  assert.deepEqual(plan?.upgrades[0], { name: 'subversion', from: '1.9.3_3', to: '1.9.5' });
  assert.deepEqual(plan?.upgrades.at(-1), { name: 'apr', from: '1.5.2.1.5.4', to: '1.5.2.1.5.4_2' });
  assert.deepEqual(plan?.installs, ['pcre 8.40', 'libnghttp2 1.21.1']);
  assert.deepEqual(parsePkgUpgradeDryRun(fixture('pkg-upgrade-n-pkg-first.txt')), {
    upgrades: [{ name: 'pkg', from: '1.19.1_1', to: '1.20.5' }],
    installs: [],
  });
  assert.deepEqual(parsePkgUpgradeDryRun(fixture('pkg-upgrade-n-current.txt')), { upgrades: [], installs: [] });
  assert.equal(parsePkgUpgradeDryRun('pkg: No address record\nUnable to update repository FreeBSD\n'), null);
  // The PC-BSD report carries the same list, indented.
  assert.equal(parsePkgUpgradeDryRun(fixture('pc-updatemanager-pkgcheck.txt'))?.upgrades.length, 8);
});

test('bectl list, with and without -H: names and which are active', () => {
  assert.deepEqual(parseBootEnvironments(fixture('bectl-list.txt')), [
    { name: '14.2-RELEASE_2025-03-01_190330', active: false },
    { name: 'default', active: true },
  ]);
  assert.deepEqual(parseBootEnvironments(fixture('bectl-list-renamed.txt')), [
    { name: 'safe', active: true },
    { name: 'default', active: false },
  ]);
  assert.deepEqual(parseBootEnvironments('default\tNR\t/\t675M\t2025-03-01 17:42\nold\t-\t-\t4.2M\t2025-02-01 10:00\n'), [
    { name: 'default', active: true },
    { name: 'old', active: false },
  ]);
});

test('pc-updatemanager: the NAME/TYPE report and the branch list', () => {
  assert.deepEqual(parseTrueosUpdates(fixture('pc-updatemanager-check.txt')), [{ name: 'FreeBSD security updates', type: 'SECURITYUPDATE', rest: [] }]);
  assert.deepEqual(parseTrueosUpdates(fixture('pc-updatemanager-pkgcheck.txt')), [{ name: 'System package updates', type: 'PKGUPDATE', rest: [] }]);
  assert.deepEqual(parseTrueosBranches(fixture('pc-updatemanager-branches.txt')), {
    '10.1': 'active',
    '10.2': 'available',
    '10.3': 'available',
    '11.0': 'available',
  });
  assert.ok(compareReleases('14.2-RELEASE', '14.10-RELEASE') < 0 && compareReleases('15.0-RC1', '15.0-RELEASE') < 0);
});

const ours = (n: number) => `hostadm-update-2026010${n}T000000`;
const BE_LIST = ['default\tNR\t/\t675M\t2025-03-01 17:42', ...[1, 2, 3].map((n) => `${ours(n)}\t-\t-\t4.2M\t2026-01-0${n} 00:00`)].join('\n');

/** Answers bectl from its boot environments, as they change. */
class FreebsdUpdateHost extends RecordingRunner {
  bootEnvironments = [...BE_LIST.split('\n')];

  override async run(argv: readonly string[], options = {}) {
    const reply = await super.run(argv, options);
    if (argv[0] !== 'bectl') return reply;
    if (argv[1] === 'list') return { ...reply, stdout: `${this.bootEnvironments.join('\n')}\n` };
    if (argv[1] === 'create') this.bootEnvironments.push(`${argv[2]}\t-\t-\t8K\t2026-11-25 03:00`);
    if (argv[1] === 'destroy') this.bootEnvironments = this.bootEnvironments.filter((line) => !line.startsWith(`${argv.at(-1)}\t`));
    return reply;
  }
}

function freebsdHost(extra: CannedReply[] = []): FreebsdUpdateHost {
  return new FreebsdUpdateHost([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    ...extra,
    { match: ['test', '-x', '/usr/local/bin/pc-updatemanager'], code: 1 },
    { match: ['freebsd-version', '-u'], stdout: '14.0-RELEASE-p4\n' },
    { match: ['freebsd-version', '-k'], stdout: '14.0-RELEASE-p4\n' },
    { match: ['uname', '-r'], stdout: '14.0-RELEASE-p4\n' },
    { match: ['env', 'PAGER=cat', 'freebsd-update', '--not-running-from-cron', 'fetch'], stdout: fixture('freebsd-update-fetch-updates.txt') },
    { match: ['pkg', '-N'], stdout: 'pkg: 42 packages installed\n' },
    { match: ['pkg', 'update'], stdout: 'Updating FreeBSD repository catalogue...\nAll repositories are up to date.\n' },
    { match: ['pkg', 'upgrade', '-n', '-U'], stdout: fixture('pkg-upgrade-n-updates.txt'), code: 1 },
    {
      match: ['cat', '--', '/usr/local/etc/hostadm/update-releases'],
      stdout: '# releases this host may move to\n14.1-RELEASE\n14.2-RELEASE\n13.4-RELEASE\nnot a release\n',
    },
    { match: ['bectl', 'list', '-H'] },
    { match: (argv) => argv[0] === 'bectl' && (argv[1] === 'create' || argv[1] === 'destroy'), stdout: '' },
    { match: (argv) => argv[0] === 'env' && argv.includes('install'), stdout: 'Installing updates... done.\n' },
    {
      match: (argv) => argv[0] === 'env' && argv.includes('upgrade'),
      stdout: 'Fetching metadata signature for 14.2-RELEASE from update1.freebsd.org... done.\n',
    },
    { match: ['pkg', 'upgrade', '-y'], stdout: '[1/20] Upgrading subversion from 1.9.3_3 to 1.9.5...\n' },
  ]);
}

async function agentOn(t: TestContext, host: RecordingRunner): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  await root.request('events', 'subscribe', ['dispatcher']);
  host.calls.length = 0;
  return root;
}

/** Boot environment and log names carry the time: masked so the snapshot is stable. */
const masked = (calls: string[][]) => calls.map((argv) => argv.map((a) => a.replace(/\d{8}T\d{6}/g, 'YYYYMMDDTHHMMSS')));

test('FreeBSD: every action runs freebsd-update, pkg and bectl as an administrator would (argv snapshot)', async (t) => {
  const host = freebsdHost();
  const root = await agentOn(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async <T>(label: string, act: () => Promise<T>): Promise<T> => {
    host.calls.length = 0;
    const out = await act();
    ran[label] = masked(host.calls);
    return out;
  };

  const found = await step('checkupdates', () => checkUntilAnswered(root));
  assert.equal(found.checkupdates.status, 'updatesavailable');
  assert.deepEqual(found.checkupdates.security, { name: '14.0-RELEASE-p5' });
  assert.deepEqual(found.checkupdates.packageupdate, { name: '20 package updates' });
  assert.deepEqual(found.checkupdates.majorupgrade, { name: 'FreeBSD 14.2-RELEASE', tag: '14.2-RELEASE', version: '14.2-RELEASE' });
  assert.deepEqual(await step('listbranches', () => upd(root, 'listbranches')), {
    listbranches: { '14.0-RELEASE': 'active', '14.1-RELEASE': 'available', '14.2-RELEASE': 'available' },
  });
  await step('changesettings', () => upd(root, 'changesettings', { maxbe: 3 }));
  assert.deepEqual(await step('listsettings', () => upd(root, 'listsettings')), { listsettings: { maxbe: '3' } });

  const pkgs = await step('startupdate pkgupdate (boot environment, prune past maxbe 3)', async () => {
    const ack = await startUpdate(root, { target: 'pkgupdate' });
    return finishedEvent(root, ack.queueid);
  });
  assert.equal(pkgs.success, 'true', String(pkgs.reason));
  assert.match(String(pkgs.update_log), /Upgrading subversion/);
  const left = host.bootEnvironments.map((line) => line.split('\t')[0]);
  assert.deepEqual(left.slice(0, 3), ['default', ours(2), ours(3)], 'the oldest of ours beyond maxbe went; default (active) never');
  assert.match(left[3] ?? '', /^hostadm-update-\d{8}T\d{6}$/);
  assert.equal(left.length, 4);

  await checkUntilAnswered(root, true);
  const patch = await step('startupdate standalone (the base patch level)', async () => {
    const ack = await startUpdate(root, { target: 'standalone', tag: '14.0-RELEASE-p5' });
    return finishedEvent(root, ack.queueid);
  });
  assert.equal(patch.success, 'true', String(patch.reason));
  const upgrade = await step('startupdate chbranch', async () => {
    const ack = await startUpdate(root, { target: 'chbranch', branch: '14.2-RELEASE' });
    return finishedEvent(root, ack.queueid);
  });
  assert.equal(upgrade.success, 'true', String(upgrade.reason));
  const logs = await step('listlogs', () => upd(root, 'listlogs'));
  const names = Object.keys(logs.listlogs as object);
  assert.equal(names.length, 3);
  const texts = await step('readlogs', () => upd(root, 'readlogs', { logs: names }));
  assert.ok(Object.values(texts.readlogs as Record<string, string>).every((text) => /Update finished, /.test(text)));
  await step('stopupdate (nothing running: 409)', () => updError(root, 'stopupdate', {}, 409));

  host.calls.length = 0;
  await updError(root, 'startupdate', { target: 'chbranch', branch: '13.4-RELEASE' }, 400);
  await updError(root, 'startupdate', { target: 'standalone', tag: '14.0-RELEASE-p9' }, 400);
  assert.ok(!host.calls.some((argv) => argv.includes('create') || argv.includes('install')), 'a refused update runs nothing');
  snapshotArgv(t, ran);
});

test('FreeBSD: a fetch that fails or says nothing readable is checkfailed, never noupdates', async (t) => {
  const host = freebsdHost([
    {
      match: ['env', 'PAGER=cat', 'freebsd-update', '--not-running-from-cron', 'fetch'],
      stdout:
        'Looking up update.FreeBSD.org mirrors... none found.\nFetching metadata signature for 14.0-RELEASE from update.FreeBSD.org... failed.\nNo mirrors remaining, giving up.\n',
      code: 1,
    },
  ]);
  const root = await agentOn(t, host);
  const failed = await checkUntilAnswered(root);
  assert.equal(failed.checkupdates.status, 'checkfailed');
  assert.match(failed.checkupdates.details, /freebsd-update fetch exited with code 1: .*No mirrors remaining, giving up/s);
});

test('FreeBSD: a newer kernel installed than running is rebootrequired', async (t) => {
  const host = freebsdHost([{ match: ['freebsd-version', '-k'], stdout: '14.2-RELEASE\n' }]);
  const root = await agentOn(t, host);
  const reply = await checkUntilAnswered(root);
  assert.equal(reply.checkupdates.status, 'rebootrequired');
  assert.match(reply.checkupdates.details, /Kernel 14\.2-RELEASE is installed but 14\.0-RELEASE-p4 is running/);
});

function trueosHost(): RecordingRunner {
  const pcu = '/usr/local/bin/pc-updatemanager';
  return new RecordingRunner([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: ['test', '-x', pcu] },
    { match: ['cat', '--', '/tmp/.trueos-update-staged'], stderr: 'cat: /tmp/.trueos-update-staged: No such file or directory\n', code: 1 },
    { match: [pcu, 'check'], stdout: fixture('pc-updatemanager-check.txt') },
    { match: [pcu, 'pkgcheck'], stdout: fixture('pc-updatemanager-pkgcheck.txt') },
    { match: [pcu, 'branches'], stdout: fixture('pc-updatemanager-branches.txt') },
    { match: (argv) => argv[0] === pcu, stdout: 'Your update is finished! Please reboot to load into the new boot-environment\n' },
    { match: ['find', '/var/log', '-maxdepth', '1', '-type', 'f', '-name', 'pc-updatemanager*'], stdout: '/var/log/pc-updatemanager.log\n' },
    { match: ['stat', '-f', '%B %m', '--', '/var/log/pc-updatemanager.log'], stdout: '1700000000 1700000500\n' },
    { match: ['cat', '--', '/var/log/pc-updatemanager.log'], stdout: 'Creating stage BE...\n' },
    { match: ['pkill', '-F', '/tmp/.updateInProgress'], code: 1 },
  ]);
}

test('TrueOS: pc-updatemanager does the work, as the original drove it (argv snapshot)', async (t) => {
  const host = trueosHost();
  const root = await agentOn(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async <T>(label: string, act: () => Promise<T>): Promise<T> => {
    host.calls.length = 0;
    const out = await act();
    ran[label] = masked(host.calls);
    return out;
  };
  const found = await step('checkupdates', () => checkUntilAnswered(root));
  assert.equal(found.checkupdates.status, 'updatesavailable');
  assert.deepEqual(found.checkupdates.security, { name: 'FreeBSD security updates' });
  assert.deepEqual(found.checkupdates.packageupdate, { name: 'System package updates' });
  assert.deepEqual(await step('listbranches', () => upd(root, 'listbranches')), {
    listbranches: { '10.1': 'active', '10.2': 'available', '10.3': 'available', '11.0': 'available' },
  });
  for (const [label, args] of [
    ['startupdate pkgupdate', { target: 'pkgupdate' }],
    ['startupdate standalone (security: fbsdupdate)', { target: 'standalone', tag: 'fbsdupdate' }],
    ['startupdate chbranch', { target: 'chbranch', branch: '11.0' }],
  ] as const) {
    // An update forgets the cached check: the tags standalone takes come from a fresh one.
    await checkUntilAnswered(root);
    const done = await step(label, async () => finishedEvent(root, (await startUpdate(root, args)).queueid));
    assert.equal(done.success, 'true', String(done.reason));
  }
  const logs = (await step('listlogs', () => upd(root, 'listlogs'))).listlogs as Record<string, { started: string; finished: string }>;
  assert.deepEqual(logs['pc-updatemanager.log'], { name: 'pc-updatemanager.log', started: '1700000000', finished: '1700000500' });
  assert.deepEqual(await step('readlogs', () => upd(root, 'readlogs', { logs: 'pc-updatemanager.log' })), {
    readlogs: { 'pc-updatemanager.log': 'Creating stage BE...\n' },
  });
  await step('stopupdate (nothing running: 409)', () => updError(root, 'stopupdate', {}, 409));
  await updError(root, 'startupdate', { target: 'chbranch', branch: '10.1' }, 400);
  snapshotArgv(t, ran);
});
