/**
 * FreeBSD powerd: the flag parser against real published `powerd_flags` values
 * (test/fixtures/freebsd/powerd, sources in the .source.md), then every action through a real agent
 * on the FreeBSD platform whose runner answers like a FreeBSD 14 host: the argv each action runs is
 * compared with the checked-in snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { parsePowerdFlags, powerdFlags } from '@hostadm/agent/platforms/freebsd/parse/powerd.ts';
import { startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';
import { assertRefusedNaming, okCall, POWERD_REFUSED } from './powerd-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/powerd/${name}`, import.meta.url), 'utf8');
const PUBLISHED = fixture('powerd-flags.txt').split('\n').filter(Boolean);

const NO_FLAGS = {
  ac_power_mode: 'hiadaptive',
  battery_power_mode: 'adaptive',
  unknown_power_mode: 'hiadaptive',
  adaptive_lower_threshold_percent: '50',
  adaptive_raise_threshold_percent: '75',
  max_cpu_freq: '-1',
  min_cpu_freq: '-1',
  polling_interval_ms: '250',
};

test('powerd_flags from published rc.conf files: modes (short names too), thresholds, polling', () => {
  const parsed = PUBLISHED.map((flags) => parsePowerdFlags(flags));
  assert.deepEqual(parsed[0], { options: { ...NO_FLAGS, ac_power_mode: 'hiadaptive', battery_power_mode: 'adaptive' }, other: [] });
  assert.equal(parsed[2]?.options.ac_power_mode, 'hiadaptive', 'hadp');
  assert.equal(parsed[3]?.options.ac_power_mode, 'maximum', 'max');
  assert.deepEqual(parsed[5]?.options, { ...NO_FLAGS, ac_power_mode: 'adaptive', polling_interval_ms: '100', adaptive_raise_threshold_percent: '90' });
  assert.deepEqual(parsed[6]?.options, {
    ...NO_FLAGS,
    ac_power_mode: 'maximum',
    battery_power_mode: 'adaptive',
    adaptive_lower_threshold_percent: '85',
    adaptive_raise_threshold_percent: '60',
    polling_interval_ms: '100',
  });
  assert.deepEqual(parsePowerdFlags(''), { options: NO_FLAGS, other: [] });
  // Frequencies are MHz in the flags, Hz on the wire; flags the interface does not know are kept.
  assert.deepEqual(parsePowerdFlags('-M 2400 -m 800 -N -P /var/run/p.pid -v'), {
    options: { ...NO_FLAGS, max_cpu_freq: '2400000000', min_cpu_freq: '800000000' },
    other: ['-N', '-P', '/var/run/p.pid', '-v'],
  });
  // Written back: every published value round-trips to the same options.
  for (const [i, flags] of PUBLISHED.entries()) {
    const { options, other } = parsePowerdFlags(flags);
    const written = powerdFlags(options, other);
    assert.ok('flags' in written);
    assert.deepEqual(parsePowerdFlags(written.flags).options, options, `line ${i + 1}`);
  }
  assert.deepEqual(powerdFlags({ ...NO_FLAGS, max_cpu_freq: '999999' }), { tooFine: 'max_cpu_freq' });
});

/** Runner whose answers follow what the previous commands did, as a host would. */
class FreebsdPowerdHost extends RecordingRunner {
  flags = '';
  enable = 'NO';
  running = false;
  failStart = false;

  override async run(argv: readonly string[], options = {}) {
    const reply = await super.run(argv, options);
    // A canned failure is the host's answer as it stands.
    if (reply.code !== 0) return reply;
    const line = argv.join(' ');
    if (line === 'sysrc -n -- powerd_flags') return { ...reply, stdout: `${this.flags}\n` };
    if (line === 'sysrc -n -- powerd_enable') return { ...reply, stdout: `${this.enable}\n` };
    if (argv[0] === 'sysrc' && argv[2]?.startsWith('powerd_flags=')) {
      const before = this.flags;
      this.flags = argv[2].slice('powerd_flags='.length);
      return { ...reply, stdout: `powerd_flags: ${before} -> ${this.flags}\n` };
    }
    if (argv[0] === 'sysrc' && argv[2]?.startsWith('powerd_enable=')) {
      const before = this.enable;
      this.enable = argv[2].slice('powerd_enable='.length);
      return { ...reply, stdout: `powerd_enable: ${before} -> ${this.enable}\n` };
    }
    if (argv[0] === 'service' && argv[2] === 'onestatus') {
      return this.running ? { ...reply, stdout: 'powerd is running as pid 912.\n' } : { ...reply, stdout: 'powerd is not running.\n', code: 1 };
    }
    if (argv[0] === 'service' && /^(one)?start$/.test(argv[2] ?? '')) {
      if (this.failStart)
        return { ...reply, stderr: 'powerd: lookup freq: No such file or directory\n/etc/rc.d/powerd: WARNING: failed to start powerd\n', code: 1 };
      if (this.running) return { ...reply, stderr: 'powerd already running?  (pid=912).\n', code: 1 };
      this.running = true;
      return { ...reply, stdout: 'Starting powerd.\n' };
    }
    if (argv[0] === 'service' && /^(one)?stop$/.test(argv[2] ?? '')) {
      if (!this.running) return { ...reply, stderr: 'powerd not running? (check /var/run/powerd.pid).\n', code: 1 };
      this.running = false;
      return { ...reply, stdout: 'Stopping powerd.\nWaiting for PIDS: 912.\n' };
    }
    if (argv[0] === 'service' && argv[2] === 'onerestart') {
      this.running = true;
      return { ...reply, stdout: 'Stopping powerd.\nWaiting for PIDS: 912.\nStarting powerd.\n' };
    }
    return reply;
  }
}

async function freebsdAgent(t: TestContext, host: FreebsdPowerdHost): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  host.calls.length = 0;
  return root;
}

function newHost(): FreebsdPowerdHost {
  return new FreebsdPowerdHost([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: (argv) => argv[0] === 'sysrc' || argv[0] === 'service', stdout: '' },
  ]);
}

test('every action runs sysrc and service as an administrator would (argv snapshot)', async (t) => {
  const host = newHost();
  host.flags = PUBLISHED[0] ?? '';
  const root = await freebsdAgent(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async (label: string, action: string, args: Record<string, unknown>, reply: unknown) => {
    host.calls.length = 0;
    assert.deepEqual(await okCall(root, 'powerd', action, args), reply, label);
    ran[label] = [...host.calls];
  };
  await step('list_options', 'list_options', {}, await okCall(root, 'powerd', 'list_options'));
  await step('read_options', 'read_options', {}, { read_options: NO_FLAGS });
  await step('list_status', 'list_status', {}, { list_status: { enabled: 'false', running: 'false' } });
  await step('start (not enabled: onestart)', 'start', {}, { start: { started: 'true' } });
  await step(
    'set_options (running: restarted)',
    'set_options',
    { battery_power_mode: 'minimum', max_cpu_freq: 2_400_000_000, polling_interval_ms: 500 },
    {
      set_options: { ...NO_FLAGS, battery_power_mode: 'minimum', max_cpu_freq: '2400000000', polling_interval_ms: '500' },
    },
  );
  await step('set_active', 'set_active', {}, { set_active: { enabled: 'true' } });
  await step('stop (enabled: stop)', 'stop', {}, { stop: { stopped: 'true' } });
  await step(
    'set_options (stopped: not started)',
    'set_options',
    { ac_power_mode: 'minumum' },
    {
      set_options: { ...NO_FLAGS, ac_power_mode: 'minimum', battery_power_mode: 'minimum', max_cpu_freq: '2400000000', polling_interval_ms: '500' },
    },
  );
  await step('set_inactive', 'set_inactive', {}, { set_inactive: { disabled: 'true' } });
  assert.equal(host.flags, '-a minimum -b minimum -n hiadaptive -i 50 -r 75 -M 2400 -p 500');
  assert.equal(host.enable, 'NO');
  assert.equal(host.running, false);
  assert.deepEqual(ran['set_options (running: restarted)']?.at(-2), ['service', 'powerd', 'onerestart']);
  snapshotArgv(t, ran);
});

test('start and stop of a daemon already in that state count as done; a start that fails answers started "false"', async (t) => {
  const host = newHost();
  host.running = true;
  const root = await freebsdAgent(t, host);
  assert.deepEqual(await okCall(root, 'powerd', 'start'), { start: { started: 'true' } });
  host.running = false;
  assert.deepEqual(await okCall(root, 'powerd', 'stop'), { stop: { stopped: 'true' } });
  host.failStart = true;
  assert.deepEqual(await okCall(root, 'powerd', 'start'), { start: { started: 'false' } });
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
});

test('every option range is enforced before anything runs: 400 naming the option, no sysrc or service', async (t) => {
  const host = newHost();
  const root = await freebsdAgent(t, host);
  for (const [option, value] of POWERD_REFUSED) {
    assertRefusedNaming(await root.call('powerd', 'set_options', { [option]: value }), option, `${option}=${JSON.stringify(value)}`);
  }
  assert.deepEqual(host.calls, [], 'nothing ran');
  // powerd works in whole MHz: a limit under 1 MHz is refused after reading, before writing.
  assertRefusedNaming(await root.call('powerd', 'set_options', { min_cpu_freq: 999_999 }), 'min_cpu_freq', 'sub-MHz');
  assert.ok(!host.calls.some((c) => c[0] === 'sysrc' && c[1] === '--'), 'nothing written');
  assert.equal(host.flags, '');
  expectError(await root.call('powerd', 'set_options', {}), 400);
});

test('an unset powerd_flags reads as the defaults; a sysrc that fails answers 500 with its reason', async (t) => {
  const host = new FreebsdPowerdHost([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: ['sysrc', '--', 'powerd_enable=YES'], stderr: 'sysrc: /etc/rc.conf: Permission denied\n', code: 1 },
    { match: ['sysrc', '-n', '--', 'powerd_flags'], stderr: fixture('sysrc-unknown-variable.txt').replace('linprocfs_load', 'powerd_flags'), code: 1 },
    { match: (argv) => argv[0] === 'sysrc' || argv[0] === 'service', stdout: '' },
  ]);
  const root = await freebsdAgent(t, host);
  // A variable set nowhere (an rc.conf without defaults) reads as empty: powerd's own defaults.
  assert.deepEqual(await okCall(root, 'powerd', 'read_options'), { read_options: NO_FLAGS });
  const err = expectError(await root.call('powerd', 'set_active'), 500);
  assert.match(err.message, /sysrc powerd_enable=YES exited with code 1: sysrc: \/etc\/rc.conf: Permission denied/);
});
