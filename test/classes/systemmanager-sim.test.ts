/**
 * systemmanager on the simulated FreeBSD host: every action through a real agent over WebSocket,
 * state changes read back, persistence across a restart, access rules and refused input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestAgent, TestClient, type TestAgent } from '../helpers/agent.ts';
import { error, ok } from './systemmanager-helpers.ts';

const SM = 'systemmanager';

async function setup(t: { after: (fn: () => unknown) => void }) {
  let agent: TestAgent = await startTestAgent();
  const clients: TestClient[] = [];
  t.after(async () => {
    for (const c of clients) c.close();
    await agent.dispose();
  });
  const connect = async (user: string) => {
    const c = await TestClient.connect(agent.url);
    clients.push(c);
    await c.login(user);
    return c;
  };
  return {
    get agent() {
      return agent;
    },
    admin: await connect('admin'),
    operator: await connect('operator'),
    connect,
    async restart() {
      agent = await agent.restart();
      return { admin: await connect('admin'), operator: await connect('operator') };
    },
  };
}

const NUMBER_STRING = /^\d+$/;

test('memorystats: five MiB figures that add up to the 8 GiB machine', async (t) => {
  const { operator } = await setup(t);
  const { memorystats } = ok<{ memorystats: Record<string, string> }>(await operator.call(SM, 'memorystats'));
  assert.deepEqual(Object.keys(memorystats).sort(), ['active', 'cache', 'free', 'inactive', 'wired']);
  for (const v of Object.values(memorystats)) assert.match(v, NUMBER_STRING);
  const sum = Object.values(memorystats).reduce((a, v) => a + Number(v), 0);
  assert.equal(sum, 8192);
});

test('cpupercentage: cpu0..cpu3 and busytotal, whole percentages', async (t) => {
  const { operator } = await setup(t);
  const { cpupercentage } = ok<{ cpupercentage: Record<string, unknown> }>(await operator.call(SM, 'cpupercentage'));
  assert.deepEqual(Object.keys(cpupercentage).sort(), ['busytotal', 'cpu0', 'cpu1', 'cpu2', 'cpu3']);
  assert.match(cpupercentage.busytotal as string, NUMBER_STRING);
  for (const n of [0, 1, 2, 3]) {
    const busy = Number((cpupercentage[`cpu${n}`] as { busy: string }).busy);
    assert.ok(busy >= 0 && busy <= 100);
  }
});

test('cputemps: one reading per CPU in the `45.0C` form', async (t) => {
  const { operator } = await setup(t);
  const { cputemps } = ok<{ cputemps: Record<string, string> }>(await operator.call(SM, 'cputemps'));
  assert.deepEqual(Object.keys(cputemps).sort(), ['cpu0', 'cpu1', 'cpu2', 'cpu3']);
  for (const v of Object.values(cputemps)) assert.match(v, /^\d{2}\.\dC$/);
});

test('batteryinfo: a laptop battery with a level, a status and seconds left', async (t) => {
  const { operator } = await setup(t);
  const { batteryinfo } = ok<{ batteryinfo: Record<string, string> }>(await operator.call(SM, 'batteryinfo'));
  assert.equal(batteryinfo.battery, 'true');
  assert.ok(Number(batteryinfo.level) >= 20 && Number(batteryinfo.level) <= 100);
  assert.ok(['offline', 'charging'].includes(batteryinfo.status as string));
  assert.match(batteryinfo.timeleft as string, /^(-1|\d+)$/);
});

test('externalmounts: the USB stick keyed by its device', async (t) => {
  const { operator } = await setup(t);
  const reply = ok(await operator.call(SM, 'externalmounts'));
  assert.deepEqual(reply, { externalmounts: { '/dev/da0s1': { filesystem: 'msdosfs', path: '/media/KINGSTON', type: 'USB' } } });
});

test('systemmanager (and its alias systeminfo): FreeBSD 14.1 amd64 with totalmem a number', async (t) => {
  const { operator } = await setup(t);
  for (const action of ['systemmanager', 'systeminfo']) {
    const { systemmanager: info } = ok<{ systemmanager: Record<string, unknown> }>(await operator.call(SM, action));
    assert.equal(info.arch, 'amd64');
    assert.equal(info.cpucores, '4');
    assert.equal(info.hostname, 'simhost');
    assert.equal(info.kernelident, 'GENERIC');
    assert.match(info.systemversion as string, /^14\.1-RELEASE/);
    assert.equal(info.totalmem, 8192);
    assert.equal(info.uptime, 'up 2 days 5:09');
  }
});

test('procinfo lists the daemons; killproc ends one, for good, until a reboot', async (t) => {
  const ctx = await setup(t);
  const before = ok<{ procinfo: Record<string, Record<string, string>> }>(await ctx.operator.call(SM, 'procinfo')).procinfo;
  assert.equal(before['1']?.command, '/sbin/init');
  assert.equal(before['785']?.command, '/usr/sbin/sshd');
  assert.deepEqual(Object.keys(before['785'] ?? {}).sort(), ['command', 'cpu', 'nice', 'pri', 'res', 'size', 'state', 'thr', 'time', 'username', 'wcpu']);

  // Operators may look but not kill.
  error(await ctx.operator.call(SM, 'killproc', { pid: '785', signal: 'TERM' }), 403);

  const kill = ok(await ctx.admin.call(SM, 'killproc', { pid: 785, signal: 'TERM' }));
  assert.deepEqual(kill, { killproc: { action: 'killproc', pid: '785', signal: 'TERM' } });
  const after = ok<{ procinfo: Record<string, unknown> }>(await ctx.admin.call(SM, 'procinfo')).procinfo;
  assert.equal(after['785'], undefined);
  assert.ok(after['812'], 'only that process went');

  const again = await ctx.restart();
  const restarted = ok<{ procinfo: Record<string, unknown> }>(await again.admin.call(SM, 'procinfo')).procinfo;
  assert.equal(restarted['785'], undefined, 'the kill survives an agent restart');

  assert.deepEqual(ok(await again.admin.call(SM, 'reboot')), { reboot: { response: 'true' } });
  const rebooted = ok<{ procinfo: Record<string, unknown> }>(await again.admin.call(SM, 'procinfo')).procinfo;
  assert.ok(rebooted['785'], 'sshd is back after the reboot');
  const info = ok<{ systemmanager: { uptime: string } }>(await again.admin.call(SM, 'systemmanager')).systemmanager;
  assert.match(info.uptime, /^up \d+ secs$/);
});

test('killproc refuses init, the agent itself, missing processes and bad input, changing nothing', async (t) => {
  const { admin } = await setup(t);
  const table = () => admin.call(SM, 'procinfo').then((r) => Object.keys(ok<{ procinfo: object }>(r).procinfo).sort());
  const before = await table();
  error(await admin.call(SM, 'killproc', { pid: '1', signal: 'KILL' }), 400, 'pid');
  error(await admin.call(SM, 'killproc', { pid: '1337', signal: 'KILL' }), 400, 'pid');
  const missing = error(await admin.call(SM, 'killproc', { pid: '99999', signal: 'TERM' }), 400, 'pid');
  assert.match(missing.message, /99999/);
  error(await admin.call(SM, 'killproc', { pid: '785', signal: 'HUP' }), 400, 'signal');
  error(await admin.call(SM, 'killproc', { pid: '0', signal: 'TERM' }), 400, 'pid');
  error(await admin.call(SM, 'killproc', { pid: '-5', signal: 'TERM' }), 400, 'pid');
  error(await admin.call(SM, 'killproc', { signal: 'TERM' }), 400, 'pid');
  error(await admin.call(SM, 'killproc', { pid: '785' }), 400, 'signal');
  error(await admin.call(SM, 'killproc', { pid: '785', signal: 'TERM', extra: 1 }), 400);
  assert.deepEqual(await table(), before);
});

test('sysctllist shows writable sysctls only; setsysctl changes one and it persists', async (t) => {
  const ctx = await setup(t);
  const { sysctllist } = ok<{ sysctllist: Record<string, string> }>(await ctx.operator.call(SM, 'sysctllist'));
  assert.equal(sysctllist['net.inet.ip.forwarding'], '0');
  assert.equal(sysctllist['kern.ostype'], undefined, 'read-only sysctls are not configurable');

  error(await ctx.operator.call(SM, 'setsysctl', { sysctl: 'net.inet.ip.forwarding', value: '1' }), 403);
  const set = ok(await ctx.admin.call(SM, 'setsysctl', { sysctl: 'net.inet.ip.forwarding', value: 1 }));
  assert.deepEqual(set, { setsysctl: { response: 'net.inet.ip.forwarding: 0 -> 1', sysctl: 'net.inet.ip.forwarding', value: '1' } });
  const str = ok(await ctx.admin.call(SM, 'setsysctl', { sysctl: 'kern.corefile', value: '/var/crash/%N.%P.core' }));
  assert.deepEqual(str, {
    setsysctl: { response: 'kern.corefile: %N.core -> /var/crash/%N.%P.core', sysctl: 'kern.corefile', value: '/var/crash/%N.%P.core' },
  });

  const again = await ctx.restart();
  const list = ok<{ sysctllist: Record<string, string> }>(await again.operator.call(SM, 'sysctllist')).sysctllist;
  assert.equal(list['net.inet.ip.forwarding'], '1');
  assert.equal(list['kern.corefile'], '/var/crash/%N.%P.core');
});

test('setsysctl refuses unknown, read-only and wrongly typed values before changing anything', async (t) => {
  const { admin } = await setup(t);
  const list = async () => ok<{ sysctllist: Record<string, string> }>(await admin.call(SM, 'sysctllist')).sysctllist;
  const before = await list();
  error(await admin.call(SM, 'setsysctl', { sysctl: 'kern.nosuch', value: '1' }), 400, 'sysctl');
  error(await admin.call(SM, 'setsysctl', { sysctl: 'kern.ostype', value: 'Linux' }), 400, 'sysctl');
  error(await admin.call(SM, 'setsysctl', { sysctl: 'kern.maxfiles', value: 'lots' }), 400, 'value');
  error(await admin.call(SM, 'setsysctl', { sysctl: 'nodots', value: '1' }), 400, 'sysctl');
  error(await admin.call(SM, 'setsysctl', { sysctl: 'kern.maxfiles' }), 400, 'value');
  error(await admin.call(SM, 'setsysctl', { sysctl: 'kern.maxfiles', value: 'a'.repeat(1025) }), 400, 'value');
  assert.deepEqual(await list(), before);
});

test('halt and reboot need full access and answer {response: "true"}; the sim host records them', async (t) => {
  const ctx = await setup(t);
  error(await ctx.operator.call(SM, 'halt'), 403);
  error(await ctx.operator.call(SM, 'reboot'), 403);
  assert.deepEqual(ok(await ctx.admin.call(SM, 'halt')), { halt: { response: 'true' } });
  const store = (
    ctx.agent.services.platform as unknown as {
      store: { slice: (n: string, s: () => unknown) => { get(): { power: string; lastPowerAction: { action: string } } } };
    }
  ).store;
  const state = store.slice('systemmanager', () => ({})).get();
  assert.equal(state.power, 'halted');
  assert.equal(state.lastPowerAction.action, 'halt');
  // The agent is still there to answer (the sim never stops it).
  ok(await ctx.admin.call(SM, 'memorystats'));
  assert.deepEqual(ok(await ctx.admin.call(SM, 'reboot')), { reboot: { response: 'true' } });
  assert.equal(store.slice('systemmanager', () => ({})).get().power, 'running');
});

test('the read actions take no arguments, and query lists the class for both users', async (t) => {
  const { admin, operator } = await setup(t);
  error(await operator.call(SM, 'memorystats', { verbose: true }), 400);
  const q = ok<Record<string, string>>(await operator.request('rpc', 'query', {}));
  assert.equal(q['admin/systemmanager'], 'read');
  const qa = ok<Record<string, string>>(await admin.request('rpc', 'query', {}));
  assert.equal(qa['admin/systemmanager'], 'read/write');
});
