/**
 * FreeBSD services: the parsers against real FreeBSD output (test/fixtures/freebsd/services, sources
 * in the .source.md files), then every action through a real agent on the FreeBSD platform whose
 * runner is a RecordingRunner answering like a FreeBSD 14 host. The argv each action runs is
 * compared with the checked-in snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import {
  alreadyInState,
  parseEnabledScripts,
  parseRcHeaders,
  parseSysrcChange,
  rcService,
  refusedAsNotEnabled,
  shellWord,
} from '@hostadm/agent/platforms/freebsd/parse/services.ts';
import { startTestAgent, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession, listServices, ok, snapshotArgv } from './services-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/services/${name}`, import.meta.url), 'utf8');

const GREP = fixture('rc-headers.grep.txt');
const SERVICE_E = fixture('service-e.txt');
/** The scripts the grep fixture covers, as find(1) lists them (find's order is the directory's, not sorted). */
const SCRIPTS = [
  ...new Set(
    GREP.split('\n')
      .filter(Boolean)
      .map((l) => l.slice(0, l.indexOf(':'))),
  ),
].reverse();

test('rc.d headers: names, tags as rc.subr evaluates them, descriptions; scripts without rcvar are not services', () => {
  const headers = parseRcHeaders(GREP);
  const services = Object.fromEntries(
    [...headers].flatMap(([path, h]) => {
      const s = rcService(path, h);
      return s ? [[s.name, s]] : [];
    }),
  );
  assert.deepEqual(Object.keys(services).sort(), [
    'cron',
    'devd',
    'inetd',
    'ipfw',
    'local_unbound',
    'moused',
    'nginx',
    'ntpd',
    'owntone',
    'pf',
    'postgresql',
    'powerd',
    'sendmail',
    'sshd',
    'storj_monitor',
    'syslogd',
    'zfs',
  ]);
  assert.deepEqual(services.sshd, { name: 'sshd', tag: 'sshd_enable', description: 'Secure Shell Daemon' });
  // The original's bug: ipfw is switched by firewall_enable, which its enable wrote as ipfw_enable.
  assert.equal(services.ipfw?.tag, 'firewall_enable');
  assert.equal(services.inetd?.description, 'Internet "super-server"');
  assert.deepEqual(services.nginx, { name: 'nginx', tag: 'nginx_enable', description: '' });
  assert.equal(services.postgresql?.tag, 'postgresql_enable');
  assert.equal(services.owntone?.tag, 'owntone_enable', '`set_rcvar` means <name>_enable');
  assert.equal(services.storj_monitor?.tag, 'storj_monitor_enable', '${name} is the script name');
  // sendmail's indented `name="sendmail_submit"` is not its name; moused's per-device rcvar is not its tag.
  assert.equal(services.sendmail?.tag, 'sendmail_enable');
  assert.equal(services.moused?.tag, 'moused_enable');
  assert.equal(headers.get('/etc/rc.d/hostname')?.desc, '"Set the system\\\'s hostname"');
  assert.equal(rcService('/etc/rc.d/hostname', headers.get('/etc/rc.d/hostname') ?? {}), null, 'no rcvar: runs at every boot');
});

test("rc.d header edge cases (constructed lines, in the forms the Porter's Handbook and old ports use)", () => {
  assert.equal(shellWord('"a \\"b\\" \\$c"  # comment'), 'a "b" $c');
  assert.equal(shellWord("'single $quoted'"), 'single $quoted');
  assert.equal(shellWord('bare;next'), 'bare');
  // A computed name is whatever the file is called.
  assert.deepEqual(rcService('/usr/local/etc/rc.d/dummy', { name: '${name##*/}', rcvar: '"${name}_enable"' }), {
    name: 'dummy',
    tag: 'dummy_enable',
    description: '',
  });
  assert.equal(rcService('/usr/local/etc/rc.d/x', { name: 'x', rcvar: '$(set_rcvar y)' })?.tag, 'y_enable');
  assert.equal(rcService('/usr/local/etc/rc.d/x', { name: 'x', rcvar: '"$name"' })?.tag, 'x');
  assert.equal(rcService('/usr/local/etc/rc.d/x', { name: 'x', rcvar: '"${other}_enable"' })?.tag, 'x_enable', 'unknown variable: the convention');
  assert.equal(rcService('/usr/local/etc/rc.d/x', { name: 'x', rcvar: '""' }), null);
  assert.equal(rcService('/usr/local/etc/rc.d/x', { name: 'x', rcvar: '"-x;y"' }), null, 'a tag sysrc could misread is dropped');
});

test('service -e, sysrc and rc.subr messages', () => {
  const enabled = parseEnabledScripts(SERVICE_E);
  assert.equal(enabled.size, 34);
  assert.ok(enabled.has('/etc/rc.d/sshd'));
  assert.ok(enabled.has('/usr/local/etc/rc.d/mysql-server'));
  assert.ok(!enabled.has('/etc/rc.d/pf'));

  assert.deepEqual(parseSysrcChange(fixture('sysrc-set-unset.txt'), 'test_enable'), { before: '', after: 'YES' });
  assert.deepEqual(parseSysrcChange(fixture('sysrc-set-change.txt'), 'test_enable'), { before: 'YES', after: 'NO' });
  assert.deepEqual(parseSysrcChange(fixture('sysrc-set-nginx.txt'), 'nginx_enable'), { before: '', after: 'YES' });
  assert.equal(parseSysrcChange(fixture('sysrc-set-nginx.txt'), 'nginx'), null);

  assert.ok(alreadyInState('start', fixture('service-start-already-running.txt')));
  assert.ok(alreadyInState('stop', fixture('service-stop-not-running.txt')));
  assert.ok(!alreadyInState('stop', fixture('service-stop.txt')));
  assert.ok(!alreadyInState('start', fixture('service-start.txt')));
  assert.ok(refusedAsNotEnabled(fixture('service-start-not-enabled.txt')));
  assert.ok(!refusedAsNotEnabled(fixture('service-start.txt')));
});

/** A FreeBSD 14 host as the runner sees it: the fixture scripts, sshd/cron/... enabled, sshd running. */
function freebsdHost(overrides: CannedReply[] = []): RecordingRunner {
  const running = new Set(['sshd', 'cron', 'syslogd', 'devd', 'ntpd']);
  return new RecordingRunner([
    ...overrides,
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: ['find', '/etc/rc.d', '/usr/local/etc/rc.d', '-maxdepth', '1', '-type', 'f', '-perm', '-100'], stdout: `${SCRIPTS.join('\n')}\n` },
    { match: ['grep', '-H', '-E', '^(name|rcvar|desc)=', '--', ...[...SCRIPTS].sort(byDirThenName)], stdout: GREP },
    { match: ['service', '-e'], stdout: SERVICE_E },
    {
      match: (argv) => argv[0] === 'service' && argv[3] === 'onestatus' && running.has(argv[2] ?? ''),
      stdout: fixture('service-onestatus-running.txt').replace('sshd', 'x'),
    },
    { match: (argv) => argv[0] === 'service' && argv[3] === 'onestatus', stdout: 'x is not running.\n', code: 1 },
    { match: (argv) => argv[0] === 'service' && /^(one)?(start|restart)$/.test(argv[3] ?? ''), stdout: fixture('service-start.txt') },
    { match: (argv) => argv[0] === 'service' && /^(one)?stop$/.test(argv[3] ?? ''), stdout: fixture('service-stop.txt') },
    { match: (argv) => argv[0] === 'sysrc', stdout: '' },
  ]);
}

function byDirThenName(a: string, b: string): number {
  return Number(a.startsWith('/usr/local')) - Number(b.startsWith('/usr/local')) || a.localeCompare(b);
}

/** sysrc's real answer for one assignment, given what the variable held before. */
function sysrcReply(tag: string, value: string, before: string, code = 0): CannedReply {
  return { match: ['sysrc', '--', `${tag}=${value}`], stdout: code === 0 ? `${tag}: ${before} -> ${value}\n` : '', code, once: true };
}

async function freebsdAgent(t: TestContext, runner: RecordingRunner): Promise<{ agent: TestAgent; root: TestClient }> {
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  runner.calls.length = 0;
  return { agent, root };
}

test('list_services: every script with its record, from find, grep, service -e and one onestatus each', async (t) => {
  const runner = freebsdHost();
  const { root } = await freebsdAgent(t, runner);
  const list = await listServices(root);
  assert.equal(Object.keys(list).length, 17);
  assert.deepEqual(list.sshd, {
    description: 'Secure Shell Daemon',
    is_enabled: 'true',
    is_running: 'true',
    name: 'sshd',
    path: '/etc/rc.d/sshd',
    tag: 'sshd_enable',
  });
  assert.deepEqual(list.ipfw, {
    description: 'Firewall, traffic shaper, packet scheduler, in-kernel NAT',
    is_enabled: 'false',
    is_running: 'false',
    name: 'ipfw',
    path: '/etc/rc.d/ipfw',
    tag: 'firewall_enable',
  });
  assert.equal(list.nginx?.path, '/usr/local/etc/rc.d/nginx');
  assert.equal(list.inetd?.is_enabled, 'true');
  assert.equal(list.hostname, undefined);
  snapshotArgv(t, runner.calls);
});

test('each action runs the FreeBSD tools an administrator would (argv snapshot)', async (t) => {
  const runner = freebsdHost([sysrcReply('pf_enable', 'YES', ''), sysrcReply('sshd_enable', 'NO', 'YES')]);
  const { root } = await freebsdAgent(t, runner);
  const inventory = 3; // find, grep, service -e: every action checks the names against the host first
  const ran: Record<string, string[][]> = {};
  const cases: Array<[string, string[], Record<string, string[]>]> = [
    ['start', ['sshd', 'nginx'], { services_started: ['sshd', 'nginx'] }],
    ['stop', ['sshd', 'nginx'], { services_stopped: ['sshd', 'nginx'] }],
    ['restart', ['ntpd', 'postgresql'], { services_restarted: ['ntpd', 'postgresql'] }],
    ['enable', ['pf', 'sshd'], { services_enabled: ['pf', 'sshd'] }],
    ['disable', ['sshd', 'nginx'], { services_disabled: ['sshd', 'nginx'] }],
  ];
  for (const [action, services, reply] of cases) {
    runner.calls.length = 0;
    assert.deepEqual(await ok(root, action, { services }), reply);
    ran[action] = runner.calls.slice(inventory);
  }
  // Enabled services use the plain command, the others `one...`; boot settings go through sysrc,
  // and one already in the asked state (sshd enabled, nginx disabled) runs nothing.
  assert.deepEqual(ran.start, [
    ['service', '--', 'sshd', 'start'],
    ['service', '--', 'nginx', 'onestart'],
  ]);
  assert.deepEqual(ran.enable, [['sysrc', '--', 'pf_enable=YES']]);
  assert.deepEqual(ran.disable, [['sysrc', '--', 'sshd_enable=NO']]);
  snapshotArgv(t, ran);
});

test('already in the asked state counts as done; a stale "not enabled" refusal is retried with one...', async (t) => {
  const runner = freebsdHost([
    { match: ['service', '--', 'sshd', 'start'], stderr: fixture('service-start-already-running.txt').replace('mysql', 'sshd'), code: 1, once: true },
    { match: ['service', '--', 'pf', 'onestop'], stderr: 'pf not running?\n', code: 1, once: true },
    { match: ['service', '--', 'cron', 'start'], stdout: fixture('service-start-not-enabled.txt').replaceAll('nginx', 'cron'), once: true },
  ]);
  const { root } = await freebsdAgent(t, runner);
  assert.deepEqual(await ok(root, 'start', { services: ['sshd'] }), { services_started: ['sshd'] });
  assert.deepEqual(await ok(root, 'stop', { services: ['pf'] }), { services_stopped: ['pf'] });
  runner.calls.length = 0;
  assert.deepEqual(await ok(root, 'start', { services: ['cron'] }), { services_started: ['cron'] });
  assert.deepEqual(runner.calls.slice(3), [
    ['service', '--', 'cron', 'start'],
    ['service', '--', 'cron', 'onestart'],
  ]);
});

test('a start that fails goes on with the others and answers 500 naming what started and what failed', async (t) => {
  const runner = freebsdHost([
    { match: ['service', '--', 'nginx', 'onestart'], stderr: '/usr/local/etc/rc.d/nginx: WARNING: failed to start nginx\n', code: 1 },
  ]);
  const { root } = await freebsdAgent(t, runner);
  const err = expectError(await root.call('services', 'start', { services: ['sshd', 'nginx', 'cron'] }), 500);
  assert.match(err.message, /^services start: sshd, cron started; failed: nginx \(service nginx onestart exited with code 1: .*failed to start nginx\)$/);
  assert.ok(
    runner.calls.some((c) => c.join(' ') === 'service -- cron start'),
    'cron was still started',
  );
  // The spec's success array survives the failure: what started is listed under its usual key.
  const partial = err as unknown as { services_started: string[]; services_failed: Record<string, string> };
  assert.deepEqual(partial.services_started, ['sshd', 'cron']);
  assert.deepEqual(Object.keys(partial.services_failed), ['nginx']);
  assert.match(partial.services_failed.nginx ?? '', /^service nginx onestart exited with code 1: .*failed to start nginx$/);
});

test('a failed enable puts back the settings already changed, with the values sysrc reported', async (t) => {
  const runner = freebsdHost([
    sysrcReply('pf_enable', 'YES', ''),
    sysrcReply('powerd_enable', 'YES', 'NO'),
    { match: ['sysrc', '--', 'moused_enable=YES'], stderr: 'sysrc: /etc/rc.conf: Permission denied\n', code: 1 },
    { match: ['sysrc', '--', 'powerd_enable=NO'], stdout: 'powerd_enable: YES -> NO\n' },
    { match: ['sysrc', '-x', '--', 'pf_enable'], stdout: '' },
  ]);
  const { root } = await freebsdAgent(t, runner);
  const err = expectError(await root.call('services', 'enable', { services: ['pf', 'powerd', 'moused'] }), 500);
  assert.match(err.message, /failed for moused \(sysrc moused_enable=YES exited with code 1: sysrc: \/etc\/rc.conf: Permission denied\)/);
  assert.match(err.message, /powerd, pf was put back, so nothing was changed/);
  // Nothing is enabled after the roll-back, and the reply says so under the success reply's key.
  const partial = err as unknown as { services_enabled: string[]; services_failed: Record<string, string> };
  assert.deepEqual(partial.services_enabled, []);
  assert.deepEqual(Object.keys(partial.services_failed), ['moused']);
  const sysrc = runner.calls.filter((c) => c[0] === 'sysrc');
  assert.deepEqual(sysrc, [
    ['sysrc', '--', 'pf_enable=YES'],
    ['sysrc', '--', 'powerd_enable=YES'],
    ['sysrc', '--', 'moused_enable=YES'],
    ['sysrc', '--', 'powerd_enable=NO'],
    ['sysrc', '-x', '--', 'pf_enable'],
  ]);
});

test('an unknown service is a 400 before anything runs', async (t) => {
  const runner = freebsdHost();
  const { root } = await freebsdAgent(t, runner);
  const err = expectError(await root.call('services', 'stop', { services: ['sshd', 'hostname'] }), 400);
  assert.deepEqual(err.errors, [{ field: 'services.1', message: 'no service named hostname on this host' }]);
  assert.deepEqual(
    runner.calls.map((c) => c[0]),
    ['find', 'grep', 'service'],
    'only the inventory ran',
  );
});
