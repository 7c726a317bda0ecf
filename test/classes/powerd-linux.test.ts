/**
 * Linux powerd: cpufreq governors in a fake /sys tree built from a real RK3588 board's policies
 * (test/fixtures/linux/powerd, sources in source.md), through a real agent with `sysRoot` aimed at
 * it. What the agent writes is read back from the tree, and "running" follows the tree, not a file.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { governorFor, limitKhz, parseGovernors } from '@hostadm/agent/platforms/linux/parse/powerd.ts';
import { sessionClientFor, startTestAgent, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { assertRefusedNaming, okCall, POWERD_REFUSED } from './powerd-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/powerd/${name}`, import.meta.url), 'utf8');
const RK3588 = parseGovernors(fixture('rk3588-available-governors.txt'));
const INTEL_PSTATE = parseGovernors(fixture('intel-pstate-available-governors.txt'));

test('modes map to the closest governor the driver offers', () => {
  assert.deepEqual(RK3588, ['conservative', 'ondemand', 'userspace', 'powersave', 'performance', 'schedutil']);
  assert.equal(governorFor('maximum', RK3588), 'performance');
  assert.equal(governorFor('minimum', RK3588), 'powersave');
  assert.equal(governorFor('adaptive', RK3588), 'schedutil');
  assert.equal(governorFor('hiadaptive', RK3588), 'ondemand');
  // intel_pstate: its powersave follows the load, so both adaptive modes get one of the two.
  assert.equal(governorFor('adaptive', INTEL_PSTATE), 'powersave');
  assert.equal(governorFor('hiadaptive', INTEL_PSTATE), 'performance');
  assert.equal(governorFor('adaptive', ['userspace']), null);
  const freqs = fixture('rk3588-policy0-available-frequencies.txt').trim().split(/\s+/).map(Number);
  const range = { min: freqs[0] ?? 0, max: freqs.at(-1) ?? 0 };
  assert.deepEqual(range, { min: 408000, max: 1800000 });
  assert.equal(limitKhz('-1', range.max, range), 1800000);
  assert.equal(limitKhz('1200000000', range.max, range), 1200000, 'Hz to kHz');
  assert.equal(limitKhz('3000000000', range.max, range), 1800000, 'kept inside the hardware range');
  assert.equal(limitKhz('1000000', range.min, range), 408000);
});

/** An RK3588-like /sys: policy0 (cpu0-3, 408-1800 MHz) and policy4 (cpu4-5, 408-2208 MHz), an AC adapter and a battery. */
function fakeSys(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), 'hostadm-cpufreq-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const cpu = join(root, 'devices/system/cpu');
  const policies: Array<[string, number[], number]> = [
    ['policy0', [0, 1, 2, 3], 1800000],
    ['policy4', [4, 5], 2208000],
  ];
  for (const [policy, cpus, max] of policies) {
    const dir = join(cpu, 'cpufreq', policy);
    mkdirSync(dir, { recursive: true });
    const files = {
      scaling_available_governors: fixture('rk3588-available-governors.txt'),
      scaling_governor: 'schedutil\n',
      cpuinfo_min_freq: '408000\n',
      cpuinfo_max_freq: `${max}\n`,
      scaling_min_freq: '408000\n',
      scaling_max_freq: `${max}\n`,
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    for (const n of cpus) {
      mkdirSync(join(cpu, `cpu${n}`), { recursive: true });
      symlinkSync(`../cpufreq/${policy}`, join(cpu, `cpu${n}`, 'cpufreq'));
    }
  }
  setPower(root, true);
  return root;
}

function setPower(sysRoot: string, onAc: boolean): void {
  const supply = join(sysRoot, 'class/power_supply');
  mkdirSync(join(supply, 'AC'), { recursive: true });
  mkdirSync(join(supply, 'BAT0'), { recursive: true });
  writeFileSync(join(supply, 'AC/type'), 'Mains\n');
  writeFileSync(join(supply, 'AC/online'), onAc ? '1\n' : '0\n');
  writeFileSync(join(supply, 'BAT0/type'), 'Battery\n');
  writeFileSync(join(supply, 'BAT0/present'), '1\n');
  writeFileSync(join(supply, 'BAT0/status'), onAc ? 'Charging\n' : 'Discharging\n');
}

const policyFile = (sysRoot: string, policy: string, name: string) => readFileSync(join(sysRoot, 'devices/system/cpu/cpufreq', policy, name), 'utf8').trim();

async function linuxAgent(t: TestContext, sysRoot: string, dataDir?: string): Promise<{ agent: TestAgent; root: TestClient }> {
  const agent = await startTestAgent({ platform: 'linux', runner: new RecordingRunner([]), sysRoot }, dataDir);
  if (!dataDir) t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  return { agent, root };
}

test('start applies the mode of the power source and the limits to every policy; stop puts the governors back', async (t) => {
  const sys = fakeSys(t);
  const { root } = await linuxAgent(t, sys);
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
  const set = await okCall(root, 'powerd', 'set_options', { ac_power_mode: 'maximum', battery_power_mode: 'minimum', max_cpu_freq: 1_200_000_000 });
  assert.equal((set.set_options as Record<string, string>).max_cpu_freq, '1200000000');
  assert.equal(policyFile(sys, 'policy0', 'scaling_governor'), 'schedutil', 'not running: nothing applied yet');

  assert.deepEqual(await okCall(root, 'powerd', 'start'), { start: { started: 'true' } });
  for (const policy of ['policy0', 'policy4']) {
    assert.equal(policyFile(sys, policy, 'scaling_governor'), 'performance', `${policy}: AC mode maximum`);
    assert.equal(policyFile(sys, policy, 'scaling_max_freq'), '1200000');
    assert.equal(policyFile(sys, policy, 'scaling_min_freq'), '408000');
  }
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'true' } });

  // On battery, a change of options while running re-applies them: the battery mode now.
  setPower(sys, false);
  await okCall(root, 'powerd', 'set_options', { max_cpu_freq: -1 });
  assert.equal(policyFile(sys, 'policy4', 'scaling_governor'), 'powersave');
  assert.equal(policyFile(sys, 'policy4', 'scaling_max_freq'), '2208000', '-1 lifts the limit');

  // Someone else changing a governor: the kernel is the truth, so powerd no longer counts as running.
  writeFileSync(join(sys, 'devices/system/cpu/cpufreq/policy4/scaling_governor'), 'ondemand\n');
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
  assert.deepEqual(await okCall(root, 'powerd', 'start'), { start: { started: 'true' } });
  assert.deepEqual(await okCall(root, 'powerd', 'stop'), { stop: { stopped: 'true' } });
  for (const policy of ['policy0', 'policy4']) assert.equal(policyFile(sys, policy, 'scaling_governor'), 'schedutil', `${policy}: the boot governor is back`);
  assert.equal(policyFile(sys, 'policy0', 'scaling_max_freq'), '1800000');
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
});

test('the boot setting persists and makes the agent apply the options when it starts', async (t) => {
  const sys = fakeSys(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-test-'));
  let { agent, root } = await linuxAgent(t, sys, dataDir);
  await okCall(root, 'powerd', 'set_options', { ac_power_mode: 'hiadaptive' });
  assert.deepEqual(await okCall(root, 'powerd', 'set_active'), { set_active: { enabled: 'true' } });
  agent = await agent.restart();
  t.after(() => agent.dispose());
  root = await sessionClientFor(t, agent, 'root', 'full');
  // The agent applies them as it starts, without waiting for it: wait for the tree to show it.
  for (let i = 0; i < 200 && policyFile(sys, 'policy4', 'scaling_governor') !== 'ondemand'; i++) await new Promise((r) => setTimeout(r, 25));
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'true', running: 'true' } });
  assert.equal(policyFile(sys, 'policy0', 'scaling_governor'), 'ondemand');
  assert.deepEqual(await okCall(root, 'powerd', 'set_inactive'), { set_inactive: { disabled: 'true' } });
  const { read_options } = (await okCall(root, 'powerd', 'read_options')) as { read_options: Record<string, string> };
  assert.equal(read_options.ac_power_mode, 'hiadaptive', 'the options survived the restart');
  assert.deepEqual(await okCall(root, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'true' } });
});

test('every option range is enforced: 400 naming the option, the tree and the options untouched', async (t) => {
  const sys = fakeSys(t);
  const { root } = await linuxAgent(t, sys);
  await okCall(root, 'powerd', 'start');
  const before = await okCall(root, 'powerd', 'read_options');
  for (const [option, value] of POWERD_REFUSED) {
    assertRefusedNaming(await root.call('powerd', 'set_options', { [option]: value }), option, `${option}=${JSON.stringify(value)}`);
  }
  assert.deepEqual(await okCall(root, 'powerd', 'read_options'), before);
  assert.equal(policyFile(sys, 'policy0', 'scaling_governor'), 'schedutil', 'adaptive on AC, still');
});

test('a host without cpufreq does not serve powerd (nor Linux moused): query leaves them out and a call is a 404', async (t) => {
  const sys = mkdtempSync(join(tmpdir(), 'hostadm-nocpufreq-'));
  t.after(() => rmSync(sys, { recursive: true, force: true }));
  mkdirSync(join(sys, 'devices/system/cpu/cpu0'), { recursive: true });
  const { root } = await linuxAgent(t, sys);
  const query = (await root.request('rpc', 'query', {})).args as Record<string, string>;
  assert.equal(query['admin/powerd'], undefined);
  assert.equal(query['admin/moused'], undefined, 'no console mouse daemon is driven on Linux');
  assert.ok(query['admin/services'], 'other classes are served');
  const err = expectError(await root.call('powerd', 'list_status'), 404);
  assert.match(err.message, /not available on this host/);
});
