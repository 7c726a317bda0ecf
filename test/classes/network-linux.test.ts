/**
 * `network list-devices` on the REAL Linux platform inside a sandbox with its own network
 * namespace: veth pairs and a bridge made with `ip`, one address with a lease lifetime (what a DHCP
 * client sets), one pair with its peer down (no carrier). sysfs is mounted inside the sandbox so the
 * agent reads that namespace's view; wireless and driver facts, which this VM has no hardware for,
 * come from a fake sysfs tree.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';

const can = canSandbox();
type Devices = Record<string, Record<string, string>>;

async function listAs(agent: TestAgent, user: string, level: 'full' | 'limited'): Promise<Devices> {
  const session = agent.services.sessions.create({ user, level, groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  try {
    assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
    const reply = await client.call('network', 'list-devices');
    assert.equal(reply.name, 'response', JSON.stringify(reply.args));
    return reply.args as Devices;
  } finally {
    client.close();
  }
}

async function sh(sandbox: LinuxSandbox, ...argv: string[]): Promise<string> {
  const r = await sandbox.runner.run(argv);
  assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

const macOf = async (sandbox: LinuxSandbox, dev: string) =>
  (JSON.parse(await sh(sandbox, 'ip', '-j', 'link', 'show', 'dev', dev)) as Array<{ address: string }>)[0]?.address;

test('network list-devices on the real Linux platform', { skip: can.ok ? false : can.reason }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  await sh(sandbox, 'ip', 'link', 'add', 'va', 'type', 'veth', 'peer', 'name', 'vb');
  await sh(sandbox, 'ip', 'addr', 'add', '10.1.0.5/24', 'dev', 'va', 'valid_lft', '3600', 'preferred_lft', '3600');
  await sh(sandbox, 'ip', 'addr', 'add', '10.2.0.5/16', 'dev', 'va');
  await sh(sandbox, 'ip', '-6', 'addr', 'add', '2001:db8::5/64', 'dev', 'va', 'nodad');
  await sh(sandbox, 'ip', 'addr', 'add', '10.1.0.6/24', 'dev', 'vb');
  await sh(sandbox, 'ip', 'link', 'set', 'va', 'up');
  await sh(sandbox, 'ip', 'link', 'set', 'vb', 'up');
  // A pair whose peer stays down: wa is up but has no carrier.
  await sh(sandbox, 'ip', 'link', 'add', 'wa', 'type', 'veth', 'peer', 'name', 'wb');
  await sh(sandbox, 'ip', 'addr', 'add', '192.168.77.1/28', 'dev', 'wa');
  await sh(sandbox, 'ip', 'link', 'set', 'wa', 'up');
  await sh(sandbox, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
  await sh(sandbox, 'mkdir', '-p', '/run/sysfs');
  await sh(sandbox, 'mount', '-t', 'sysfs', 'sysfs', '/run/sysfs');
  const sandboxSys = `/proc/${sandbox.pid}/root/run/sysfs`;
  // The agent reads this namespace's own sysfs view, not the host's.
  assert.ok(existsSync(join(sandboxSys, 'class/net/va')) && !existsSync('/sys/class/net/va'));

  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }), sysRoot: sandboxSys });
  t.after(() => agent.dispose());

  await t.test('every interface of the namespace, with the values ip and sysfs report', async () => {
    const devices = await listAs(agent, 'root', 'full');
    assert.deepEqual(Object.keys(devices).sort(), ['br0', 'lo', 'va', 'vb', 'wa', 'wb']);
    assert.deepEqual(devices['va'], {
      MAC: await macOf(sandbox, 'va'),
      description: 'Virtual Ethernet pair',
      ipv4: '10.1.0.5',
      ipv6: '2001:db8::5',
      is_active: 'true',
      is_dhcp: 'true',
      is_wireless: 'false',
      netmask: '255.255.255.0',
      status: 'active',
    });
    assert.equal(devices['vb']?.['is_dhcp'], 'false', 'a permanent address is not DHCP');
    assert.equal(devices['vb']?.['status'], 'active');
    assert.equal(devices['wa']?.['status'], 'no carrier');
    assert.equal(devices['wa']?.['is_active'], 'true', 'up, but nothing on the other end');
    assert.equal(devices['wa']?.['netmask'], '255.255.255.240');
    assert.deepEqual(
      { ...devices['wb'], MAC: 'x' },
      {
        MAC: 'x',
        description: 'Virtual Ethernet pair',
        ipv4: '0.0.0.0',
        ipv6: '',
        is_active: 'false',
        is_dhcp: 'false',
        is_wireless: 'false',
        netmask: '0.0.0.0',
        status: 'no carrier',
      },
    );
    assert.equal(devices['br0']?.['description'], 'Ethernet bridge');
    assert.deepEqual(devices['lo'], {
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
  });

  await t.test('changes on the host show at once; a link-local address carries its interface', async () => {
    await sh(sandbox, 'ip', 'link', 'set', 'wb', 'up');
    await sh(sandbox, 'ip', 'addr', 'flush', 'dev', 'va');
    await sh(sandbox, 'ip', '-6', 'addr', 'add', 'fe80::1234/64', 'dev', 'va', 'nodad');
    const devices = await listAs(agent, 'operator', 'limited');
    assert.equal(devices['wa']?.['status'], 'active');
    assert.equal(devices['va']?.['ipv4'], '0.0.0.0');
    assert.equal(devices['va']?.['is_dhcp'], 'false');
    assert.match(devices['va']?.['ipv6'] ?? '', /^fe80::[0-9a-f:]+%va$/);
  });

  await t.test('wireless and driver facts from sysfs (a fake tree: this VM has no such hardware)', async () => {
    const fake = mkdtempSync(join(tmpdir(), 'hostadm-fake-sys-'));
    t.after(() => rmSync(fake, { recursive: true, force: true }));
    mkdirSync(join(fake, 'class/net/va/wireless'), { recursive: true });
    mkdirSync(join(fake, 'class/net/va/device'), { recursive: true });
    writeFileSync(join(fake, 'class/net/va/device/uevent'), 'DRIVER=iwlwifi\nPCI_CLASS=28000\n');
    mkdirSync(join(fake, 'class/net/vb/device'), { recursive: true });
    writeFileSync(join(fake, 'class/net/vb/device/uevent'), 'DRIVER=e1000e\n');
    const other = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }), sysRoot: fake });
    t.after(() => other.dispose());
    const devices = await listAs(other, 'root', 'full');
    assert.equal(devices['va']?.['is_wireless'], 'true');
    assert.equal(devices['va']?.['status'], 'associated');
    assert.equal(devices['va']?.['description'], 'iwlwifi');
    assert.equal(devices['vb']?.['description'], 'e1000e');
    assert.equal(devices['vb']?.['is_wireless'], 'false');
  });
});
