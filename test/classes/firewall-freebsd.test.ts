/**
 * FreeBSD firewall: the parsers against real FreeBSD output and files (test/fixtures/freebsd/firewall,
 * sources in the .source.md notes), then every action through a real agent on the FreeBSD platform
 * whose RecordingRunner answers like a FreeBSD 14 host keeping rc.conf in memory. The argv each action
 * runs is compared with the checked-in snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import { isYes, parseFwEnable, parseMyServices, parseServicesDb, parseSysrcValues } from '@hostadm/agent/platforms/freebsd/parse/firewall.ts';
import { sessionClientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { fw, fwError, SUCCESS } from './firewall-support.ts';
import { snapshotArgv } from './services-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/firewall/${name}`, import.meta.url), 'utf8');

test('services(5): tcp and udp entries with their comments; ddp, commented-out and alias words left out', () => {
  const known = parseServicesDb(fixture('services.txt'));
  const byPort = new Map(known.map((k) => [k.port, k]));
  assert.deepEqual(byPort.get('22/tcp'), { port: '22/tcp', name: 'ssh', description: 'Secure Shell Login' });
  assert.deepEqual(byPort.get('80/udp'), { port: '80/udp', name: 'http', description: 'World Wide Web HTTP' });
  assert.deepEqual(byPort.get('25/tcp'), { port: '25/tcp', name: 'smtp', description: 'Simple Mail Transfer' });
  assert.deepEqual(byPort.get('9/tcp'), { port: '9/tcp', name: 'discard', description: '' }, 'aliases are not a description');
  assert.deepEqual(byPort.get('57/tcp'), { port: '57/tcp', name: 'mtp', description: 'deprecated' });
  assert.deepEqual(byPort.get('106/udp'), { port: '106/udp', name: '3com-tsmux', description: '' }, 'another name: no inherited comment');
  assert.equal(byPort.get('24/tcp'), undefined, 'commented out');
  assert.ok(!known.some((k) => k.port.endsWith('/ddp')));
  assert.equal(known.length, 52, 'every tcp and udp line that is not commented out');
});

test('sysrc -n, sysctl and firewall_myservices as rc.firewall reads them', () => {
  assert.deepEqual(parseSysrcValues(fixture('sysrc-n-workstation.txt')), {
    firewall_enable: 'YES',
    firewall_type: 'workstation',
    firewall_myservices: '22/tcp 80/tcp 443/tcp',
    firewall_allowservices: 'any',
  });
  const defaults = parseSysrcValues(fixture('sysrc-n-defaults.txt'));
  assert.equal(defaults.firewall_myservices, '');
  assert.equal(isYes(defaults.firewall_enable), false);
  assert.equal(isYes('yes'), true);
  assert.equal(parseFwEnable(0, fixture('sysctl-fw-enable-on.txt')), true);
  assert.equal(parseFwEnable(0, fixture('sysctl-fw-enable-off.txt')), false);
  assert.equal(parseFwEnable(1, ''), false);

  const names = parseSysrcValues(fixture('sysrc-n-names.txt')).firewall_myservices;
  const known = parseServicesDb(fixture('services.txt'));
  assert.deepEqual(parseMyServices(names, known), {
    ports: [
      { number: 22, protocol: 'tcp' },
      { number: 53, protocol: 'udp' },
      { number: 8080, protocol: 'tcp' },
      { number: 53, protocol: 'udp' },
    ],
    other: [],
  });
  assert.deepEqual(parseMyServices('ssh/tcp nosuch/udp 99999', []).other, ['ssh/tcp', 'nosuch/udp', '99999']);
});

/** A FreeBSD 14 host: rc.conf in `vars`, the ipfw switch in `fw`, answering sysrc/sysctl/service as they do. */
function freebsdHost(vars: Record<string, string>, state: { running: boolean; module?: boolean }, extra: CannedReply[] = []): RecordingRunner {
  return new RecordingRunner([
    ...extra,
    { match: ['cat', '--', '/etc/services'], stdout: fixture('services.txt') },
    {
      match: (argv) => argv[0] === 'sysrc' && argv[1] === '-n',
      get stdout() {
        return `${['firewall_enable', 'firewall_type', 'firewall_myservices', 'firewall_allowservices'].map((n) => vars[n] ?? '').join('\n')}\n`;
      },
    },
    {
      match: (argv) => {
        if (argv[0] !== 'sysrc' || argv[1] !== '--') return false;
        const assignment = argv[2] ?? '';
        const eq = assignment.indexOf('=');
        vars[assignment.slice(0, eq)] = assignment.slice(eq + 1);
        return true;
      },
      stdout: '',
    },
    {
      match: ['sysctl', '-n', 'net.inet.ip.fw.enable'],
      get stdout() {
        return state.module === false ? '' : fixture(state.running ? 'sysctl-fw-enable-on.txt' : 'sysctl-fw-enable-off.txt');
      },
      get stderr() {
        return state.module === false ? fixture('sysctl-fw-enable-no-module.txt') : '';
      },
      get code() {
        return state.module === false ? 1 : 0;
      },
    },
    {
      match: (argv) => {
        if (argv[0] !== 'service' || argv[1] !== 'ipfw') return false;
        state.running = argv[2] !== 'onestop';
        state.module = true;
        return true;
      },
      stdout: 'Firewall rules loaded.\n',
    },
    { match: ['test', '-f', '/usr/local/share/trueos/scripts/reset-firewall'], code: 1 },
  ]);
}

async function freebsdAgent(t: TestContext, runner: RecordingRunner): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  runner.calls.length = 0;
  return root;
}

test('every action on a fresh FreeBSD host: the workstation type is set up once, then sysrc and service (argv snapshot)', async (t) => {
  const vars = { firewall_enable: 'NO', firewall_type: 'UNKNOWN', firewall_myservices: '', firewall_allowservices: '' };
  const state = { running: false, module: false };
  const runner = freebsdHost(vars, state);
  const root = await freebsdAgent(t, runner);
  const ran: Record<string, string[][]> = {};
  const step = async (name: string, action: string, args: Record<string, unknown>, expected: unknown) => {
    runner.calls.length = 0;
    assert.deepEqual(await fw(root, action, args), expected, name);
    ran[name] = [...runner.calls];
  };
  await step('status (no ipfw module)', 'status', {}, { is_enabled: 'false', is_running: 'false' });
  await step('list_open', 'list_open', {}, { openports: [] });
  await step('open (stopped)', 'open', { ports: ['22/tcp', '80/tcp', '22/tcp'] }, SUCCESS);
  assert.equal(vars.firewall_type, 'workstation', 'UNKNOWN loads no rules at all: replaced by workstation');
  assert.equal(vars.firewall_allowservices, 'any');
  assert.equal(vars.firewall_myservices, '22/tcp 80/tcp');
  await step('start', 'start', {}, SUCCESS);
  await step('status (running)', 'status', {}, { is_enabled: 'false', is_running: 'true' });
  await step('open (running: restarted)', 'open', { ports: '53/udp' }, SUCCESS);
  await step('close', 'close', { ports: ['80/tcp', '9999/tcp'] }, SUCCESS);
  await step('list_open after', 'list_open', {}, { openports: ['22/tcp', '53/udp'] });
  await step('restart', 'restart', {}, SUCCESS);
  await step('enable', 'enable', {}, SUCCESS);
  await step('status (enabled)', 'status', {}, { is_enabled: 'true', is_running: 'true' });
  await step('disable', 'disable', {}, SUCCESS);
  await step('stop', 'stop', {}, SUCCESS);
  await step('known_ports', 'known_ports', {}, (await fw(root, 'known_ports')) as object);
  const known = (await fw(root, 'known_ports')) as Record<string, unknown>;
  assert.deepEqual(known['22/tcp'], { description: 'Secure Shell Login', name: 'ssh', port: '22/tcp' });

  runner.calls.length = 0;
  const err = await fwError(root, 'reset-defaults', {}, 501);
  assert.match(err.message, /TrueOS only/);
  ran['reset-defaults (no TrueOS script)'] = [...runner.calls];

  assert.deepEqual(ran['open (running: restarted)'], [
    ['sysrc', '-n', '--', 'firewall_enable', 'firewall_type', 'firewall_myservices', 'firewall_allowservices'],
    ['sysrc', '--', 'firewall_myservices=22/tcp 53/udp 80/tcp'],
    ['sysctl', '-n', 'net.inet.ip.fw.enable'],
    ['service', 'ipfw', 'onerestart'],
  ]);
  snapshotArgv(t, ran);
});

test('TrueOS: reset-defaults runs its reset script', async (t) => {
  const runner = freebsdHost({ firewall_type: 'workstation' }, { running: true }, [
    { match: ['test', '-f', '/usr/local/share/trueos/scripts/reset-firewall'], code: 0 },
    { match: ['sh', '/usr/local/share/trueos/scripts/reset-firewall'], stdout: '' },
  ]);
  const root = await freebsdAgent(t, runner);
  assert.deepEqual(await fw(root, 'reset-defaults'), SUCCESS);
  assert.deepEqual(runner.calls.at(-1), ['sh', '/usr/local/share/trueos/scripts/reset-firewall']);
});

test('a host with its own firewall_type is left alone: open is 409 and nothing is written; names in firewall_myservices are kept', async (t) => {
  const vars = { firewall_enable: 'YES', firewall_type: '/etc/ipfw.rules', firewall_myservices: '', firewall_allowservices: '' };
  const runner = freebsdHost(vars, { running: true });
  const root = await freebsdAgent(t, runner);
  const err = await fwError(root, 'open', { ports: ['80/tcp'] }, 409);
  assert.match(err.message, /firewall_type is "\/etc\/ipfw.rules"/);
  assert.ok(!runner.calls.some((c) => c[0] === 'sysrc' && c[1] === '--'), 'no rc.conf change');
  await fwError(root, 'start', {}, 409);
  assert.ok(!runner.calls.some((c) => c[0] === 'service'));

  Object.assign(vars, { firewall_type: 'workstation', firewall_myservices: 'ssh/tcp domain/udp weird/tcp', firewall_allowservices: 'any' });
  assert.deepEqual(await fw(root, 'list_open'), { openports: ['22/tcp', '53/udp'] });
  await fw(root, 'close', { ports: ['53/udp'] });
  assert.equal(vars.firewall_myservices, '22/tcp weird/tcp', 'what rc.firewall may understand and we cannot is kept');
});

test('a failing service ipfw is a 500 naming the command and its output', async (t) => {
  const runner = freebsdHost({ firewall_type: 'workstation', firewall_allowservices: 'any' }, { running: false }, [
    { match: ['service', 'ipfw', 'onestart'], stderr: "kldload: can't load ipfw: No such file or directory\n", code: 1 },
  ]);
  const root = await freebsdAgent(t, runner);
  const err = await fwError(root, 'start', {}, 500);
  assert.match(err.message, /service ipfw onestart exited with code 1: .*can't load ipfw/);
});

test('two opens at once both land: changes run one after the other', async (t) => {
  const vars = { firewall_enable: 'YES', firewall_type: 'workstation', firewall_myservices: '22/tcp', firewall_allowservices: 'any' };
  const runner = freebsdHost(vars, { running: false });
  const root = await freebsdAgent(t, runner);
  const [a, b] = await Promise.all([fw(root, 'open', { ports: ['80/tcp'] }), fw(root, 'open', { ports: ['443/tcp'] })]);
  assert.deepEqual([a, b], [SUCCESS, SUCCESS]);
  assert.equal(vars.firewall_myservices, '22/tcp 80/tcp 443/tcp');
});
