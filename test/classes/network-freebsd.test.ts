/**
 * `network list-devices` on the FreeBSD platform: the ifconfig parser against real output (the
 * FreeBSD Handbook, SaltStack's FreeBSD fixture; see test/fixtures/freebsd/network/*.source.md),
 * and the action through an agent whose runner replays host output, its argv snapshotted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { isDhcpConfig, rcVar, toDevices } from '@hostadm/agent/platforms/freebsd/network.ts';
import { dottedNetmask, parseIfconfig, parseNameValue } from '@hostadm/agent/platforms/freebsd/parse/network.ts';
import { startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/network/${name}`, import.meta.url), 'utf8');
const devicesFrom = (name: string) => toDevices(parseIfconfig(fixture(name)), new Map(), new Map());
const byName = <T extends { name: string }>(list: T[], name: string): T => {
  const found = list.find((d) => d.name === name);
  assert.ok(found, name);
  return found;
};

async function listAs(agent: TestAgent): Promise<Record<string, Record<string, string>>> {
  const session = agent.services.sessions.create({ user: 'operator', level: 'limited', groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  try {
    assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
    const reply = await client.call('network', 'list-devices');
    assert.equal(reply.name, 'response', JSON.stringify(reply.args));
    return reply.args as Record<string, Record<string, string>>;
  } finally {
    client.close();
  }
}

test('FreeBSD ifconfig parsing (real samples)', async (t) => {
  await t.test('Handbook, wired: em0 active with IPv4 and link-local IPv6, lo0 without a status line', () => {
    const devices = devicesFrom('ifconfig-handbook-wired.txt');
    assert.deepEqual(byName(devices, 'em0'), {
      name: 'em0',
      mac: '00:1f:16:0f:27:5a',
      description: 'em',
      ipv4: { address: '192.168.1.19', netmask: '255.255.255.0' },
      ipv6: 'fe80::21f:16ff:fe0f:275a%em0',
      up: true,
      dhcp: false,
      wireless: false,
      status: 'active',
    });
    const lo0 = byName(devices, 'lo0');
    assert.equal(lo0.mac, '');
    assert.equal(lo0.description, 'Loopback interface', 'from its interface group');
    assert.equal(lo0.ipv6, '::1', 'the first inet6 line');
    assert.deepEqual(lo0.ipv4, { address: '127.0.0.1', netmask: '255.0.0.0' });
    assert.equal(lo0.status, 'active', 'UP and RUNNING');
  });

  await t.test('Handbook, unconfigured em0: down, no address, no carrier', () => {
    const [em0] = devicesFrom('ifconfig-handbook-unconfigured.txt');
    assert.ok(em0);
    assert.equal(em0.up, false);
    assert.equal(em0.ipv4, null);
    assert.equal(em0.ipv6, null);
    assert.equal(em0.status, 'no carrier');
  });

  await t.test('Handbook, wlan0: wireless by its media, associated, header without metric', () => {
    const [wlan0] = devicesFrom('ifconfig-handbook-wlan0.txt');
    assert.ok(wlan0);
    assert.equal(wlan0.wireless, true);
    assert.equal(wlan0.status, 'associated');
    assert.deepEqual(wlan0.ipv4, { address: '192.168.1.100', netmask: '255.255.255.0' });
    assert.equal(wlan0.mac, '00:11:95:d5:43:62');
  });

  await t.test('SaltStack fixture: first of two addresses, point-to-point, interfaces without details', () => {
    const devices = devicesFrom('ifconfig-salt.txt');
    assert.deepEqual(
      devices.map((d) => d.name),
      ['em0', 'em1', 'plip0', 'lo0', 'tun0'],
    );
    assert.deepEqual(byName(devices, 'em0').ipv4, { address: '10.10.10.250', netmask: '255.255.255.224' });
    assert.equal(byName(devices, 'em1').status, 'no carrier');
    assert.equal(byName(devices, 'em1').up, false);
    assert.deepEqual(
      { ...byName(devices, 'plip0') },
      {
        name: 'plip0',
        mac: '',
        description: 'plip',
        ipv4: null,
        ipv6: null,
        up: false,
        dhcp: false,
        wireless: false,
        status: 'no carrier',
      },
    );
    assert.deepEqual(byName(devices, 'tun0').ipv4, { address: '10.12.0.1', netmask: '255.255.255.255' });
    assert.equal(byName(devices, 'tun0').description, 'IP tunnel (tun)');
    assert.equal(byName(devices, 'tun0').status, 'active');
    assert.equal(byName(devices, 'lo0').ipv6, 'fe80::1%lo0');
  });

  await t.test('netmasks, rc.conf names and DHCP words', () => {
    assert.equal(dottedNetmask('0xffffff00'), '255.255.255.0');
    assert.equal(dottedNetmask('0xffffffe0'), '255.255.255.224');
    assert.equal(dottedNetmask('255.255.0.0'), '255.255.0.0');
    assert.equal(dottedNetmask('bogus'), null);
    const cidr = parseIfconfig('em0: flags=8843<UP> metric 0 mtu 1500\n\tinet 10.0.0.1/22 broadcast 10.0.3.255\n');
    assert.deepEqual(cidr[0]?.inet, [{ address: '10.0.0.1', netmask: '255.255.252.0' }], 'ifconfig -f inet:cidr');
    assert.equal(rcVar('em0.100'), 'ifconfig_em0_100');
    for (const yes of ['DHCP', 'WPA DHCP', 'WPA SYNCDHCP', 'syncdhcp', 'NOSYNCDHCP mtu 9000']) assert.equal(isDhcpConfig(yes), true, yes);
    for (const no of ['inet 192.168.1.150 netmask 255.255.255.0', 'up', '', undefined, 'NODHCPX']) assert.equal(isDhcpConfig(no), false, String(no));
    assert.deepEqual(
      [...parseNameValue(fixture('sysrc-laptop.txt'))],
      [
        ['ifconfig_em0', 'DHCP'],
        ['ifconfig_wlan0', 'WPA SYNCDHCP'],
      ],
    );
  });
});

test('FreeBSD network list-devices through the agent', async (t) => {
  await t.test('a laptop: descriptions from the drivers (the radio for wlan0), DHCP from rc.conf', async (t) => {
    const runner = new RecordingRunner([
      { match: ['ifconfig', '-a'], stdout: fixture('ifconfig-constructed-laptop.txt') },
      { match: (a) => a[0] === 'sysctl', stdout: fixture('sysctl-desc-laptop.txt') },
      { match: (a) => a[0] === 'sysrc', stdout: fixture('sysrc-laptop.txt') },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const devices = await listAs(agent);
    assert.deepEqual(devices, {
      em0: {
        MAC: '00:1f:16:0f:27:5a',
        description: 'Intel(R) PRO/1000 Network Connection 7.6.1-k',
        ipv4: '192.168.1.23',
        ipv6: 'fe80::21f:16ff:fe0f:275a%em0',
        is_active: 'true',
        is_dhcp: 'true',
        is_wireless: 'false',
        netmask: '255.255.255.0',
        status: 'active',
      },
      lo0: {
        MAC: '',
        description: 'Loopback interface',
        ipv4: '127.0.0.1',
        ipv6: '::1',
        is_active: 'true',
        is_dhcp: 'false',
        is_wireless: 'false',
        netmask: '255.0.0.0',
        status: 'active',
      },
      wlan0: {
        MAC: '34:f3:9a:12:ab:cd',
        description: 'Intel(R) Dual Band Wireless AC 8265',
        ipv4: '0.0.0.0',
        ipv6: '',
        is_active: 'true',
        is_dhcp: 'true',
        is_wireless: 'true',
        netmask: '0.0.0.0',
        status: 'no carrier',
      },
    });
    t.assert.snapshot(runner.calls);
  });

  await t.test('an older wlan without a parent line: the radio comes from net.wlan.N.%parent', async (t) => {
    const runner = new RecordingRunner([
      { match: ['ifconfig', '-a'], stdout: fixture('ifconfig-handbook-wlan0.txt') },
      { match: ['sysctl', '-i', 'net.wlan.0.%parent'], stdout: fixture('sysctl-wlan-parent.txt') },
      { match: ['sysctl', '-i', 'dev.iwn.0.%desc'], stdout: fixture('sysctl-desc-iwn.txt') },
      { match: ['sysrc', '-i', 'ifconfig_wlan0'], stdout: 'ifconfig_wlan0: DHCP\n' },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const wlan0 = (await listAs(agent))['wlan0'];
    assert.equal(wlan0?.['description'], 'Intel Centrino Advanced-N 6205');
    assert.equal(wlan0?.['is_dhcp'], 'true');
    assert.equal(wlan0?.['status'], 'associated');
    t.assert.snapshot(runner.calls);
  });

  await t.test('a failing ifconfig is a host error, not an empty list', async () => {
    const runner = new RecordingRunner([{ match: ['ifconfig', '-a'], code: 1, stderr: 'ifconfig: socket: Protocol not supported\n' }]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: [], method: 'password', connectionId: 'fabricated' });
    const client = await TestClient.connect(agent.url);
    t.after(() => client.close());
    await client.request('rpc', 'auth_token', { token: session.token });
    const reply = await client.call('network', 'list-devices');
    assert.equal((reply.args as { code: number }).code, 500);
    assert.match((reply.args as { message: string }).message, /ifconfig -a failed: ifconfig: socket/);
  });
});
