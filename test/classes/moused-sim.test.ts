/**
 * `admin/moused` on the simulated FreeBSD host, through a real agent over its WebSocket: every action
 * in the spec's shapes, effects read back, persistence across a restart, every option's range
 * enforced (400 naming the option, nothing changed), unknown devices refused, and the access rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { assertRefusedNaming, MOUSED_REFUSED, okCall } from './powerd-support.ts';

const DEFAULTS = {
  accel_exponential: '1.0',
  accel_linear: '1.0',
  emulate_button_3: 'false',
  hand_mode: 'right',
  resolution: 'medium-low',
  terminate_drift_threshold_pixels: '0',
  virtual_scrolling: 'false',
};

test('list_devices, list_devices_active and list_device_options in the spec shapes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await okCall(admin, 'moused', 'list_devices'), {
    list_devices: {
      psm0: { description: 'PS/2 Mouse', device: 'psm0', driver: 'psm', parent: 'atkbdc0', active: 'true' },
      ums0: {
        description: 'Microsoft Microsoft 3-Button Mouse with IntelliEyeTM, class 0/0, rev 1.10/3.00, addr 2',
        device: 'ums0',
        driver: 'ums',
        parent: 'uhub1',
        active: 'false',
      },
    },
  });
  assert.deepEqual(await okCall(admin, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['psm0'] } });
  assert.deepEqual(await okCall(admin, 'moused', 'list_device_options'), {
    list_device_options: {
      accel_exponential: 'float min=1.0 max=2.0',
      accel_linear: 'float min=0.01 max=100.00',
      emulate_button_3: ['true', 'false'],
      hand_mode: ['left', 'right'],
      resolution: ['low', 'medium-low', 'medium-high', 'high'],
      terminate_drift_threshold_pixels: 'int min=0 max=1000',
      virtual_scrolling: ['true', 'false'],
    },
  });
});

test('activating, deactivating and options change the device, and survive a restart of the agent', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await okCall(admin, 'moused', 'read_device_options', { device: 'psm0' }), {
    read_device_options: { ...DEFAULTS, virtual_scrolling: 'true', device: 'psm0' },
  });
  assert.deepEqual(await okCall(admin, 'moused', 'set_device_active', { device: 'ums0' }), { set_device_active: { started: 'ums0' } });
  assert.deepEqual(await okCall(admin, 'moused', 'set_device_inactive', { device: 'psm0' }), { set_device_inactive: { stopped: 'psm0' } });
  assert.deepEqual(await okCall(admin, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['ums0'] } });
  const changed = {
    accel_exponential: '1.5',
    accel_linear: 0.01,
    emulate_button_3: true,
    hand_mode: 'left',
    resolution: 'high',
    terminate_drift_threshold_pixels: 1000,
    virtual_scrolling: 'true',
  };
  const expected = {
    accel_exponential: '1.5',
    accel_linear: '0.01',
    emulate_button_3: 'true',
    hand_mode: 'left',
    resolution: 'high',
    terminate_drift_threshold_pixels: '1000',
    virtual_scrolling: 'true',
    device: 'ums0',
  };
  assert.deepEqual(await okCall(admin, 'moused', 'set_device_options', { device: 'ums0', ...changed }), { set_device_options: expected });
  // One option at a time merges into the rest.
  assert.deepEqual(await okCall(admin, 'moused', 'set_device_options', { device: 'ums0', hand_mode: 'right' }), {
    set_device_options: { ...expected, hand_mode: 'right' },
  });

  agent = await agent.restart();
  t.after(() => agent.dispose());
  admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await okCall(admin, 'moused', 'read_device_options', { device: 'ums0' }), { read_device_options: { ...expected, hand_mode: 'right' } });
  assert.deepEqual(await okCall(admin, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['ums0'] } });
  assert.deepEqual(await okCall(admin, 'moused', 'read_device_options', { device: 'psm0' }), {
    read_device_options: { ...DEFAULTS, virtual_scrolling: 'true', device: 'psm0' },
  });
});

test('every option range is enforced, and unknown or malformed devices refused: 400 naming the field, nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const before = await okCall(admin, 'moused', 'read_device_options', { device: 'psm0' });
  for (const [option, value] of MOUSED_REFUSED) {
    const other = option === 'hand_mode' ? { resolution: 'high' } : { hand_mode: 'left' };
    assertRefusedNaming(
      await admin.call('moused', 'set_device_options', { device: 'psm0', ...other, [option]: value }),
      option,
      `${option}=${JSON.stringify(value)}`,
    );
  }
  assertRefusedNaming(await admin.call('moused', 'set_device_options', { device: 'psm9', hand_mode: 'left' }), 'device', 'unknown device');
  for (const action of ['read_device_options', 'set_device_active', 'set_device_inactive']) {
    assertRefusedNaming(await admin.call('moused', action, { device: 'ums7' }), 'device', action);
    assertRefusedNaming(await admin.call('moused', action, { device: '../psm0' }), 'device', action);
    expectError(await admin.call('moused', action, {}), 400);
  }
  assert.match(expectError(await admin.call('moused', 'set_device_options', { device: 'psm0' }), 400).message, /at least one option is required/);
  assert.deepEqual(await okCall(admin, 'moused', 'read_device_options', { device: 'psm0' }), before);
  assert.deepEqual(await okCall(admin, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['psm0'] } });
});

test('an operator reads but cannot change (403); query lists the class', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  assert.deepEqual(Object.keys((await okCall(operator, 'moused', 'list_devices')).list_devices as object), ['psm0', 'ums0']);
  for (const action of ['set_device_active', 'set_device_inactive']) expectError(await operator.call('moused', action, { device: 'ums0' }), 403);
  expectError(await operator.call('moused', 'set_device_options', { device: 'psm0', hand_mode: 'left' }), 403);
  assert.equal(((await operator.request('rpc', 'query', {})).args as Record<string, string>)['admin/moused'], 'read');
  assert.deepEqual(await okCall(operator, 'moused', 'list_devices_active'), { list_devices_active: { active_devices: ['psm0'] } });
});
