/**
 * Linux virtual machines for real: the agent's runner is aimed into a sandbox (its own mount, PID and
 * network namespaces, test/helpers/linux-sandbox.ts) holding a bridge the test makes, so QEMU, its tap
 * device and `ps`/`kill` live there and die with it. A guest is created, started under KVM (TCG with
 * the reason where /dev/kvm does not open), seen running through QMP, refused what a running guest
 * must refuse, stopped; disks added, grown, listed and removed; booted from a fetched ISO; deleted,
 * leaving no process, tap, socket or file. `fetchiso` downloads from file:// and a local HTTP server
 * with progress events and a size cap.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { qmp } from '@hostadm/agent/platforms/linux/vm/qmp.ts';
import { VmStore } from '@hostadm/agent/platforms/linux/vm/store.ts';
import { detectAccelerator } from '@hostadm/agent/platforms/linux/vm/qemu.ts';
import { linuxVm } from '@hostadm/agent/platforms/linux/vm/index.ts';
import { sessionClientFor, startTestAgent, type Envelope } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox } from '../helpers/linux-sandbox.ts';
import { fetchIso, type JobEvent, vmOk, vmRefused } from './vm-support.ts';

const QEMU_ABSENT = ['/usr/bin/qemu-system-x86_64', '/usr/bin/qemu-img'].find((p) => !existsSync(p));
const sandboxable = canSandbox();
const skipQemu =
  process.platform !== 'linux'
    ? 'Linux only'
    : QEMU_ABSENT
      ? `${QEMU_ABSENT} is not installed (apt-get install qemu-system-x86 qemu-utils; .ci/run does so as root)`
      : sandboxable.ok
        ? false
        : `the Linux sandbox ${sandboxable.reason}`;
const CAP = 1024 * 1024;

test('a guest under QEMU: create, start (KVM or TCG with the reason), QMP state, disks, install from an ISO, stop, delete', { skip: skipQemu }, async (t) => {
  const sandbox = await createLinuxSandbox({ hostname: 'vmhost' });
  t.after(() => sandbox.dispose());
  for (const argv of [
    ['ip', 'link', 'add', 'br0', 'type', 'bridge'],
    ['ip', 'link', 'set', 'br0', 'up'],
  ]) {
    assert.equal((await sandbox.runner.run(argv)).code, 0, argv.join(' '));
  }
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }), maxIsoBytes: CAP });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher']);
  const store = new VmStore(agent.dataDir);
  const accel = detectAccelerator();
  t.diagnostic(`accelerator: ${accel.kind}${accel.reason ? ` (${accel.reason})` : ''}`);

  assert.deepEqual(await vmOk(root, 'issetup'), { issetup: { setup: 'false' } });
  await vmRefused(root, 'create', { name: 'web1', size: '64M' }, 409);
  await vmRefused(root, 'setup', { nic: 'nosuch0', pool: 'tank' }, 400, 'nic');
  await vmRefused(root, 'setup', { nic: 'lo', pool: 'tank' }, 400, 'nic');
  assert.deepEqual(await vmOk(root, 'setup', { nic: 'br0', pool: 'tank' }), { setup: { nic: 'br0', pool: 'tank' } });
  assert.deepEqual(await vmOk(root, 'issetup'), { issetup: { setup: 'true' } });

  for (const name of ['-rf', '../x', 'a/b', 'a..b', '.hidden']) await vmRefused(root, 'create', { name, size: '64M' }, 400, 'name');
  for (const size of ['0G', '10', '1.5G', '-1G', '10Q']) await vmRefused(root, 'create', { name: 'web1', size }, 400, 'size');
  // A size qemu-img refuses: the guest is not half made (no directory, not listed).
  const tooBig = await vmRefused(root, 'create', { name: 'huge', size: '999999999T' }, 500);
  assert.match(tooBig, /qemu-img: Invalid image size/);
  assert.equal(existsSync(join(store.poolDir('tank'), 'huge')), false);
  assert.deepEqual(await vmOk(root, 'listvms'), { listvms: {} });
  assert.deepEqual(await vmOk(root, 'create', { name: 'web1', size: '64M' }), { create: { name: 'web1', size: '64M' } });
  await vmRefused(root, 'create', { name: 'web1', size: '64M' }, 409, 'name');
  assert.deepEqual(await vmOk(root, 'listvms'), {
    listvms: { web1: { description: (await props(root)).description, rcboot: 'NO', running: 'NO', vmm: 'NO' } },
  });

  const changed = await vmOk(root, 'setprop', { name: 'web1', cpu: '2', ram: '96M', bootorder: 'cd' });
  assert.deepEqual(changed, { setprop: { web1: { cpu: '2', ram: '96M', bootorder: 'cd' } } });
  await vmRefused(root, 'setprop', { name: 'web1', cpu: '999' }, 400, 'cpu');
  await vmRefused(root, 'setprop', { name: 'web1', size: '1G' }, 400, 'size');
  await vmRefused(root, 'setprop', { name: 'web1', nic: 'rtl; reboot' }, 400);
  const before = await props(root);
  assert.equal(before.cpu, '2');
  assert.equal(before.ram, '96M');
  assert.equal(before.accel, accel.reason ? `tcg: ${accel.reason}` : 'kvm');

  // Started: QEMU answers on its QMP socket, under the accelerator the host allows.
  let began = Date.now();
  assert.deepEqual(await vmOk(root, 'start', { name: 'web1' }), { start: { name: 'web1' } });
  t.diagnostic(`start took ${Date.now() - began} ms`);
  assert.deepEqual((await vmOk(root, 'listvms')).listvms, { web1: { description: before.description, rcboot: 'NO', running: 'YES', vmm: 'YES' } });
  const socket = store.runPaths('web1').qmp;
  const kvm = (await qmp(socket, 'query-kvm')) as { enabled: boolean; present: boolean };
  assert.equal(kvm.enabled, accel.kind === 'kvm', JSON.stringify(kvm));
  const cpus = (await qmp(socket, 'query-cpus-fast')) as unknown[];
  assert.equal(cpus.length, 2, 'the cpu property reached QEMU');
  const tap = (await sandbox.runner.run(['ip', '-j', 'link', 'show', 'master', 'br0'])).stdout;
  assert.match(tap, /"ifname":"hv[0-9a-f]{12}"/, 'the guest has a tap on the bridge');
  const version = (await vmOk(root, 'version')).version as { version: string };
  assert.match(version.version, new RegExp(`^QEMU emulator version .*; accelerator ${accel.kind}`));

  await vmRefused(root, 'start', { name: 'web1' }, 409, 'name');
  await vmRefused(root, 'delete', { name: 'web1' }, 409, 'name');
  await vmRefused(root, 'adddisk', { name: 'web1', size: '32M' }, 409, 'name');
  began = Date.now();
  assert.deepEqual(await vmOk(root, 'stop', { name: 'web1' }), { stop: { name: 'web1' } });
  t.diagnostic(`stop (QMP quit) took ${Date.now() - began} ms`);
  assert.deepEqual((await vmOk(root, 'listvms')).listvms, { web1: { description: before.description, rcboot: 'NO', running: 'NO', vmm: 'NO' } });
  await vmRefused(root, 'stop', { name: 'web1' }, 409, 'name');
  assert.equal(existsSync(socket), false, 'the QMP socket is gone');
  assert.doesNotMatch((await sandbox.runner.run(['ip', '-j', 'link', 'show', 'master', 'br0'])).stdout, /hv[0-9a-f]{12}/, 'the tap is gone');

  // Disks: qcow2 files grown only upwards, disk0 stays with its guest.
  assert.deepEqual(await vmOk(root, 'adddisk', { name: 'web1', size: '32M' }), { adddisk: { web1: { size: '32M' } } });
  assert.deepEqual(await vmOk(root, 'listdisks', { name: 'web1' }), { listdisks: { disk0: '64M', disk1: '32M' } });
  await vmRefused(root, 'resizedisk', { name: 'web1', disk: 'disk1', size: '16M' }, 400, 'size');
  await vmRefused(root, 'resizedisk', { name: 'web1', disk: 'disk1', size: '32M' }, 400, 'size');
  await vmRefused(root, 'resizedisk', { name: 'web1', disk: 'disk7', size: '1G' }, 404, 'disk');
  await vmRefused(root, 'resizedisk', { name: 'nosuch', disk: 'disk1', size: '1G' }, 404, 'name');
  assert.deepEqual(await vmOk(root, 'resizedisk', { name: 'web1', disk: 'disk1', size: '48M' }), { resizedisk: { disk: 'disk1', name: 'web1', size: '48M' } });
  assert.deepEqual(await vmOk(root, 'listdisks', { name: 'web1' }), { listdisks: { disk0: '64M', disk1: '48M' } });
  await vmRefused(root, 'deletedisk', { name: 'web1', disk: 'disk0' }, 400, 'disk');
  assert.deepEqual(await vmOk(root, 'deletedisk', { name: 'web1', disk: 'disk1' }), { deletedisk: { disk: 'disk1', name: 'web1' } });
  assert.deepEqual(await vmOk(root, 'listdisks', { name: 'web1' }), { listdisks: { disk0: '64M' } });

  // install boots from an ISO of the store (any image: SeaBIOS finds nothing to boot and idles).
  const isoSource = join(agent.dataDir, 'boot.iso');
  writeFileSync(isoSource, randomBytes(64 * 1024));
  await vmRefused(root, 'install', { name: 'web1', iso: 'boot.iso' }, 404, 'iso');
  const fetched = await fetchIso(root, `file://${isoSource}`);
  assert.equal(fetched.events.at(-1)?.success, 'true', JSON.stringify(fetched.events.at(-1)));
  assert.deepEqual(await vmOk(root, 'install', { name: 'web1', iso: 'boot.iso' }), { install: { iso: 'boot.iso', name: 'web1' } });
  assert.equal((await props(root)).install, 'yes');
  const blocks = (await qmp(socket, 'query-block')) as Array<{ device: string; inserted?: { file: string } }>;
  assert.ok(
    blocks.some((b) => b.inserted?.file.endsWith('/boot.iso')),
    JSON.stringify(blocks),
  );
  await vmOk(root, 'stop', { name: 'web1' });
  assert.equal((await props(root)).install, 'no');

  const guestDir = join(store.poolDir('tank'), 'web1');
  assert.ok(existsSync(join(guestDir, 'disk0.qcow2')));
  assert.deepEqual(await vmOk(root, 'delete', { name: 'web1' }), { delete: { name: 'web1' } });
  assert.deepEqual(await vmOk(root, 'listvms'), { listvms: {} });
  assert.equal(existsSync(guestDir), false, 'the disks are gone');
  await vmRefused(root, 'delete', { name: 'web1' }, 404, 'name');
  // Exited QEMUs may wait a moment as zombies for the sandbox's init to reap them.
  const live = (await sandbox.runner.run(['ps', '-eo', 'stat=,args='])).stdout.split('\n').filter((l) => !l.trimStart().startsWith('Z'));
  assert.equal(live.filter((l) => l.includes('qemu-system')).length, 0, `no QEMU left in the sandbox: ${live.join('\n')}`);
  assert.deepEqual(readdirSync(store.runDir), [], 'no socket or pid file left');

  async function props(client = root): Promise<Record<string, string>> {
    return ((await vmOk(client, 'getprops', { name: 'web1' })).getprops as Record<string, Record<string, string>>).web1 as Record<string, string>;
  }
});

/** A local HTTP server: `/iso/<name>` serves `size` bytes in chunks (with or without a length). */
async function isoServer(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const match = /^\/(sized|chunked)\/(\d+)\/[^/]+$/.exec(req.url ?? '');
    if (!match) {
      res.writeHead(404).end();
      return;
    }
    const size = Number(match[2]);
    res.writeHead(200, match[1] === 'sized' ? { 'content-length': String(size) } : {});
    let sent = 0;
    const chunk = 32 * 1024;
    const more = () => {
      if (sent >= size || res.destroyed) return void res.end();
      const n = Math.min(chunk, size - sent);
      sent += n;
      res.write(randomBytes(n));
      setTimeout(more, 50);
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { url: `http://127.0.0.1:${address.port}`, server };
}

test('fetchiso from file:// and a local HTTP server: progress events, rate, the size cap, nothing half-written', {
  skip: process.platform !== 'linux' && 'Linux only',
}, async (t) => {
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: ['false'] }), maxIsoBytes: CAP });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher']);
  const { url, server } = await isoServer();
  t.after(() => server.close());
  const store = new VmStore(agent.dataDir);
  const source = mkdtempSync(join(tmpdir(), 'hostadm-iso-'));
  t.after(() => rmSync(source, { recursive: true, force: true }));
  writeFileSync(join(source, 'local.iso'), randomBytes(300 * 1024));

  const local = await fetchIso(root, `file://${join(source, 'local.iso')}`);
  const done = local.events.at(-1);
  assert.equal(done?.success, 'true', JSON.stringify(done));
  assert.equal(done?.event_system, 'admin/vm');
  assert.equal(done?.filename, 'local.iso');
  assert.equal(done?.percent_done, '100%');
  assert.match(String(done?.download_rate), /^[0-9.]+ (B|kB|MB|GB)\/s$/);

  const http = await fetchIso(root, `${url}/sized/${640 * 1024}/net.iso`);
  assert.equal(http.events.at(-1)?.success, 'true', JSON.stringify(http.events.at(-1)));
  for (const e of http.events.filter((e) => e.state === 'running')) {
    assert.equal(e.filename, 'net.iso');
    assert.ok(!('success' in e), 'a progress event carries no outcome');
  }
  // The job's first event announces it; the download's own events carry the percentage and rate.
  const running = http.events.filter((e) => e.state === 'running' && 'percent_done' in e);
  assert.ok(running.length >= 2, `progress events while downloading: ${running.length}`);
  for (const e of running) {
    assert.match(String(e.percent_done), /^\d{1,3}%$/);
    assert.match(String(e.download_rate), /^[0-9.]+ (B|kB|MB|GB)\/s$/);
  }
  assert.ok(
    running.some((e) => e.percent_done !== '0%' && e.percent_done !== '100%'),
    running.map((e) => e.percent_done).join(' '),
  );
  assert.deepEqual(await vmOk(root, 'listisos'), { listisos: ['local.iso', 'net.iso'] });
  await vmRefused(root, 'fetchiso', { url: `${url}/sized/10/net.iso` }, 409, 'url');

  // Past the cap: refused from the announced length, or cut off while streaming; no file either way.
  const sized = await fetchIso(root, `${url}/sized/${2 * CAP}/big.iso`);
  assert.equal(sized.events.at(-1)?.success, 'false');
  assert.match(String(sized.events.at(-1)?.reason), /cap of 1048576/);
  const chunked = await fetchIso(root, `${url}/chunked/${2 * CAP}/big.iso`);
  assert.equal(chunked.events.at(-1)?.success, 'false');
  assert.match(String(chunked.events.at(-1)?.reason), /passed the cap of 1048576/);
  // Killed while downloading: the job ends as killed and its temporary file goes.
  const slow = (await vmOk(root, 'fetchiso', { url: `${url}/chunked/${CAP - 1}/slow.iso` })).fetchiso as { queueid: string };
  const isSlow = (e: Envelope) => (e.args as { args: JobEvent }).args.process_details?.process_id === slow.queueid;
  await root.nextEvent((e) => isSlow(e) && 'percent_done' in (e.args as { args: JobEvent }).args);
  const killed = await root.request('rpc', 'dispatcher', { action: 'kill', job_id: slow.queueid });
  assert.deepEqual(killed.args, { killed: { jobs: [slow.queueid] } });
  const end = await root.nextEvent((e) => isSlow(e) && (e.args as { args: JobEvent }).args.state === 'finished');
  assert.equal((end.args as { args: JobEvent }).args.success, 'false');
  const missing = await fetchIso(root, `${url}/nothing-here.iso`);
  assert.match(String(missing.events.at(-1)?.reason), /HTTP 404/);
  assert.deepEqual(readdirSync(store.isoDir).sort(), ['local.iso', 'net.iso'], 'no partial download left');

  for (const bad of ['https://example.org/x.iso', 'ftp://host/../x.iso', 'file:///tmp/a b.iso', 'http://h/x.iso;rm', 'gopher://h/x.iso']) {
    await vmRefused(root, 'fetchiso', { url: bad }, 400, 'url');
  }
  await vmRefused(root, 'fetchiso', { url: `${url}/sized/10/` }, 400, 'url');

  assert.deepEqual(await vmOk(root, 'renameiso', { source: 'net.iso', target: 'net-2.iso' }), { renameiso: { source: 'net.iso', target: 'net-2.iso' } });
  await vmRefused(root, 'renameiso', { source: 'net.iso', target: 'x.iso' }, 404, 'source');
  await vmRefused(root, 'renameiso', { source: 'net-2.iso', target: 'local.iso' }, 409, 'target');
  await vmRefused(root, 'renameiso', { source: 'net-2.iso', target: '../x.iso' }, 400, 'target');
  assert.deepEqual(await vmOk(root, 'rmiso', { target: 'net-2.iso' }), { rmiso: { target: 'net-2.iso' } });
  await vmRefused(root, 'rmiso', { target: 'net-2.iso' }, 404, 'target');
  assert.deepEqual(await vmOk(root, 'listisos'), { listisos: ['local.iso'] });
});

test('without a usable /dev/kvm the guest runs under TCG and the reason is reported', { skip: skipQemu }, async (t) => {
  const sandbox = await createLinuxSandbox({ hostname: 'tcghost' });
  t.after(() => sandbox.dispose());
  assert.equal((await sandbox.runner.run(['ip', 'link', 'add', 'br0', 'type', 'bridge'])).code, 0);
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-tcg-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const vm = linuxVm({ runner: createRunner({ prefix: sandbox.prefix }), dataDir, kvmDevice: join(dataDir, 'no-kvm') });
  await vm.setup('br0', 'tank');
  await vm.create('emu', '16M');
  await vm.setProps('emu', { nic: 'none', ram: '64M' });
  await vm.start('emu');
  const socket = new VmStore(dataDir).runPaths('emu').qmp;
  assert.deepEqual(await qmp(socket, 'query-kvm'), { enabled: false, present: true });
  assert.match((await vm.getProps('emu')).accel ?? '', /^tcg: .*no-kvm cannot be opened \(ENOENT\); guests run under TCG emulation/);
  assert.match(await vm.version(), /accelerator tcg \(.*ENOENT/);
  assert.equal((await vm.listVms()).emu?.running, true);
  await vm.stop('emu');
  await vm.destroy('emu');
  assert.deepEqual(await vm.listVms(), {});
});
