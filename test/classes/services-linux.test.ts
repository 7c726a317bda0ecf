/**
 * Linux services.
 *
 * SysV, for real: the agent's runner is aimed into a sandbox (private mount/PID/UTS/IPC/net
 * namespaces with a copy of /etc and a private /run), where test init scripts start a `sleep`
 * daemon with a pidfile. Every action goes through a real agent; the effect is read back through
 * the agent and checked in the sandbox (pidfile, process, /etc/rc?.d links). The host's own init
 * scripts are never run.
 *
 * systemd: this machine runs no systemd, so that backend runs against a RecordingRunner answering
 * with real `systemctl list-unit-files` output (test/fixtures/linux/services); the argv of every
 * action is compared with the snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { unitRef } from '@hostadm/agent/platforms/linux/services/systemd.ts';
import { parseShow, parseUnitFiles } from '@hostadm/agent/platforms/linux/parse/services.ts';
import { until } from '../cli/cli-support.ts';
import { startTestAgent, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';
import { expectError, keySession, listServices, ok, snapshotArgv } from './services-support.ts';

const sandboxable = canSandbox();
const skip = sandboxable.ok ? false : `the Linux sandbox ${sandboxable.reason}`;

/**
 * An LSB init script running `sleep` as a daemon; `startCode` makes start fail like a broken one.
 * stop and status match `--exec` as well as the pidfile, so a stale pidfile whose pid was reused
 * is not taken for the daemon.
 */
function initScript(name: string, options: { defaultStart?: string; startCode?: number } = {}): string {
  return `#!/bin/sh
### BEGIN INIT INFO
# Provides:          ${name}
# Required-Start:    $local_fs
# Required-Stop:     $local_fs
# Default-Start:     ${options.defaultStart ?? '2 3 4 5'}
# Default-Stop:      0 1 6
# Short-Description: ${name} test daemon
# Description:       A sleep loop the hostadm tests start and stop.
### END INIT INFO
PIDFILE=/run/${name}.pid
case "$1" in
  start)
    ${options.startCode ? `echo "${name}: cannot start: configuration missing" >&2; exit ${options.startCode}` : ''}
    start-stop-daemon --start --quiet --oknodo --background --make-pidfile --pidfile $PIDFILE --exec /bin/sleep -- 100000 ;;
  stop)
    start-stop-daemon --stop --quiet --oknodo --retry 5 --pidfile $PIDFILE --exec /bin/sleep --remove-pidfile ;;
  restart)
    "$0" stop && "$0" start ;;
  status)
    start-stop-daemon --status --pidfile $PIDFILE --exec /bin/sleep ;;
  *)
    echo "Usage: $0 {start|stop|restart|status}" >&2; exit 3 ;;
esac
`;
}

interface SysvHost {
  sandbox: LinuxSandbox;
  agent: TestAgent;
  root: TestClient;
}

async function sysvHost(t: TestContext, scripts: Record<string, Parameters<typeof initScript>[1]>): Promise<SysvHost> {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  for (const [name, options] of Object.entries(scripts)) {
    const path = join(sandbox.etc, 'init.d', name);
    writeFileSync(path, initScript(name, options));
    chmodSync(path, 0o755);
  }
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }) });
  t.after(() => agent.dispose());
  return { sandbox, agent, root: await keySession(t, agent) };
}

/** The pid in the daemon's pidfile inside the sandbox, if that process is alive there. */
async function daemonPid(sandbox: LinuxSandbox, name: string): Promise<number | null> {
  const pidfile = await sandbox.runner.run(['cat', `/run/${name}.pid`]);
  if (pidfile.code !== 0) return null;
  const pid = Number(pidfile.stdout.trim());
  const cmdline = await sandbox.runner.run(['cat', `/proc/${pid}/cmdline`]);
  return cmdline.code === 0 && cmdline.stdout.startsWith('/bin/sleep') ? pid : null;
}

/**
 * The pid of the daemon a start just launched. `start-stop-daemon --background` writes the pidfile
 * and execs `sleep` in its forked child, which may still be on its way when the script has exited,
 * so this waits for it.
 */
function startedDaemonPid(sandbox: LinuxSandbox, name: string): Promise<number> {
  return until(`${name} to write its pidfile`, async () => (await daemonPid(sandbox, name)) ?? undefined);
}

/** The rc?.d links for `name` in the sandbox's /etc, e.g. ['rc0.d/K01x', 'rc2.d/S01x']. */
function links(sandbox: LinuxSandbox, name: string): string[] {
  return ['0', '1', '2', '3', '4', '5', '6', 'S']
    .flatMap((l) => {
      const dir = join(sandbox.etc, `rc${l}.d`);
      return existsSync(dir)
        ? readdirSync(dir)
            .filter((f) => f.slice(3) === name)
            .map((f) => `rc${l}.d/${f}`)
        : [];
    })
    .sort();
}

const startsAtBoot = (sandbox: LinuxSandbox, name: string) => links(sandbox, name).some((l) => /^rc[2-5]\.d\/S/.test(l));

test('SysV: list_services reads /etc/init.d, the LSB descriptions, the rc?.d links and service status', { skip }, async (t) => {
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {} });
  const list = await listServices(root);
  assert.deepEqual(list['hostadm-test'], {
    description: 'hostadm-test test daemon',
    is_enabled: 'false',
    is_running: 'false',
    name: 'hostadm-test',
    path: '/etc/init.d/hostadm-test',
    tag: 'hostadm-test',
  });
  // Whatever else this machine ships in /etc/init.d, is_enabled agrees with its rc?.d links.
  for (const record of Object.values(list)) {
    assert.equal(record.path, `/etc/init.d/${record.name}`);
    assert.equal(record.is_enabled, String(startsAtBoot(sandbox, record.name)), record.name);
  }
  assert.ok(!existsSync('/etc/init.d/hostadm-test'), "the host's /etc is untouched");
});

test('SysV: start, restart and stop the daemon for real, read back through the agent and the pidfile', { skip }, async (t) => {
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {} });
  assert.deepEqual(await ok(root, 'start', { services: ['hostadm-test'] }), { services_started: ['hostadm-test'] });
  const first = await startedDaemonPid(sandbox, 'hostadm-test');
  assert.equal((await listServices(root))['hostadm-test']?.is_running, 'true');

  assert.deepEqual(await ok(root, 'restart', { services: ['hostadm-test'] }), { services_restarted: ['hostadm-test'] });
  const second = await startedDaemonPid(sandbox, 'hostadm-test');
  assert.notEqual(second, first, 'a new process');

  assert.deepEqual(await ok(root, 'stop', { services: ['hostadm-test'] }), { services_stopped: ['hostadm-test'] });
  assert.equal(await daemonPid(sandbox, 'hostadm-test'), null);
  assert.equal((await listServices(root))['hostadm-test']?.is_running, 'false');
  // Stopping a stopped service is done, not an error (LSB).
  assert.deepEqual(await ok(root, 'stop', { services: ['hostadm-test'] }), { services_stopped: ['hostadm-test'] });
});

test('SysV: enable and disable create and flip the rc?.d links with update-rc.d', { skip }, async (t) => {
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {} });
  assert.deepEqual(links(sandbox, 'hostadm-test'), []);

  // Never installed: the first enable installs the links from the LSB header.
  assert.deepEqual(await ok(root, 'enable', { services: ['hostadm-test'] }), { services_enabled: ['hostadm-test'] });
  assert.deepEqual(links(sandbox, 'hostadm-test'), [
    'rc0.d/K01hostadm-test',
    'rc1.d/K01hostadm-test',
    'rc2.d/S01hostadm-test',
    'rc3.d/S01hostadm-test',
    'rc4.d/S01hostadm-test',
    'rc5.d/S01hostadm-test',
    'rc6.d/K01hostadm-test',
  ]);
  assert.equal((await listServices(root))['hostadm-test']?.is_enabled, 'true');

  assert.deepEqual(await ok(root, 'disable', { services: ['hostadm-test'] }), { services_disabled: ['hostadm-test'] });
  assert.ok(!startsAtBoot(sandbox, 'hostadm-test'));
  assert.ok(links(sandbox, 'hostadm-test').includes('rc2.d/K01hostadm-test'));
  assert.equal((await listServices(root))['hostadm-test']?.is_enabled, 'false');

  assert.deepEqual(await ok(root, 'enable', { services: ['hostadm-test'] }), { services_enabled: ['hostadm-test'] });
  assert.ok(startsAtBoot(sandbox, 'hostadm-test'));
  assert.equal(await daemonPid(sandbox, 'hostadm-test'), null, 'enabling does not start it');
});

test('SysV: a failing start is reported by name while the others start', { skip }, async (t) => {
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {}, 'hostadm-broken': { startCode: 1 } });
  const err = expectError(await root.call('services', 'start', { services: ['hostadm-broken', 'hostadm-test'] }), 500);
  assert.match(
    err.message,
    /^services start: hostadm-test started; failed: hostadm-broken \(service hostadm-broken start exited with code 1: hostadm-broken: cannot start: configuration missing\)$/,
  );
  await startedDaemonPid(sandbox, 'hostadm-test'); // the other one started
});

test('SysV: an enable that cannot take effect is undone with the ones before it', { skip }, async (t) => {
  // No runlevel 2-5 in Default-Start: update-rc.d installs only stop links, so it would never start.
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {}, 'hostadm-nostart': { defaultStart: '' } });
  const err = expectError(await root.call('services', 'enable', { services: ['hostadm-test', 'hostadm-nostart'] }), 500);
  assert.match(err.message, /failed for hostadm-nostart \(update-rc.d left hostadm-nostart without a start link/);
  assert.match(err.message, /hostadm-test was put back, so nothing was changed/);
  assert.deepEqual(links(sandbox, 'hostadm-test'), []);
  assert.deepEqual(links(sandbox, 'hostadm-nostart'), []);
  const list = await listServices(root);
  assert.equal(list['hostadm-test']?.is_enabled, 'false');
});

test('SysV: an unknown script is a 400 and nothing runs', { skip }, async (t) => {
  const { sandbox, root } = await sysvHost(t, { 'hostadm-test': {} });
  const err = expectError(await root.call('services', 'start', { services: ['hostadm-test', 'no-such-daemon'] }), 400);
  assert.deepEqual(
    err.errors?.map((e) => e.field),
    ['services.1'],
  );
  assert.equal(await daemonPid(sandbox, 'hostadm-test'), null);
});

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/services/${name}`, import.meta.url), 'utf8');

test('systemd parsers: list-unit-files (real) and show', () => {
  const files = parseUnitFiles(fixture('systemctl-list-unit-files.txt'));
  assert.equal(files.length, 107);
  assert.deepEqual(
    files.find((f) => f.unit === 'postgresql.service'),
    { unit: 'postgresql.service', state: 'enabled' },
  );
  const refs = files.flatMap((f) => unitRef(f) ?? []);
  assert.ok(!refs.some((r) => r.tag.includes('@')), 'templates are not services one can start');
  assert.ok(!refs.some((r) => r.tag === 'kmod.service'), 'aliases repeat another unit');
  assert.deepEqual(
    refs.find((r) => r.name === 'postgresql'),
    { name: 'postgresql', tag: 'postgresql.service', handle: 'postgresql.service', enabled: true },
  );
  assert.match(refs.find((r) => r.name === 'dbus')?.bootFixed ?? '', /dbus.service is static/);
  assert.match(refs.find((r) => r.name === 'x11-common')?.bootFixed ?? '', /masked/);

  const shown = parseShow(fixture('systemctl-show.txt'));
  assert.equal(shown.size, 6);
  assert.equal(shown.get('postgresql.service')?.Description, 'PostgreSQL RDBMS');
  assert.equal(shown.get('x11-common.service')?.FragmentPath, undefined);
});

function systemdHost(): RecordingRunner {
  return new RecordingRunner([
    { match: ['id', '-Gn', 'root'], stdout: 'root\n' },
    { match: ['test', '-d', '/run/systemd/system'], code: 0 },
    { match: ['systemctl', 'list-unit-files', '--type=service', '--no-legend', '--no-pager'], stdout: fixture('systemctl-list-unit-files.txt') },
    { match: (argv) => argv[0] === 'systemctl' && argv[1] === 'show', stdout: fixture('systemctl-show.txt') },
    { match: (argv) => argv[0] === 'systemctl' && ['start', 'stop', 'restart', 'enable', 'disable'].includes(argv[1] ?? '') },
  ]);
}

test('systemd: every action through the agent, with the argv each one runs (snapshot)', async (t) => {
  const runner = systemdHost();
  const agent = await startTestAgent({ platform: 'linux', runner });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);

  runner.calls.length = 0;
  const list = await listServices(root);
  assert.deepEqual(list.postgresql, {
    description: 'PostgreSQL RDBMS',
    is_enabled: 'true',
    is_running: 'true',
    name: 'postgresql',
    path: '/lib/systemd/system/postgresql.service',
    tag: 'postgresql.service',
  });
  assert.equal(list['console-getty']?.is_enabled, 'false');
  assert.equal(list['console-getty']?.is_running, 'false');
  assert.equal(list['getty@'], undefined);
  const ran: Record<string, string[][]> = {
    detect_and_list: runner.calls.map((c) => (c[1] === 'show' ? [...c.slice(0, 5), `<${c.length - 5} units>`] : c)),
  };

  const cases: Array<[string, string[], Record<string, string[]>]> = [
    ['start', ['postgresql', 'console-getty'], { services_started: ['postgresql', 'console-getty'] }],
    ['stop', ['postgresql'], { services_stopped: ['postgresql'] }],
    ['restart', ['systemd-timesyncd'], { services_restarted: ['systemd-timesyncd'] }],
    ['enable', ['console-getty', 'postgresql'], { services_enabled: ['console-getty', 'postgresql'] }],
    ['disable', ['e2scrub_reap', 'dbus'], { services_disabled: ['e2scrub_reap', 'dbus'] }],
  ];
  for (const [action, services, reply] of cases) {
    runner.calls.length = 0;
    assert.deepEqual(await ok(root, action, { services }), reply);
    ran[action] = runner.calls.slice(1); // after list-unit-files, the names' check
  }
  assert.deepEqual(ran.start, [
    ['systemctl', 'start', '--', 'postgresql.service'],
    ['systemctl', 'start', '--', 'console-getty.service'],
  ]);
  assert.deepEqual(ran.enable, [['systemctl', 'enable', '--', 'console-getty.service']], 'postgresql is enabled already');
  assert.deepEqual(ran.disable, [['systemctl', 'disable', '--', 'e2scrub_reap.service']], 'dbus (static) is not enabled');
  snapshotArgv(t, ran);

  runner.calls.length = 0;
  const err = expectError(await root.call('services', 'enable', { services: ['console-getty', 'dbus'] }), 400);
  assert.deepEqual(err.errors, [{ field: 'services.1', message: 'dbus: dbus.service is static, so systemctl cannot switch it on or off at boot' }]);
  assert.deepEqual(
    runner.calls.map((c) => c[1]),
    ['list-unit-files'],
    'refused before any change',
  );
});
