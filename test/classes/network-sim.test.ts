/**
 * `network list-devices` on the simulated FreeBSD host: the three devices and their string-typed
 * records, both access levels, bad input, and the host's hardware addresses persisting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rest, SIM_PASSWORD, startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

type Devices = Record<string, Record<string, string>>;

async function signedIn(agent: TestAgent, user: string): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  await client.login(user);
  return client;
}

function devicesOf(reply: Envelope): Devices {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args as Devices;
}

test('network list-devices on the sim host', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let first: Devices = {};

  await t.test('em0 on DHCP, the loopback and an unassociated wlan0, keyed by name directly in args', async () => {
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    first = devicesOf(await admin.call('network', 'list-devices'));
    assert.deepEqual(Object.keys(first).sort(), ['em0', 'lo0', 'wlan0']);
    const em0 = first['em0'] as Record<string, string>;
    assert.match(em0['MAC'] as string, /^00:1f:16(:[0-9a-f]{2}){3}$/);
    assert.deepEqual(
      { ...em0, MAC: 'x', ipv6: 'x' },
      {
        MAC: 'x',
        description: 'Intel(R) PRO/1000 Network Connection 7.6.1-k',
        ipv4: '192.168.1.23',
        ipv6: 'x',
        is_active: 'true',
        is_dhcp: 'true',
        is_wireless: 'false',
        netmask: '255.255.255.0',
        status: 'active',
      },
    );
    assert.match(em0['ipv6'] as string, /^fe80::[0-9a-f:]+%em0$/, 'the link-local address carries its scope');
    assert.deepEqual(first['lo0'], {
      MAC: '',
      description: 'Loopback interface',
      ipv4: '127.0.0.1',
      ipv6: '::1',
      is_active: 'true',
      is_dhcp: 'false',
      is_wireless: 'false',
      netmask: '255.0.0.0',
      status: 'active',
    });
    const wlan0 = first['wlan0'] as Record<string, string>;
    assert.equal(wlan0['is_wireless'], 'true');
    assert.equal(wlan0['status'], 'no carrier');
    assert.equal(wlan0['ipv4'], '0.0.0.0', 'no IPv4 address reads 0.0.0.0');
    assert.equal(wlan0['netmask'], '0.0.0.0');
    assert.equal(wlan0['ipv6'], '');
  });

  await t.test('a limited user may read the list too (read access), over WebSocket and REST', async () => {
    const op = await signedIn(agent, 'operator');
    t.after(() => op.close());
    assert.deepEqual(devicesOf(await op.call('network', 'list-devices')), first);
    const res = await rest(agent, '/admin/network', { action: 'list-devices' }, { basic: ['operator', SIM_PASSWORD] });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.args, first);
  });

  await t.test('arguments are refused: the action takes none', async () => {
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    const reply = await admin.call('network', 'list-devices', { device: 'em0' });
    assert.equal(reply.name, 'error');
    const args = reply.args as { code: number; errors: Array<{ field: string }> };
    assert.equal(args.code, 400);
    assert.deepEqual(
      args.errors.map((e) => e.field),
      ['device'],
    );
    const unknown = await admin.call('network', 'list_devices');
    assert.equal((unknown.args as { code: number }).code, 400, 'the action is spelled with a hyphen');
  });

  await t.test('the devices persist with the host: same addresses after a restart, state edits show', async () => {
    agent = await agent.restart();
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    assert.deepEqual(devicesOf(await admin.call('network', 'list-devices')), first);
    await agent.close();
    const path = join(agent.dataDir, 'sim', 'state.json');
    const doc = JSON.parse(readFileSync(path, 'utf8')) as { slices: { network: { devices: Array<{ name: string; status: string }> } } };
    const wlan = doc.slices.network.devices.find((d) => d.name === 'wlan0');
    assert.ok(wlan);
    wlan.status = 'associated';
    writeFileSync(path, JSON.stringify(doc));
    agent = await agent.restart();
    const again = await signedIn(agent, 'admin');
    t.after(() => again.close());
    assert.equal(devicesOf(await again.call('network', 'list-devices'))['wlan0']?.['status'], 'associated');
  });

  await t.test('a second sim host draws its own hardware addresses', async () => {
    const other = await startTestAgent();
    t.after(() => other.dispose());
    const admin = await signedIn(other, 'admin');
    t.after(() => admin.close());
    const theirs = devicesOf(await admin.call('network', 'list-devices'));
    assert.notEqual(theirs['em0']?.['MAC'], first['em0']?.['MAC']);
  });
});
