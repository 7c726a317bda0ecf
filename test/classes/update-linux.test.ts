/**
 * Linux updates without a sandbox: the apt and distro-info parsers on recorded and published outputs
 * (test/fixtures/linux/update, sources in update.source.md), then a branch switch through a real
 * agent whose runner answers like a Debian 12 host with deb822 sources: security updates and the
 * next release found, `chbranch` rewriting the sources that name the release (argv snapshot), and
 * the branch refused when it is not offered. The apt sandbox test runs the rest for real.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import { newerReleases, parseAptSimulation, parseDistroInfo, parseIndexTargets, releaseOfSuite } from '@hostadm/agent/platforms/linux/parse/update.ts';
import { startTestAgent } from '../helpers/agent.ts';
import { keySession, snapshotArgv } from './services-support.ts';
import { checkUntilAnswered, finishedEvent, startUpdate, upd, updError } from './update-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/update/${name}`, import.meta.url), 'utf8');

test('apt-get -s upgrade: installed and new versions, archives, which come from a security archive', () => {
  const noble = parseAptSimulation(fixture('apt-get-s-upgrade-noble.txt'));
  assert.equal(noble.length, 4);
  assert.deepEqual(noble[0], { name: 'libc6', from: '2.39-0ubuntu8.4', to: '2.39-0ubuntu8.5', archives: ['Ubuntu:24.04/noble-security'], security: true });
  assert.deepEqual(noble[1], { name: 'linux-image-6.8.0-63-generic', from: '', to: '6.8.0-63.66', archives: ['Ubuntu:24.04/noble-security'], security: true });
  const local = parseAptSimulation(fixture('apt-get-s-upgrade-local.txt'));
  assert.deepEqual(
    local.map((u) => [u.name, u.from, u.to, u.security]),
    [
      ['hostadm-upd', '1.0', '1.1', false],
      ['hostadm-upd-extra', '1.0', '1.1', false],
    ],
  );
  const both = parseAptSimulation('Inst tzdata [2024a-0+deb12u1] (2025b-0+deb12u1 Debian:12.11/stable, Debian-Security:12/stable-security [all])\n');
  assert.deepEqual(both[0]?.archives, ['Debian:12.11/stable', 'Debian-Security:12/stable-security']);
  assert.equal(both[0]?.security, true);
});

test('apt-get indextargets and distro-info: the release the sources follow and the ones released since', () => {
  const targets = parseIndexTargets(fixture('indextargets-bookworm.txt'));
  assert.deepEqual(
    targets.map((t) => [t.release, t.origin, t.sourcesFile]),
    [
      ['bookworm', 'Debian', '/etc/apt/sources.list.d/debian.sources'],
      ['bookworm-updates', 'Debian', '/etc/apt/sources.list.d/debian.sources'],
      ['bookworm-security', 'Debian', '/etc/apt/sources.list.d/debian.sources'],
    ],
  );
  assert.deepEqual([...new Set(targets.map((t) => releaseOfSuite(t.release)))], ['bookworm']);
  const table = parseDistroInfo(fixture('distro-info-debian.csv'));
  assert.deepEqual(
    table.find((r) => r.series === 'trixie'),
    { version: '13', series: 'trixie', released: '2025-08-09' },
  );
  assert.deepEqual(newerReleases(table, 'bookworm', '2026-11-25'), ['trixie']);
  assert.deepEqual(newerReleases(table, 'bookworm', '2025-01-01'), [], 'trixie was not out yet');
  assert.deepEqual(newerReleases(table, 'bullseye', '2026-11-25'), ['bookworm', 'trixie']);
  assert.deepEqual(newerReleases(table, 'sid', '2026-11-25'), [], 'nothing after sid is released');
  assert.deepEqual(newerReleases(table, 'nonesuch', '2026-11-25'), []);
});

const OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n';
const SOURCES = '/etc/apt/sources.list.d/debian.sources';

function debianHost(first: CannedReply[] = []): RecordingRunner {
  return new RecordingRunner([
    ...first,
    { match: ['id', '-Gn', 'root'], stdout: 'root\n' },
    { match: ['apt-get', 'indextargets'], stdout: fixture('indextargets-bookworm.txt') },
    { match: ['cat', '--', '/etc/os-release'], stdout: OS_RELEASE },
    { match: ['cat', '--', '/usr/share/distro-info/debian.csv'], stdout: fixture('distro-info-debian.csv') },
    { match: ['cat', '--', '/run/reboot-required'], stderr: 'cat: /run/reboot-required: No such file or directory\n', code: 1 },
    { match: ['apt-get', 'update', '--error-on=any'], stdout: 'Hit:1 http://deb.debian.org/debian bookworm InRelease\nReading package lists...\n' },
    { match: ['apt-get', '-s', 'upgrade'], stdout: 'Inst libc6 [2.36-9+deb12u9] (2.36-9+deb12u10 Debian-Security:12/stable-security [amd64])\n' },
    { match: (argv) => argv[0] === 'sed' || argv[0] === 'cp' || argv[0] === 'env', stdout: '' },
  ]);
}

test('Linux chbranch: the release in the sources that name it is replaced, then update, upgrade, dist-upgrade (argv snapshot)', async (t) => {
  const host = debianHost();
  const agent = await startTestAgent({ platform: 'linux', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  await root.request('events', 'subscribe', ['dispatcher']);

  const found = (await checkUntilAnswered(root)).checkupdates;
  assert.equal(found.status, 'updatesavailable');
  assert.deepEqual(found.security, { name: '1 security update: libc6' });
  assert.deepEqual(found.majorupgrade, { name: 'Debian trixie', tag: 'trixie', version: '13' });
  assert.deepEqual(found.patch0, {
    name: 'libc6',
    tag: 'libc6',
    details: '2.36-9+deb12u9 -> 2.36-9+deb12u10 (Debian-Security:12/stable-security)',
    date: '',
    size: '',
  });
  assert.deepEqual(await upd(root, 'listbranches'), { listbranches: { bookworm: 'active', trixie: 'available' } });

  host.calls.length = 0;
  await updError(root, 'startupdate', { target: 'chbranch', branch: 'forky' }, 400);
  await updError(root, 'startupdate', { target: 'chbranch', branch: 'bookworm' }, 400);
  assert.ok(!host.calls.some((argv) => argv[0] === 'sed'), 'a refused branch changes no sources');
  host.calls.length = 0;
  const ack = await startUpdate(root, { target: 'chbranch', branch: 'trixie' });
  const done = await finishedEvent(root, ack.queueid);
  assert.equal(done.success, 'true', String(done.reason));
  assert.deepEqual(
    host.calls.find((argv) => argv[0] === 'cp'),
    ['cp', '-p', '--', SOURCES, '/var/backups/debian.sources.hostadm-bak'],
  );
  assert.deepEqual(
    host.calls.find((argv) => argv[0] === 'sed'),
    ['sed', '-i', '-E', 's/\\bbookworm\\b/trixie/g', '--', SOURCES],
  );
  snapshotArgv(t, host.calls);
});

test('Linux: settings persist in the data directory across a restart; a failed check is retried after 5 minutes, a good one after 12 hours', async (t) => {
  let updates = 0;
  const host = debianHost([
    {
      match: ['apt-get', 'update', '--error-on=any'],
      stderr: "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'\n",
      code: 100,
      once: true,
    },
  ]);
  const counting = {
    run: (argv: readonly string[], options?: Parameters<RecordingRunner['run']>[1]) => {
      if (argv.join(' ') === 'apt-get update --error-on=any') updates++;
      return host.run(argv, options);
    },
  };
  let agent = await startTestAgent({ platform: 'linux', runner: counting });
  t.after(() => agent.dispose());
  let root = await keySession(t, agent);
  assert.deepEqual(await upd(root, 'changesettings', { maxbe: '4', auto_update: 'security' }), { changesettings: { result: 'success' } });
  assert.deepEqual(JSON.parse(readFileSync(`${agent.dataDir}/update/settings.json`, 'utf8')), { maxbe: '4', auto_update: 'security' });

  // The first apt-get update fails (offline); later ones succeed.
  const failed = await checkUntilAnswered(root);
  assert.equal(failed.checkupdates.status, 'checkfailed');
  assert.match(failed.checkupdates.details, /apt-get update exited with code 100: E: Failed to fetch/);
  assert.deepEqual(await checkUntilAnswered(root), failed, 'within 5 minutes the failure is answered again');
  assert.equal(updates, 1);
  // Sessions expire with the clock too: sign in again after each jump.
  agent.clock.advance(301);
  root = await keySession(t, agent);
  const good = await checkUntilAnswered(root);
  assert.equal(good.checkupdates.status, 'updatesavailable');
  assert.equal(updates, 2);
  agent.clock.advance(11 * 3600);
  root = await keySession(t, agent);
  assert.deepEqual(await checkUntilAnswered(root), good, 'a good result stays 12 hours');
  agent.clock.advance(3600);
  root = await keySession(t, agent);
  await checkUntilAnswered(root);
  assert.equal(updates, 3);

  root.close();
  agent = await agent.restart();
  root = await keySession(t, agent);
  assert.deepEqual(await upd(root, 'listsettings'), { listsettings: { maxbe: '4', auto_update: 'security' } });
});
