/**
 * `admin/firewall` on the simulated FreeBSD host, over a real WebSocket (and REST for the operator):
 * every action in the spec's shapes, its effect read back, the ipfw service of `services` agreeing
 * with the firewall, persistence across a restart, access rules, and bad ports refused with nothing
 * changed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, rest, SIM_PASSWORD, startTestAgent } from '../helpers/agent.ts';
import { fw, fwError, SUCCESS } from './firewall-support.ts';
import { listServices } from './services-support.ts';

test('known_ports: the services database keyed by <port>/<protocol>, records in the spec shape', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const known = (await fw(admin, 'known_ports')) as Record<string, { description: string; name: string; port: string }>;
  assert.deepEqual(known['22/tcp'], { description: 'Secure Shell Login', name: 'ssh', port: '22/tcp' });
  assert.deepEqual(known['80/tcp'], { description: 'World Wide Web HTTP', name: 'http', port: '80/tcp' });
  assert.deepEqual(known['443/udp'], { description: '', name: 'https', port: '443/udp' });
  assert.deepEqual(known['5432/tcp']?.name, 'postgresql');
  for (const [key, record] of Object.entries(known)) assert.equal(record.port, key);
});

test('open, close, list_open: ports each once in port order, one string accepted, closing a closed port is fine', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['22/tcp'] });
  assert.deepEqual(await fw(admin, 'open', { ports: ['443/tcp', '80/tcp', '53/udp', '80/tcp', '22/tcp'] }), SUCCESS);
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['22/tcp', '53/udp', '80/tcp', '443/tcp'] });
  assert.deepEqual(await fw(admin, 'open', { ports: '53/tcp' }), SUCCESS);
  assert.deepEqual(await fw(admin, 'close', { ports: ['80/tcp', '53/udp', '8080/tcp'] }), SUCCESS);
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['22/tcp', '53/tcp', '443/tcp'] });
});

test('start, stop, restart, enable, disable: status follows, and so does the ipfw service', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'false', is_running: 'false' });
  assert.deepEqual(await fw(admin, 'start'), SUCCESS);
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'false', is_running: 'true' });
  assert.deepEqual(await fw(admin, 'enable'), SUCCESS);
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'true', is_running: 'true' });
  let ipfw = (await listServices(admin)).ipfw;
  assert.equal(ipfw?.is_running, 'true');
  assert.equal(ipfw?.is_enabled, 'true');

  assert.deepEqual(await fw(admin, 'stop'), SUCCESS);
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'true', is_running: 'false' });
  assert.deepEqual(await fw(admin, 'restart'), SUCCESS);
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'true', is_running: 'true' });
  assert.deepEqual(await fw(admin, 'disable'), SUCCESS);
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'false', is_running: 'true' });

  // The other way round: the services class stopping ipfw stops the firewall.
  const reply = await admin.call('services', 'stop', { services: ['ipfw'] });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'false', is_running: 'false' });
  ipfw = (await listServices(admin)).ipfw;
  assert.equal(ipfw?.is_running, 'false');
});

test('reset-defaults is the spec error on this FreeBSD host (501 with the reason), and changes nothing', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  await fw(admin, 'open', { ports: ['80/tcp'] });
  const err = await fwError(admin, 'reset-defaults', {}, 501);
  assert.match(err.message, /no firewall reset script/);
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['22/tcp', '80/tcp'] });
});

test('open ports and state survive a restart of the agent', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  await fw(admin, 'open', { ports: ['8080/tcp', '514/udp'] });
  await fw(admin, 'close', { ports: ['22/tcp'] });
  await fw(admin, 'start');
  await fw(admin, 'enable');
  admin.close();
  agent = await agent.restart();
  admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['514/udp', '8080/tcp'] });
  assert.deepEqual(await fw(admin, 'status'), { is_enabled: 'true', is_running: 'true' });
});

test('bad ports are a 400 naming the field, and nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  for (const ports of [['0/tcp'], ['65536/tcp'], ['22/icmp'], ['022/tcp'], ['22'], ['80/tcp', '22/tcp; rm -rf /'], [], '', ['-1/udp']]) {
    const err = await fwError(admin, 'open', { ports }, 400);
    assert.match(err.message, /ports/, JSON.stringify(ports));
  }
  await fwError(admin, 'close', {}, 400);
  await fwError(admin, 'start', { ports: ['22/tcp'] }, 400);
  assert.deepEqual(await fw(admin, 'list_open'), { openports: ['22/tcp'] });
});

test('an operator reads (WebSocket and REST) but cannot change the firewall (403), and nothing changes', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  assert.deepEqual(await fw(operator, 'list_open'), { openports: ['22/tcp'] });
  assert.deepEqual(await fw(operator, 'status'), { is_enabled: 'false', is_running: 'false' });
  for (const [action, args] of [
    ['open', { ports: ['80/tcp'] }],
    ['close', { ports: ['22/tcp'] }],
    ['start', {}],
    ['stop', {}],
    ['restart', {}],
    ['enable', {}],
    ['disable', {}],
    ['reset-defaults', {}],
  ] as const) {
    await fwError(operator, action, args, 403);
  }
  const listed = await rest(agent, '/admin/firewall', { action: 'list_open' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(listed.status, 200);
  const refused = await rest(agent, '/admin/firewall', { action: 'open', ports: ['80/tcp'] }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(refused.status, 403);
  assert.deepEqual(await fw(operator, 'list_open'), { openports: ['22/tcp'] });
  assert.deepEqual(await fw(operator, 'status'), { is_enabled: 'false', is_running: 'false' });
});
