/**
 * `admin/vm` on the simulated FreeBSD host, through a real agent over its WebSocket: all 19 actions in
 * the spec's shapes, the state rules (a running guest is not started again, deleted or resized; a
 * disk only grows; disk0 stays), fetchiso's paced progress events, bad names, sizes and URLs refused
 * naming the field with nothing changed, persistence across a restart, and read-only access for
 * limited users. Nothing here touches the machine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { fetchIso, vmOk, vmRefused } from './vm-support.ts';

const SEEDED_ISO = 'FreeBSD-14.2-RELEASE-amd64-disc1.iso';

test('the seeded host in the spec shapes: listvms, getprops, listdisks, listisos, issetup, version', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await vmOk(admin, 'listvms'), {
    listvms: {
      fbsd: { description: '2026-01-12T09:30:00.000Z', rcboot: 'YES', running: 'YES', vmm: 'YES' },
      debian: { description: '2026-01-12T09:30:00.000Z', rcboot: 'NO', running: 'NO', vmm: 'NO' },
    },
  });
  const props = ((await vmOk(admin, 'getprops', { name: 'debian' })).getprops as Record<string, Record<string, string>>).debian;
  assert.deepEqual(Object.keys(props ?? {}).sort(), [
    'autogrub',
    'bargs',
    'boot',
    'con',
    'cpu',
    'description',
    'install',
    'loader',
    'name',
    'os',
    'persist',
    'ram',
    'size',
    'tap',
  ]);
  assert.equal(props?.ram, '2G');
  assert.equal(props?.size, '16G');
  assert.deepEqual(await vmOk(admin, 'listdisks', { name: 'debian' }), { listdisks: { disk0: '16G', disk1: '8G' } });
  assert.deepEqual(await vmOk(admin, 'listisos'), { listisos: [SEEDED_ISO] });
  assert.deepEqual(await vmOk(admin, 'issetup'), { issetup: { setup: 'true' } });
  assert.match(((await vmOk(admin, 'version')).version as { version: string }).version, /^vm-bhyve: .* v1\.6\.2/);
});

test('a guest from create to delete, with the state rules, and everything survives a restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await vmOk(admin, 'setup', { nic: 'igb0', pool: 'zroot' }), { setup: { nic: 'igb0', pool: 'zroot' } });
  assert.deepEqual(await vmOk(admin, 'create', { name: 'web1', size: '10G' }), { create: { name: 'web1', size: '10G' } });
  await vmRefused(admin, 'create', { name: 'web1', size: '10G' }, 409, 'name');
  assert.deepEqual(await vmOk(admin, 'setprop', { name: 'web1', cpu: '4', ram: '4G', description: 'web-server' }), {
    setprop: { web1: { cpu: '4', ram: '4G', description: 'web-server' } },
  });
  await vmRefused(admin, 'setprop', { name: 'web1', cpu: '0' }, 400, 'cpu');
  await vmRefused(admin, 'setprop', { name: 'web1', ram: 'lots' }, 400, 'ram');
  expectError(await admin.call('vm', 'setprop', { name: 'web1' }), 400);

  assert.deepEqual(await vmOk(admin, 'install', { name: 'web1', iso: SEEDED_ISO }), { install: { iso: SEEDED_ISO, name: 'web1' } });
  assert.equal(((await vmOk(admin, 'getprops', { name: 'web1' })).getprops as Record<string, Record<string, string>>).web1?.install, 'yes');
  await vmRefused(admin, 'start', { name: 'web1' }, 409, 'name');
  await vmRefused(admin, 'delete', { name: 'web1' }, 409, 'name');
  await vmRefused(admin, 'resizedisk', { name: 'web1', disk: 'disk0', size: '20G' }, 409, 'name');
  assert.deepEqual(await vmOk(admin, 'stop', { name: 'web1' }), { stop: { name: 'web1' } });
  await vmRefused(admin, 'stop', { name: 'web1' }, 409, 'name');
  await vmRefused(admin, 'install', { name: 'web1', iso: 'nosuch.iso' }, 404, 'iso');
  assert.deepEqual(await vmOk(admin, 'start', { name: 'web1' }), { start: { name: 'web1' } });
  assert.deepEqual((await vmOk(admin, 'listvms')).listvms, {
    fbsd: { description: '2026-01-12T09:30:00.000Z', rcboot: 'YES', running: 'YES', vmm: 'YES' },
    debian: { description: '2026-01-12T09:30:00.000Z', rcboot: 'NO', running: 'NO', vmm: 'NO' },
    web1: { description: 'web-server', rcboot: 'NO', running: 'YES', vmm: 'YES' },
  });
  await vmOk(admin, 'stop', { name: 'web1' });

  assert.deepEqual(await vmOk(admin, 'adddisk', { name: 'web1', size: '500M' }), { adddisk: { web1: { size: '500M' } } });
  await vmRefused(admin, 'resizedisk', { name: 'web1', disk: 'disk1', size: '500M' }, 400, 'size');
  await vmRefused(admin, 'resizedisk', { name: 'web1', disk: 'disk1', size: '100M' }, 400, 'size');
  assert.deepEqual(await vmOk(admin, 'resizedisk', { name: 'web1', disk: 'disk1', size: '1G' }), { resizedisk: { disk: 'disk1', name: 'web1', size: '1G' } });
  await vmRefused(admin, 'resizedisk', { name: 'web1', disk: 'disk9', size: '1G' }, 404, 'disk');
  await vmRefused(admin, 'deletedisk', { name: 'web1', disk: 'disk0' }, 400, 'disk');
  assert.deepEqual(await vmOk(admin, 'listdisks', { name: 'web1' }), { listdisks: { disk0: '10G', disk1: '1G' } });

  agent = await agent.restart();
  t.after(() => agent.dispose());
  admin = await clientFor(t, agent, 'admin');
  assert.deepEqual(await vmOk(admin, 'listdisks', { name: 'web1' }), { listdisks: { disk0: '10G', disk1: '1G' } });
  assert.equal(((await vmOk(admin, 'getprops', { name: 'web1' })).getprops as Record<string, Record<string, string>>).web1?.cpu, '4');
  assert.deepEqual(await vmOk(admin, 'deletedisk', { name: 'web1', disk: 'disk1' }), { deletedisk: { disk: 'disk1', name: 'web1' } });
  assert.deepEqual(await vmOk(admin, 'delete', { name: 'web1' }), { delete: { name: 'web1' } });
  await vmRefused(admin, 'getprops', { name: 'web1' }, 404, 'name');
  await vmRefused(admin, 'listdisks', { name: 'web1' }, 404, 'name');
  assert.deepEqual(Object.keys((await vmOk(admin, 'listvms')).listvms as object), ['fbsd', 'debian']);
});

test('fetchiso: the spec acknowledgement, paced progress events with filename, percent_done and download_rate, then the ISO is listed', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);
  const url = 'https://download.freebsd.org/ftp/releases/ISO-IMAGES/14.3/FreeBSD-14.3-RELEASE-amd64-bootonly.iso';
  await vmRefused(admin, 'fetchiso', { url }, 400, 'url');
  const { queueid, events } = await fetchIso(admin, url.replace('https://', 'http://'));
  assert.match(queueid, /^admin_fetchiso-\{[0-9a-f-]{36}\}$/);
  const done = events.at(-1) as Record<string, unknown>;
  assert.equal(done.event_system, 'admin/vm');
  assert.equal(done.state, 'finished');
  assert.equal(done.success, 'true');
  assert.equal(done.filename, 'FreeBSD-14.3-RELEASE-amd64-bootonly.iso');
  assert.equal(done.percent_done, '100%');
  const progress = events.filter((e) => e.state === 'running' && 'percent_done' in e);
  assert.ok(progress.length >= 2, `${progress.length} progress events`);
  for (const e of progress) assert.match(String(e.download_rate), /^[0-9.]+ (kB|MB)\/s$/);
  assert.deepEqual(await vmOk(admin, 'listisos'), { listisos: [SEEDED_ISO, 'FreeBSD-14.3-RELEASE-amd64-bootonly.iso'].sort() });
  await vmRefused(admin, 'fetchiso', { url: url.replace('https://', 'http://') }, 409, 'url');

  assert.deepEqual(await vmOk(admin, 'renameiso', { source: SEEDED_ISO, target: 'fbsd.iso' }), { renameiso: { source: SEEDED_ISO, target: 'fbsd.iso' } });
  await vmRefused(admin, 'renameiso', { source: SEEDED_ISO, target: 'x.iso' }, 404, 'source');
  await vmRefused(admin, 'renameiso', { source: 'fbsd.iso', target: 'FreeBSD-14.3-RELEASE-amd64-bootonly.iso' }, 409, 'target');
  assert.deepEqual(await vmOk(admin, 'rmiso', { target: 'fbsd.iso' }), { rmiso: { target: 'fbsd.iso' } });
  await vmRefused(admin, 'rmiso', { target: 'fbsd.iso' }, 404, 'target');
});

test('bad names, sizes and URLs are refused naming the field, and nothing changes', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  const before = await vmOk(admin, 'listvms');
  for (const name of ['-f', '../etc', 'a/b', 'x..y', '.x', 'web 1', 'web;1', 'a'.repeat(232), ''])
    await vmRefused(admin, 'create', { name, size: '1G' }, 400, 'name');
  for (const size of ['0G', '1.5G', '10', 'G', '-1G', '10GB', '1e3G']) await vmRefused(admin, 'create', { name: 'ok', size }, 400, 'size');
  for (const disk of ['disk', 'sda', '../disk1', 'disk1;']) await vmRefused(admin, 'resizedisk', { name: 'debian', disk, size: '20G' }, 400, 'disk');
  for (const iso of ['-x.iso', '../x.iso', 'a/b.iso', '..']) await vmRefused(admin, 'install', { name: 'debian', iso }, 400, 'iso');
  for (const url of ['https://h/x.iso', 'file:/x.iso', 'http://h/x iso', 'http://h/$(reboot).iso', 'ftp://h/../../x.iso', 'HTTP://h/x.iso']) {
    await vmRefused(admin, 'fetchiso', { url }, 400, 'url');
  }
  await vmRefused(admin, 'setup', { nic: '-em0', pool: 'tank' }, 400, 'nic');
  await vmRefused(admin, 'setup', { nic: 'em0', pool: 'tank/x' }, 400, 'pool');
  await vmRefused(admin, 'setprop', { name: 'debian', 'ram;x': '1G' }, 400);
  await vmRefused(admin, 'setprop', { name: 'debian', os: 'a b' }, 400);
  await vmRefused(admin, 'start', { name: 'nosuch' }, 404, 'name');
  assert.deepEqual(await vmOk(admin, 'listvms'), before);
  assert.deepEqual(await vmOk(admin, 'listdisks', { name: 'debian' }), { listdisks: { disk0: '16G', disk1: '8G' } });
});

test('limited users read but do not change', async (t) => {
  const operator = await clientFor(t, await agentFor(t), 'operator');
  assert.ok('listvms' in (await vmOk(operator, 'listvms')));
  assert.ok('listisos' in (await vmOk(operator, 'listisos')));
  expectError(await operator.call('vm', 'stop', { name: 'fbsd' }), 403);
  expectError(await operator.call('vm', 'fetchiso', { url: 'http://h/x.iso' }), 403);
  assert.equal(((await vmOk(operator, 'listvms')).listvms as Record<string, { running: string }>).fbsd?.running, 'YES');
});

test('guests marked boot=1 stop with the agent and start again with it, like the real platforms; boot=0 stays as it was', async (t) => {
  let agent = await startTestAgent();
  let admin = await clientFor(t, agent, 'admin');
  await vmOk(admin, 'setprop', { name: 'debian', boot: '1' });
  await vmOk(admin, 'create', { name: 'web1', size: '1G' });
  const running = async () =>
    Object.entries((await vmOk(admin, 'listvms')).listvms as Record<string, { running: string }>).map(([name, v]) => [name, v.running]);
  assert.deepEqual(await running(), [
    ['fbsd', 'YES'],
    ['debian', 'NO'],
    ['web1', 'NO'],
  ]);
  const args = (e: { args: unknown }) => (e.args as { args: Record<string, unknown> }).args;
  await admin.request('events', 'subscribe', ['system-state']);
  await agent.close();
  // The seeded fbsd was running and is marked boot=1: the agent stopped it as it stopped.
  assert.deepEqual(
    admin.events.map((e) => ({ ...args(e), time: undefined })),
    [{ event_system: 'admin/vm', action: 'autostop', name: 'fbsd', state: 'stopped', time: undefined }],
  );
  agent = await startTestAgent({}, agent.dataDir);
  t.after(() => agent.dispose());
  admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['system-state']);
  // Started in their listed order; a new subscriber is sent the last event at once.
  assert.equal(args(await admin.nextEvent((e) => args(e).name === 'debian')).state, 'started');
  assert.deepEqual(await running(), [
    ['fbsd', 'YES'],
    ['debian', 'YES'],
    ['web1', 'NO'],
  ]);
});
