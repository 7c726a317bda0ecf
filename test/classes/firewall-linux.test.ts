/**
 * Linux firewall (nftables table `inet hostadm`): the parsers against real nft output, every action
 * through a real agent whose RecordingRunner answers like a Debian host (argv snapshot). The same
 * platform against a real kernel, across a veth pair: firewall-linux-netns.test.ts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { CommandRunner } from '@hostadm/agent/runner/runner.ts';
import {
  parseNftTable,
  parseRulesetPorts,
  parseServicesDb,
  renderRuleset,
  includesRuleset,
  withoutInclude,
} from '@hostadm/agent/platforms/linux/parse/firewall.ts';
import { sessionClientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { fw, fwError, SUCCESS } from './firewall-support.ts';
import { snapshotArgv } from './services-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/firewall/${name}`, import.meta.url), 'utf8');
const RULESET = '/etc/hostadm/firewall.nft';

test('nft -j list table: the two sets as the kernel has them; the ruleset file round-trips', () => {
  assert.deepEqual(parseNftTable(fixture('nft-list-table.json')), [
    { number: 22, protocol: 'tcp' },
    { number: 53, protocol: 'udp' },
    { number: 8080, protocol: 'tcp' },
  ]);
  assert.deepEqual(parseNftTable(fixture('nft-list-table-empty-udp.json')), [{ number: 443, protocol: 'tcp' }]);
  const ports = [
    { number: 80, protocol: 'tcp' as const },
    { number: 22, protocol: 'tcp' as const },
    { number: 514, protocol: 'udp' as const },
  ];
  const text = renderRuleset(ports);
  assert.match(text, /elements = \{ 22, 80 \}/);
  assert.deepEqual(parseRulesetPorts(text), [ports[1], ports[0], ports[2]]);
  assert.deepEqual(parseRulesetPorts(renderRuleset([])), []);
  // Debian's services database: a udp twin without a comment takes its tcp line's.
  const known = new Map(parseServicesDb(fixture('services.txt')).map((k) => [k.port, k]));
  assert.deepEqual(known.get('53/udp'), { port: '53/udp', name: 'domain', description: 'Domain Name Server' });
  assert.deepEqual(known.get('80/tcp'), { port: '80/tcp', name: 'http', description: 'WorldWideWeb HTTP' });
  assert.deepEqual(known.get('21/udp'), { port: '21/udp', name: 'fsp', description: '' });
  assert.equal(known.size, 32);
  const conf = `#!/usr/sbin/nft -f\nflush ruleset\n# hostadm firewall (admin/firewall enable/disable)\ninclude "${RULESET}"\n`;
  assert.ok(includesRuleset(conf, RULESET));
  assert.ok(!includesRuleset(`# include "${RULESET}"\n`, RULESET));
  assert.equal(withoutInclude(conf, RULESET), '#!/usr/sbin/nft -f\nflush ruleset\n');
});

/** A Debian host as the runner sees it: files in `files`, our table in the kernel or not, the unit's state. */
function debianHost(): { runner: RecordingRunner; files: Map<string, string>; kernel: { loaded: string | null }; unit: { enabled: boolean } } {
  const files = new Map<string, string>([
    ['/etc/services', fixture('services.txt')],
    ['/etc/nftables.conf', '#!/usr/sbin/nft -f\n\nflush ruleset\n'],
  ]);
  const kernel: { loaded: string | null } = { loaded: null };
  const unit = { enabled: false };
  const runner = new RecordingRunner([
    {
      match: (argv) => argv[0] === 'cat',
      get stdout() {
        return files.get(lastCat) ?? '';
      },
      get stderr() {
        return files.has(lastCat) ? '' : `cat: ${lastCat}: No such file or directory\n`;
      },
      get code() {
        return files.has(lastCat) ? 0 : 1;
      },
    },
    { match: (argv) => argv[0] === 'mkdir' || argv[0] === 'chmod', stdout: '' },
    {
      match: (argv) => {
        if (argv[0] !== 'rm') return false;
        files.delete(argv[3] ?? '');
        return true;
      },
      stdout: '',
    },
    { match: (argv) => argv[0] === 'tee', stdout: '' },
    {
      match: (argv) => {
        if (argv[0] !== 'mv') return false;
        files.set(argv[4] ?? '', files.get(argv[3] ?? '') ?? '');
        files.delete(argv[3] ?? '');
        return true;
      },
      stdout: '',
    },
    { match: (argv) => argv[0] === 'nft' && argv[1] === '-c', stdout: '' },
    {
      match: (argv) => {
        if (argv[0] !== 'nft' || argv[1] !== '-f') return false;
        kernel.loaded = files.get(argv[2] ?? '') ?? null;
        return true;
      },
      stdout: '',
    },
    {
      match: (argv) => {
        if (argv.join(' ') !== 'nft delete table inet hostadm') return false;
        kernel.loaded = null;
        return true;
      },
      stdout: '',
    },
    {
      match: (argv) => argv.join(' ') === 'nft -j list table inet hostadm',
      get stdout() {
        return kernel.loaded === null ? '' : JSON.stringify(kernelJson(kernel.loaded));
      },
      get stderr() {
        return kernel.loaded === null ? fixture('nft-list-table-missing.txt') : '';
      },
      get code() {
        return kernel.loaded === null ? 1 : 0;
      },
    },
    {
      match: (argv) => argv[0] === 'systemctl' && argv[1] === 'is-enabled',
      get code() {
        return unit.enabled ? 0 : 1;
      },
    },
    {
      match: (argv) => {
        if (argv[0] !== 'systemctl' || argv[1] !== 'enable') return false;
        unit.enabled = true;
        return true;
      },
      stdout: '',
    },
  ]);
  let lastCat = '';
  // tee's input is the file's new text: keep it under the name tee was given.
  const run = runner.run.bind(runner);
  runner.run = async (argv, options = {}) => {
    if (argv[0] === 'cat') lastCat = argv[2] ?? '';
    if (argv[0] === 'tee') files.set(argv[2] ?? '', String(options.input ?? ''));
    return run(argv, options);
  };
  return { runner, files, kernel, unit };
}

/** What `nft -j list table` would say for a ruleset file we wrote (the two sets only). */
function kernelJson(ruleset: string): object {
  const ports = parseRulesetPorts(ruleset);
  const set = (name: string, protocol: string) => {
    const elem = ports.filter((p) => p.protocol === protocol).map((p) => p.number);
    return { set: { family: 'inet', name, table: 'hostadm', type: 'inet_service', handle: 2, ...(elem.length > 0 ? { elem } : {}) } };
  };
  return { nftables: [{ table: { family: 'inet', name: 'hostadm', handle: 4 } }, set('tcp_open', 'tcp'), set('udp_open', 'udp')] };
}

async function linuxAgent(t: TestContext, runner: CommandRunner): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'linux', runner });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  if (runner instanceof RecordingRunner) runner.calls.length = 0;
  return root;
}

test('every action on a Debian host: our table, files replaced after nft -c, boot through nftables.conf (argv snapshot)', async (t) => {
  const host = debianHost();
  const root = await linuxAgent(t, host.runner);
  const ran: Record<string, string[][]> = {};
  const step = async (name: string, action: string, args: Record<string, unknown>, expected?: unknown) => {
    host.runner.calls.length = 0;
    const reply = await fw(root, action, args);
    if (expected !== undefined) assert.deepEqual(reply, expected, name);
    ran[name] = [...host.runner.calls];
    return reply;
  };
  await step('status (never started)', 'status', {}, { is_enabled: 'false', is_running: 'false' });
  await step('list_open (never opened: ssh)', 'list_open', {}, { openports: ['22/tcp'] });
  await step('open (stopped)', 'open', { ports: ['80/tcp', '53/udp'] }, SUCCESS);
  assert.equal(host.kernel.loaded, null, 'not started by an open');
  await step('start', 'start', {}, SUCCESS);
  await step('status (running)', 'status', {}, { is_enabled: 'false', is_running: 'true' });
  await step('close (running: reloaded)', 'close', { ports: ['80/tcp'] }, SUCCESS);
  await step('list_open (from the kernel)', 'list_open', {}, { openports: ['22/tcp', '53/udp'] });
  await step('restart', 'restart', {}, SUCCESS);
  await step('enable', 'enable', {}, SUCCESS);
  assert.match(
    host.files.get('/etc/nftables.conf') ?? '',
    /flush ruleset\n# hostadm firewall \(admin\/firewall enable\/disable\)\ninclude "\/etc\/hostadm\/firewall.nft"\n$/,
  );
  await step('status (enabled)', 'status', {}, { is_enabled: 'true', is_running: 'true' });
  await step('disable', 'disable', {}, SUCCESS);
  assert.equal(host.files.get('/etc/nftables.conf'), '#!/usr/sbin/nft -f\n\nflush ruleset\n');
  await step('stop', 'stop', {}, SUCCESS);
  await step('status (stopped)', 'status', {}, { is_enabled: 'false', is_running: 'false' });
  const known = (await step('known_ports', 'known_ports', {})) as Record<string, unknown>;
  assert.deepEqual(known['22/tcp'], { description: 'SSH Remote Login Protocol', name: 'ssh', port: '22/tcp' });
  host.runner.calls.length = 0;
  const err = await fwError(root, 'reset-defaults', {}, 501);
  assert.match(err.message, /TrueOS only/);
  assert.deepEqual(host.runner.calls, [], 'reset-defaults runs nothing');
  snapshotArgv(t, ran);
});

test('a ruleset nft refuses is never installed, and without nft the firewall is 501', async (t) => {
  const host = debianHost();
  const root = await linuxAgent(t, host.runner);
  host.files.set(RULESET, renderRuleset([{ number: 22, protocol: 'tcp' }]));
  const before = host.files.get(RULESET);
  // nft -c rejects the new file, as it would a ruleset the kernel cannot take.
  const run = host.runner.run.bind(host.runner);
  host.runner.run = async (argv, options = {}) => {
    const result = await run(argv, options);
    return argv[0] === 'nft' && argv[1] === '-c' ? { ...result, code: 1, stderr: 'Error: Could not process rule: No such file or directory\n' } : result;
  };
  const err = await fwError(root, 'open', { ports: ['80/tcp'] }, 500);
  assert.match(err.message, /nft -c -f \/etc\/hostadm\/firewall.nft.hostadm-new/);
  assert.equal(host.files.get(RULESET), before, 'the old ruleset stays');
  assert.ok(!host.files.has(`${RULESET}.hostadm-new`), 'the refused file is removed');
  assert.deepEqual(host.runner.calls.at(-1), ['rm', '-f', '--', `${RULESET}.hostadm-new`]);

  const bare = new RecordingRunner([{ match: (argv) => argv[0] === 'nft', code: 127, stderr: 'nft: command not found' }]);
  const root2 = await linuxAgent(t, bare);
  const missing = await fwError(root2, 'status', {}, 501);
  assert.match(missing.message, /nft is not installed/);
});
