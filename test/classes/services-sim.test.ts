/**
 * `admin/services` on the simulated FreeBSD host, through a real agent: the service table, every
 * action with its effect read back through the agent, persistence across a restart, access rules
 * (operator reads, only full access changes) and the 400s that leave the host unchanged.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { rest, SIM_PASSWORD, startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';
import { expectError, listServices, ok } from './services-support.ts';

async function agentFor(t: TestContext): Promise<TestAgent> {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  return agent;
}

async function signIn(t: TestContext, agent: TestAgent, user: string): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  await client.login(user);
  return client;
}

test('list_services shows the rc.d scripts of a FreeBSD server with their real descriptions and tags', async (t) => {
  const admin = await signIn(t, await agentFor(t), 'admin');
  const list = await listServices(admin);
  assert.deepEqual(list.sshd, {
    description: 'Secure Shell Daemon',
    is_enabled: 'true',
    is_running: 'true',
    name: 'sshd',
    path: '/etc/rc.d/sshd',
    tag: 'sshd_enable',
  });
  // The tag is the script's rcvar: ipfw is switched by firewall_enable (the original wrote ipfw_enable).
  assert.equal(list.ipfw?.tag, 'firewall_enable');
  assert.equal(list.ipfw?.is_enabled, 'false');
  assert.equal(list.nginx?.path, '/usr/local/etc/rc.d/nginx');
  assert.equal(list.inetd?.description, 'Internet "super-server"');
  assert.deepEqual(Object.keys(list), Object.keys(list).sort(), 'keyed in name order');
  for (const [key, record] of Object.entries(list)) assert.equal(record.name, key);
});

test('stop, start and restart change is_running and reply with the services handled', async (t) => {
  const admin = await signIn(t, await agentFor(t), 'admin');
  assert.deepEqual(await ok(admin, 'stop', { services: ['sshd', 'cron'] }), { services_stopped: ['sshd', 'cron'] });
  let list = await listServices(admin);
  assert.equal(list.sshd?.is_running, 'false');
  assert.equal(list.cron?.is_running, 'false');
  assert.equal(list.sshd?.is_enabled, 'true', 'stopping does not touch the boot setting');

  // One name as a plain string is accepted, as the original did.
  assert.deepEqual(await ok(admin, 'start', { services: 'sshd' }), { services_started: ['sshd'] });
  list = await listServices(admin);
  assert.equal(list.sshd?.is_running, 'true');
  assert.equal(list.cron?.is_running, 'false');

  // Restarting a stopped service leaves it running; a service already running may be started again.
  assert.deepEqual(await ok(admin, 'restart', { services: ['cron', 'sshd'] }), { services_restarted: ['cron', 'sshd'] });
  assert.deepEqual(await ok(admin, 'start', { services: ['sshd', 'sshd'] }), { services_started: ['sshd'] }, 'each service once');
  list = await listServices(admin);
  assert.equal(list.cron?.is_running, 'true');
  assert.equal(list.sshd?.is_running, 'true');
});

test('enable and disable change is_enabled only, and every change survives a restart of the agent', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await signIn(t, agent, 'admin');
  assert.deepEqual(await ok(admin, 'enable', { services: ['pf', 'powerd'] }), { services_enabled: ['pf', 'powerd'] });
  assert.deepEqual(await ok(admin, 'disable', { services: ['nginx'] }), { services_disabled: ['nginx'] });
  assert.deepEqual(await ok(admin, 'stop', { services: ['postgresql'] }), { services_stopped: ['postgresql'] });
  // Already in the asked state: listed as handled.
  assert.deepEqual(await ok(admin, 'enable', { services: ['sshd'] }), { services_enabled: ['sshd'] });

  let list = await listServices(admin);
  assert.equal(list.pf?.is_enabled, 'true');
  assert.equal(list.pf?.is_running, 'false', 'enabling does not start it');
  assert.equal(list.nginx?.is_enabled, 'false');
  assert.equal(list.nginx?.is_running, 'true', 'disabling does not stop it');

  admin.close();
  agent = await agent.restart();
  admin = await signIn(t, agent, 'admin');
  list = await listServices(admin);
  assert.equal(list.pf?.is_enabled, 'true');
  assert.equal(list.powerd?.is_enabled, 'true');
  assert.equal(list.nginx?.is_enabled, 'false');
  assert.equal(list.postgresql?.is_running, 'false');
  assert.equal(list.sshd?.is_enabled, 'true');
});

test('an unknown service refuses the whole request with a 400 naming it, and nothing changes', async (t) => {
  const admin = await signIn(t, await agentFor(t), 'admin');
  const before = await listServices(admin);
  for (const action of ['start', 'stop', 'restart', 'enable', 'disable']) {
    const err = expectError(await admin.call('services', action, { services: ['sshd', 'apache24', 'cron', 'nosuch'] }), 400);
    assert.match(err.message, /apache24, nosuch/);
    assert.deepEqual(
      err.errors?.map((e) => e.field),
      ['services.1', 'services.3'],
    );
  }
  assert.deepEqual(await listServices(admin), before);
});

test('malformed requests are 400s naming the field', async (t) => {
  const admin = await signIn(t, await agentFor(t), 'admin');
  const before = await listServices(admin);
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['start', {}, 'services'],
    ['stop', { services: [] }, 'services'],
    ['enable', { services: [42] }, 'services'],
    ['disable', { services: 'sshd', extra: 'x' }, 'extra'],
    ['restart', { services: [''] }, 'services'],
    ['list_services', { services: ['sshd'] }, 'services'],
  ];
  for (const [action, args, field] of cases) {
    const err = expectError(await admin.call('services', action, args), 400);
    assert.ok(
      err.errors?.some((e) => e.field.startsWith(field)),
      `${action} ${JSON.stringify(args)}: ${JSON.stringify(err)}`,
    );
  }
  assert.deepEqual(await listServices(admin), before);
});

test('an operator may list services but not change them (403), and nothing changes', async (t) => {
  const agent = await agentFor(t);
  const operator = await signIn(t, agent, 'operator');
  const before = await listServices(operator);
  assert.equal(before.sshd?.is_running, 'true');
  for (const action of ['start', 'stop', 'restart', 'enable', 'disable']) {
    const err = expectError(await operator.call('services', action, { services: ['sshd'] }), 403);
    assert.match(err.message, /admin\/services/);
  }
  const query = await operator.request('rpc', 'query', {});
  assert.equal((query.args as Record<string, string>)['admin/services'], 'read');
  assert.deepEqual(await listServices(operator), before);
});

test('REST calls reach the same class', async (t) => {
  const agent = await agentFor(t);
  const stopped = await rest(agent, '/admin/services', { action: 'stop', services: ['ntpd'] }, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
  assert.deepEqual(stopped.body.args, { services_stopped: ['ntpd'] });
  const listed = await rest(agent, '/admin/services', { action: 'list_services' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal((listed.body.args as { services: Record<string, { is_running: string }> }).services.ntpd?.is_running, 'false');
  const refused = await rest(agent, '/admin/services', { action: 'start', services: ['ntpd'] }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(refused.status, 403);
});
