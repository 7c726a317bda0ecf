/**
 * FreeBSD moused: the flag parser against real published `moused_flags` values and the device
 * description parser (test/fixtures/freebsd/moused, sources in source.md), then every action through
 * a real agent on the FreeBSD platform whose runner answers like a FreeBSD 14 laptop: the argv each
 * action runs is compared with the checked-in snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { RunOptions } from '@hostadm/agent/runner/runner.ts';
import type { PointerOptions } from '@hostadm/shared/api/moused.ts';
import { mousedFlags, parseMousedFlags, parseMousedPidFiles, parsePointerNodes, parseSysctlLines } from '@hostadm/agent/platforms/freebsd/parse/moused.ts';
import { startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';
import { assertRefusedNaming, MOUSED_REFUSED, okCall } from './powerd-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/moused/${name}`, import.meta.url), 'utf8');
const PUBLISHED = fixture('moused-flags.txt').split('\n').filter(Boolean);
const DEFAULTS: PointerOptions = {
  accel_exponential: '1.0',
  accel_linear: '1.0',
  emulate_button_3: 'false',
  hand_mode: 'right',
  resolution: 'medium-low',
  terminate_drift_threshold_pixels: '0',
  virtual_scrolling: 'false',
};
const DEV = 'ada0\nada0p1\natkbd0\nconsole\nmem\npsm0\nsysmouse\nums0\nums0.ctl\nums10\nums2\nusbctl\n';

test('moused_flags from published rc.conf files, parsed as moused getopt does, and written back', () => {
  const parsed = PUBLISHED.map((flags) => parseMousedFlags(flags));
  assert.deepEqual(parsed[0], { options: { ...DEFAULTS, virtual_scrolling: 'true' }, other: ['-H'] }, '-VH is -V -H');
  assert.deepEqual(parsed[1], { options: { ...DEFAULTS, virtual_scrolling: 'true' }, other: [] });
  assert.deepEqual(parsed[2], { options: { ...DEFAULTS, accel_exponential: '1.3', virtual_scrolling: 'true' }, other: ['-H'] });
  assert.deepEqual(parsed[3], { options: DEFAULTS, other: ['-l', '0'] }, 'a value attached to its letter');
  // Without the dash, getopt stops at `F`: moused itself would see no options.
  assert.deepEqual(parsed[4], { options: DEFAULTS, other: ['F', '200', '-A', '1.0,2.0', '-a', '0.7', '-r', 'high'] });
  assert.deepEqual(parseMousedFlags('-3 -m 1=3 -m 3=1 -A 1.5,1.2 -a 0.7,0.9 -r high -T 4,500,4000 -m 4=5').options, {
    accel_exponential: '1.5',
    accel_linear: '0.7',
    emulate_button_3: 'true',
    hand_mode: 'left',
    resolution: 'high',
    terminate_drift_threshold_pixels: '4',
    virtual_scrolling: 'false',
  });
  for (const [i, flags] of PUBLISHED.entries()) {
    const { options, other } = parseMousedFlags(flags);
    assert.deepEqual(parseMousedFlags(mousedFlags(options, other)), { options, other }, `line ${i + 1} round-trips`);
  }
  assert.equal(mousedFlags({ ...DEFAULTS, hand_mode: 'left', accel_linear: '2.5' }, ['-H']), '-m 1=3 -m 3=1 -a 2.5 -H');
});

test('devices from /dev, their descriptions from sysctl, active ones from the pid files', () => {
  assert.deepEqual(parsePointerNodes(DEV), ['psm0', 'ums0', 'ums2', 'ums10']);
  const values = parseSysctlLines(fixture('sysctl-devices.txt'));
  assert.equal(values.get('dev.psm.0.%desc'), 'PS/2 Mouse');
  assert.equal(values.get('dev.ums.0.%desc'), 'Microsoft Microsoft 3-Button Mouse with IntelliEyeTM, class 0/0, rev 1.10/3.00, addr 2');
  assert.equal(values.get('dev.ums.0.%parent'), 'uhub1');
  assert.deepEqual(parseMousedPidFiles('devd.pid\nmoused.ums0.pid\nmoused.pid\nsyslog.pid\n'), { devices: new Set(['ums0']), defaultInstance: true });
});

/** A FreeBSD laptop as the runner sees it; the pid files and rc.conf follow the commands run. */
class LaptopHost extends RecordingRunner {
  readonly rcconf = new Map<string, string>([['moused_flags', '-VH']]);
  readonly active = new Set<string>(['ums0']);
  defaultOn = true;

  constructor() {
    super([{ match: () => true }]);
  }

  override async run(argv: readonly string[], options: RunOptions = {}) {
    const reply = await super.run(argv, options);
    const answer = (stdout: string, code = 0, stderr = '') => ({ ...reply, stdout, code, stderr });
    const [cmd, a1, a2, a3] = argv;
    if (cmd === 'id') return answer('wheel operator\n');
    if (cmd === 'ls' && a2 === '/dev') return answer('atkbd0\npsm0\nsysmouse\nums0\nums2\n');
    if (cmd === 'ls' && a2 === '/var/run')
      return answer(`devd.pid\n${[...this.active].map((d) => `moused.${d}.pid\n`).join('')}${this.defaultOn ? 'moused.pid\n' : ''}`);
    if (cmd === 'sysctl') return answer(fixture('sysctl-devices.txt'));
    if (cmd === 'sysrc' && a1 === '-n') {
      const name = a3 ?? '';
      if (name === 'moused_port') return answer('/dev/psm0\n');
      const value = this.rcconf.get(name);
      return value === undefined ? answer('', 1, `sysrc: unknown variable '${name}'\n`) : answer(`${value}\n`);
    }
    if (cmd === 'sysrc' && a1 === '--') {
      const [name = '', value = ''] = [a2?.slice(0, a2.indexOf('=')), a2?.slice(a2.indexOf('=') + 1)];
      const before = this.rcconf.get(name) ?? '';
      this.rcconf.set(name, value);
      return answer(`${name}: ${before} -> ${value}\n`);
    }
    if (cmd === 'service' && a1 === 'moused') {
      if (a3 === undefined) {
        // The default instance (rc.conf's moused_enable on moused_port).
        this.defaultOn = a2 !== 'onestop';
        return answer(a2 === 'onestop' ? 'Stopping moused.\n' : 'Starting default moused.\n');
      }
      const device = a3;
      if (a2 === 'onestop' && !this.active.has(device)) return answer('', 1, `moused not running? (check /var/run/moused.${device}.pid).\n`);
      if (a2 === 'onestop') this.active.delete(device);
      else this.active.add(device);
      return answer(`Starting ${device} moused.\n`);
    }
    return answer('', 127, `unexpected command ${argv.join(' ')}\n`);
  }
}

async function laptopAgent(t: TestContext, host: LaptopHost): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  host.calls.length = 0;
  return root;
}

test('every action runs ls, sysctl, sysrc and service as an administrator would (argv snapshot)', async (t) => {
  const host = new LaptopHost();
  const root = await laptopAgent(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async (label: string, action: string, args: Record<string, unknown>, reply: unknown) => {
    host.calls.length = 0;
    assert.deepEqual(await okCall(root, 'moused', action, args), reply, label);
    ran[label] = [...host.calls];
  };
  await step(
    'list_devices',
    'list_devices',
    {},
    {
      list_devices: {
        psm0: { description: 'PS/2 Mouse', device: 'psm0', driver: 'psm', parent: 'atkbdc0', active: 'true' },
        ums0: {
          description: 'Microsoft Microsoft 3-Button Mouse with IntelliEyeTM, class 0/0, rev 1.10/3.00, addr 2',
          device: 'ums0',
          driver: 'ums',
          parent: 'uhub1',
          active: 'true',
        },
        // A node without a sysctl tree (the fixture has none for ums2) is still listed, undescribed.
        ums2: { description: '', device: 'ums2', driver: '', parent: '', active: 'false' },
      },
    },
  );
  await step('list_devices_active', 'list_devices_active', {}, { list_devices_active: { active_devices: ['psm0', 'ums0'] } });
  await step('list_device_options', 'list_device_options', {}, await okCall(root, 'moused', 'list_device_options'));
  await step(
    'read_device_options (falls back to moused_flags)',
    'read_device_options',
    { device: 'ums2' },
    {
      read_device_options: { ...DEFAULTS, virtual_scrolling: 'true', device: 'ums2' },
    },
  );
  await step('set_device_active', 'set_device_active', { device: 'ums2' }, { set_device_active: { started: 'ums2' } });
  await step(
    'set_device_options (active: restarted)',
    'set_device_options',
    { device: 'ums2', hand_mode: 'left', accel_exponential: 1.5, resolution: 'high' },
    {
      set_device_options: { ...DEFAULTS, virtual_scrolling: 'true', hand_mode: 'left', accel_exponential: '1.5', resolution: 'high', device: 'ums2' },
    },
  );
  await step('set_device_inactive', 'set_device_inactive', { device: 'ums2' }, { set_device_inactive: { stopped: 'ums2' } });
  await step(
    'set_device_options (inactive: not started)',
    'set_device_options',
    { device: 'ums2', emulate_button_3: 'true', hand_mode: 'right' },
    {
      set_device_options: { ...DEFAULTS, virtual_scrolling: 'true', accel_exponential: '1.5', resolution: 'high', emulate_button_3: 'true', device: 'ums2' },
    },
  );
  assert.equal(host.rcconf.get('moused_ums2_flags'), '-3 -V -A 1.5 -r high -H');
  assert.equal(host.rcconf.get('moused_flags'), '-VH', 'the general flags are untouched');
  assert.ok(!host.active.has('ums2'));
  snapshotArgv(t, ran);
});

test('stopping a device whose daemon is not running counts as done; unknown devices run nothing but the lookup', async (t) => {
  const host = new LaptopHost();
  const root = await laptopAgent(t, host);
  assert.deepEqual(await okCall(root, 'moused', 'set_device_inactive', { device: 'ums2' }), { set_device_inactive: { stopped: 'ums2' } });
  // psm0 is served by the default instance (moused.pid on moused_port): stopped as such, without a device.
  host.calls.length = 0;
  assert.deepEqual(await okCall(root, 'moused', 'set_device_inactive', { device: 'psm0' }), { set_device_inactive: { stopped: 'psm0' } });
  assert.deepEqual(host.calls.at(-1), ['service', 'moused', 'onestop']);
  assert.deepEqual(await okCall(root, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['ums0'] } });
  host.calls.length = 0;
  assertRefusedNaming(await root.call('moused', 'set_device_active', { device: 'ums7' }), 'device', 'unknown');
  assert.ok(!host.calls.some((c) => c[0] === 'service' || (c[0] === 'sysrc' && c[1] === '--')), 'nothing changed');
});

test('every option range is enforced before anything runs: 400 naming the option, no command', async (t) => {
  const host = new LaptopHost();
  const root = await laptopAgent(t, host);
  for (const [option, value] of MOUSED_REFUSED) {
    assertRefusedNaming(await root.call('moused', 'set_device_options', { device: 'psm0', [option]: value }), option, `${option}=${JSON.stringify(value)}`);
  }
  expectError(await root.call('moused', 'set_device_options', { device: 'psm0; reboot', hand_mode: 'left' }), 400);
  assert.deepEqual(host.calls, [], 'nothing ran');
});
