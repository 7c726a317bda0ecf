/**
 * `admin/powerd` on the simulated FreeBSD host, through a real agent over its WebSocket: every action
 * in the spec's shapes, effects read back, persistence across a restart, every option's range
 * enforced (400 naming the option, nothing changed), and the access rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, rest, SIM_PASSWORD, startTestAgent } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { assertRefusedNaming, okCall, POWERD_REFUSED } from './powerd-support.ts';

const INITIAL = {
  ac_power_mode: 'maximum',
  battery_power_mode: 'adaptive',
  unknown_power_mode: 'adaptive',
  adaptive_lower_threshold_percent: '50',
  adaptive_raise_threshold_percent: '75',
  max_cpu_freq: '-1',
  min_cpu_freq: '-1',
  polling_interval_ms: '250',
};

test('list_options reports exactly the spec rules, the lowest mode spelled as the original listed it', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await okCall(admin, 'powerd', 'list_options'), {
    list_options: {
      ac_power_mode: ['maximum', 'hiadaptive', 'adaptive', 'minumum'],
      battery_power_mode: ['maximum', 'hiadaptive', 'adaptive', 'minumum'],
      unknown_power_mode: ['maximum', 'hiadaptive', 'adaptive', 'minumum'],
      adaptive_lower_threshold_percent: 'int min=1 max=100',
      adaptive_raise_threshold_percent: 'int min=1 max=100',
      max_cpu_freq: 'int Hz min=1 (-1 = no limit)',
      min_cpu_freq: 'int Hz min=1 (-1 = no limit)',
      polling_interval_ms: 'int min=1',
    },
  });
});

test('status, start/stop and the boot setting in the spec shapes, and every change survives a restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'start'), { start: { started: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'set_active'), { set_active: { enabled: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'true', running: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'stop'), { stop: { stopped: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'true', running: 'false' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'set_options', { battery_power_mode: 'minimum', polling_interval_ms: 500 }), {
    set_options: { ...INITIAL, battery_power_mode: 'minimum', polling_interval_ms: '500' },
  });

  agent = await agent.restart();
  t.after(() => agent.dispose());
  admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'true', running: 'false' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'read_options'), { read_options: { ...INITIAL, battery_power_mode: 'minimum', polling_interval_ms: '500' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'set_inactive'), { set_inactive: { disabled: 'true' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
});

test('set_options merges: several options at once, numbers as strings or numbers, the listed `minumum` spelling', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await okCall(admin, 'powerd', 'read_options'), { read_options: INITIAL });
  const changed = {
    ac_power_mode: 'hiadaptive',
    unknown_power_mode: 'minumum',
    adaptive_lower_threshold_percent: '1',
    adaptive_raise_threshold_percent: 100,
    max_cpu_freq: 2_400_000_000,
    min_cpu_freq: '800000000',
  };
  const expected = {
    ...INITIAL,
    ac_power_mode: 'hiadaptive',
    unknown_power_mode: 'minimum',
    adaptive_lower_threshold_percent: '1',
    adaptive_raise_threshold_percent: '100',
    max_cpu_freq: '2400000000',
    min_cpu_freq: '800000000',
  };
  assert.deepEqual(await okCall(admin, 'powerd', 'set_options', changed), { set_options: expected });
  assert.deepEqual(await okCall(admin, 'powerd', 'set_options', { max_cpu_freq: -1 }), { set_options: { ...expected, max_cpu_freq: '-1' } });
  assert.deepEqual(await okCall(admin, 'powerd', 'read_options'), { read_options: { ...expected, max_cpu_freq: '-1' } });
});

test('every option range is enforced: a 400 naming the option, and nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  for (const [option, value] of POWERD_REFUSED) {
    // A valid option next to the bad one is not applied either.
    const reply = await admin.call('powerd', 'set_options', {
      [option === 'ac_power_mode' ? 'battery_power_mode' : 'ac_power_mode']: 'minimum',
      [option]: value,
    });
    assertRefusedNaming(reply, option, `${option}=${JSON.stringify(value)}`);
  }
  const none = expectError(await admin.call('powerd', 'set_options', {}), 400);
  assert.match(none.message, /at least one option is required/);
  expectError(await admin.call('powerd', 'set_options', { cpu_turbo: 'true' }), 400);
  expectError(await admin.call('powerd', 'start', { now: true }), 400);
  assert.deepEqual(await okCall(admin, 'powerd', 'read_options'), { read_options: INITIAL });
});

test('an operator reads but cannot change (403); query lists the class; REST reaches it', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  assert.deepEqual(await okCall(operator, 'powerd', 'list_status'), { list_status: { enabled: 'false', running: 'false' } });
  for (const action of ['start', 'stop', 'set_active', 'set_inactive']) expectError(await operator.call('powerd', action), 403);
  expectError(await operator.call('powerd', 'set_options', { ac_power_mode: 'minimum' }), 403);
  assert.equal(((await operator.request('rpc', 'query', {})).args as Record<string, string>)['admin/powerd'], 'read');
  const started = await rest(agent, '/admin/powerd', { action: 'start' }, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(started.status, 200, JSON.stringify(started.body));
  assert.deepEqual(started.body.args, { start: { started: 'true' } });
  assert.deepEqual(await okCall(operator, 'powerd', 'read_options'), { read_options: INITIAL });
});
