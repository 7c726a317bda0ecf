/**
 * FreeBSD vm through iohyve (where vm-bhyve is absent): the parsers against published iohyve outputs
 * and outputs rendered from iohyve 0.7.9's own format code (test/fixtures/freebsd/vm, sources in
 * iohyve.source.md), then all 19 actions through a real agent whose runner answers as iohyve would,
 * the argv of each compared with the checked-in snapshot; the refusals iohyve itself would not make
 * (it exits 0 after most failures); and the class left out, with the reason, when neither tool is
 * installed.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { RunOptions } from '@hostadm/agent/runner/runner.ts';
import { parseIohyveDisks, parseIohyveGetall, parseIohyveIsoList, parseIohyveList, parseIohyveRoot } from '@hostadm/agent/platforms/freebsd/parse/vm-iohyve.ts';
import { startTestAgent } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';
import { argvSteps, fetchIso, freebsdVmAgent, vmOk, vmRefused, walkInstalledGuest } from './vm-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/vm/${name}`, import.meta.url), 'utf8');

test('iohyve list, getall, disks, isolist and the root dataset, from published and rendered outputs', () => {
  assert.deepEqual(parseIohyveList(fixture('iohyve-list.txt')), [
    { name: 'bsdguest', vmm: false, running: false, rcboot: false, description: 'Thu Jun 16 10:17:26 CEST 2016' },
    { name: 'ubuntuguest', vmm: true, running: true, rcboot: true, description: 'Fri Mar 25 18:02:11 PDT 2016' },
    { name: 'win10a', vmm: true, running: false, rcboot: false, description: 'Mon Jul 11 21:58:42 ACST 2016' },
  ]);
  assert.throws(() => parseIohyveList('iohyve: not found\n'), /unexpected header/);
  const win10a = parseIohyveGetall(fixture('iohyve-getall-win10a.txt'));
  assert.equal(Object.keys(win10a).length, 21);
  assert.deepEqual(
    { description: win10a.description, loader: win10a.loader, ram: win10a.ram, boot: win10a.boot, vnc_wait: win10a.vnc_wait },
    { description: 'Mon Jul 11 21:58:42 ACST 2016', loader: 'uefi', ram: '4096M', boot: '0', vnc_wait: 'no' },
  );
  const devbox = parseIohyveGetall(fixture('iohyve-getall-devbox.txt'));
  assert.deepEqual(Object.keys(devbox).sort(), [
    'autogrub',
    'bargs',
    'boot',
    'con',
    'cpu',
    'description',
    'loader',
    'name',
    'os',
    'persist',
    'ram',
    'size',
    'tap',
  ]);
  assert.equal(devbox.autogrub, '\\n');
  assert.deepEqual(parseIohyveDisks(fixture('iohyve-disks.txt')), { disk0: '20G', disk1: '8G' });
  assert.deepEqual(parseIohyveIsoList(fixture('iohyve-isolist.txt')), ['ubuntu-14.04.4-server-amd64.iso', 'FreeBSD-10.3-RELEASE-amd64-bootonly.iso']);
  assert.deepEqual(parseIohyveRoot(fixture('iohyve-zfs-list.txt')), { dataset: 'DATASTORE/iohyve', mountpoint: '/mnt/iohyve' });
  assert.equal(parseIohyveRoot('zroot\t/zroot\nzroot/usr\t/usr\n'), null);
});

interface FakeGuest {
  running: boolean;
  vmm: boolean;
  props: Record<string, string>;
  disks: Record<string, number>;
}

const SIZES: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
const bytesOf = (size: string) => Number(size.slice(0, -1)) * (SIZES[size.slice(-1).toUpperCase()] ?? 1);
const human = (bytes: number) => (bytes % 1024 ** 3 === 0 ? `${bytes / 1024 ** 3}G` : `${bytes / 1024 ** 2}M`);

/** FreeBSD's `column -t`: each column but the last padded to its widest cell plus two spaces. */
function column(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] as number) + 2))).join('')).join('\n') + (rows.length ? '\n' : '');
}

/** iohyve 0.7.9 on a FreeBSD host, as far as the agent asks it (outputs in iohyve's formats). */
class IohyveHost extends RecordingRunner {
  setUp = false;
  readonly guests = new Map<string, FakeGuest>();
  /** The root dataset's mountpoint (a temporary directory: fetchiso writes its ISOs there for real). */
  readonly mount: string;

  constructor(mount: string) {
    super([
      { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
      { match: () => true, stdout: '' },
    ]);
    this.mount = mount;
  }

  private get isoDir() {
    return join(this.mount, 'ISO');
  }

  override async run(argv: readonly string[], options: RunOptions = {}) {
    const reply = await super.run(argv, options);
    const ok = (stdout = '') => ({ ...reply, stdout });
    const fail = (stderr: string) => ({ ...reply, stderr, code: 1 });
    const [cmd, sub, ...rest] = argv;
    const line = argv.join(' ');
    if (line === 'zfs list -H -o name,mountpoint -t filesystem') {
      const rows = ['zroot\t/zroot'];
      if (this.setUp)
        rows.push(
          `zroot/iohyve\t${this.mount}`,
          `zroot/iohyve/ISO\t${this.isoDir}`,
          ...readdirSync(this.isoDir).map((i) => `zroot/iohyve/ISO/${i}\t${this.isoDir}/${i}`),
        );
      return ok(`${rows.join('\n')}\n`);
    }
    if (cmd === 'ifconfig')
      return sub === 'igb0'
        ? ok('igb0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500\n')
        : fail(`ifconfig: interface ${sub} does not exist\n`);
    if (cmd === 'zpool') return argv.at(-1) === 'zroot' ? ok('zroot\n') : fail(`cannot open '${argv.at(-1)}': no such pool\n`);
    if (cmd === 'zfs' && sub === 'create') {
      mkdirSync(join(this.isoDir, (argv.at(-1) as string).split('/').pop() as string));
      return ok();
    }
    if (cmd === 'zfs' && sub === 'destroy') {
      rmSync(join(this.isoDir, (argv.at(-1) as string).split('/').pop() as string), { recursive: true, force: true });
      return ok();
    }
    if (cmd === 'zfs' && sub === 'get') {
      const [, , name, disk] = (argv.at(-1) as string).split('/');
      return ok(`${this.guests.get(name as string)?.disks[disk as string] ?? '-'}\n`);
    }
    if (cmd !== 'iohyve') return reply;
    if (sub === 'setup') {
      this.setUp = true;
      mkdirSync(this.isoDir, { recursive: true });
      return ok('Setting up iohyve pool...\n');
    }
    if (sub === 'version') return ok(fixture('iohyve-version.txt'));
    if (sub === 'list')
      return ok(
        column([
          ['Guest', 'VMM?', 'Running', 'rcboot?', 'Description'],
          ...[...this.guests].map(([n, g]) => [n, yes(g.vmm), yes(g.running), yes(g.props.boot === '1'), g.props.description as string]),
        ]),
      );
    if (sub === 'isolist') return ok(`Listing ISO's...\n${readdirSync(this.isoDir).join('\n')}\n`);
    if (sub === 'renameiso') {
      const [from, to] = rest as [string, string];
      renameSync(join(this.isoDir, from, from), join(this.isoDir, from, to));
      renameSync(join(this.isoDir, from), join(this.isoDir, to));
      return ok(`Renaming ISO ${from} to ${to}...\n`);
    }
    if (sub === 'rmiso') {
      rmSync(join(this.isoDir, rest[0] as string), { recursive: true });
      return ok(`Deleting ${rest[0]}...\n`);
    }
    const flagged = rest[0] === '-f';
    const name = (flagged ? rest[1] : rest[0]) as string;
    if (sub === 'create') {
      const props = parseIohyveGetall(fixture('iohyve-getall-devbox.txt'));
      this.guests.set(name, {
        running: false,
        vmm: false,
        props: { ...props, name, size: rest[1] as string, description: 'Tue Nov 25 07:00:00 UTC 2026', install: 'no' },
        disks: { disk0: bytesOf(rest[1] as string) },
      });
      return ok(`Creating ${name}...\n`);
    }
    const g = this.guests.get(name);
    // iohyve says so on standard output and exits 0 (or 1 from `return 1`).
    if (!g) return { ...reply, stdout: `guest ${name} doesn't exist\n`, code: 1 };
    if (sub === 'start' || sub === 'install') Object.assign(g, { running: true, vmm: true });
    if (sub === 'install') g.props.install = 'yes';
    if (sub === 'stop' || sub === 'destroy') Object.assign(g, { running: false, vmm: false });
    if (sub === 'delete') this.guests.delete(name);
    if (sub === 'set') for (const kv of rest.slice(1)) g.props[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
    if (sub === 'getall')
      return ok(
        `Getting ${name} iohyve properties...\n${column(
          Object.entries(g.props)
            .sort()
            .map(([k, v]) => [k, v]),
        )}`,
      );
    if (sub === 'disks') return ok(`Listing disks for ${name}...\n${column([['diskN', 'Size'], ...Object.entries(g.disks).map(([d, b]) => [d, human(b)])])}`);
    if (sub === 'add') g.disks[`disk${Object.keys(g.disks).length}`] = bytesOf(rest[1] as string);
    if (sub === 'resize') g.disks[rest[1] as string] = bytesOf(rest[2] as string);
    if (sub === 'remove') delete g.disks[rest[2] as string];
    return ok();
  }
}

const yes = (b: boolean) => (b ? 'YES' : 'NO');

const iohyveAgent = (t: TestContext) => freebsdVmAgent(t, 'iohyve', (dir) => new IohyveHost(dir));

test('every action runs iohyve as an administrator would (argv snapshot)', async (t) => {
  const { host, root } = await iohyveAgent(t);
  const { ran, step } = argvSteps(root, host, '/iohyve');
  await step('issetup (not yet)', 'issetup', {}, { issetup: { setup: 'false' } });
  await step('listvms (not set up)', 'listvms', {}, { listvms: {} });
  await step('setup', 'setup', { nic: 'igb0', pool: 'zroot' }, { setup: { nic: 'igb0', pool: 'zroot' } });
  await step('issetup', 'issetup', {}, { issetup: { setup: 'true' } });
  await step('version', 'version', {}, { version: { version: 'iohyve v0.7 2015/10/27 Im Here for the Party Edition' } });
  await step('create', 'create', { name: 'web1', size: '20G' }, { create: { name: 'web1', size: '20G' } });
  await step(
    'setprop',
    'setprop',
    { name: 'web1', cpu: '2', ram: '2048M', description: 'frontend-web', boot: '1', loader: 'grub-bhyve', os: 'debian' },
    { setprop: { web1: { cpu: '2', ram: '2048M', description: 'frontend-web', boot: '1', loader: 'grub-bhyve', os: 'debian' } } },
  );
  const props = ((await step('getprops', 'getprops', { name: 'web1' })).getprops as Record<string, Record<string, string>>).web1;
  assert.deepEqual(
    { cpu: props?.cpu, ram: props?.ram, boot: props?.boot, description: props?.description, size: props?.size },
    { cpu: '2', ram: '2048M', boot: '1', description: 'frontend-web', size: '20G' },
  );
  await step('listvms', 'listvms', {}, { listvms: { web1: { description: 'frontend-web', rcboot: 'YES', running: 'NO', vmm: 'NO' } } });
  writeFileSync(join(host.mount, 'local.iso'), Buffer.alloc(200 * 1024, 7));
  host.calls.length = 0;
  const fetched = await fetchIso(root, `file://${join(host.mount, 'local.iso')}`);
  assert.equal(fetched.events.at(-1)?.success, 'true', JSON.stringify(fetched.events.at(-1)));
  assert.equal(fetched.events.at(-1)?.filename, 'local.iso');
  assert.equal(readFileSync(join(host.mount, 'ISO', 'local.iso', 'local.iso')).length, 200 * 1024, 'in its own dataset, as iohyve keeps ISOs');
  ran.fetchiso = host.calls.map((argv) => argv.map((a) => a.replaceAll(host.mount, '/iohyve')));
  await step('listisos', 'listisos', {}, { listisos: ['local.iso'] });
  await step('renameiso', 'renameiso', { source: 'local.iso', target: 'FreeBSD-14.3.iso' }, { renameiso: { source: 'local.iso', target: 'FreeBSD-14.3.iso' } });
  await walkInstalledGuest(root, step);
  assert.equal(host.guests.size, 0);
  snapshotArgv(t, ran);
});

test('refusals before iohyve runs: unknown and running guests, unsafe or unreadable settings, a guest only loaded, bad nic and pool', async (t) => {
  const { host, root } = await iohyveAgent(t);
  await vmRefused(root, 'create', { name: 'web1', size: '1G' }, 409);
  await vmRefused(root, 'setup', { nic: 'em7', pool: 'zroot' }, 400, 'nic');
  await vmRefused(root, 'setup', { nic: 'igb0', pool: 'tank' }, 400, 'pool');
  await vmOk(root, 'setup', { nic: 'igb0', pool: 'zroot' });
  await vmOk(root, 'create', { name: 'db1', size: '10G' });
  await vmRefused(root, 'create', { name: 'db1', size: '10G' }, 409, 'name');
  for (const action of ['start', 'stop', 'delete', 'getprops', 'listdisks']) await vmRefused(root, action, { name: 'nosuch' }, 404, 'name');
  host.calls.length = 0;
  for (const [key, value] of [
    ['bhyve_path', '/tmp/evil'],
    ['bargs', '-s_9,virtio-blk,/dev/ada0'],
    ['pcidev:1', 'passthru,2/0/0'],
    ['autogrub', 'cat (host)/etc/master.passwd'],
    ['con', 'nmdm9'],
    ['description', 'has "quotes" and = signs'],
    ['description', 'a glob *'],
    ['loader', '/boot/loader'],
    ['os', 'Debian 12'],
  ] as const) {
    await vmRefused(root, 'setprop', { name: 'db1', [key]: value }, 400, key);
  }
  assert.ok(!host.calls.some((argv) => argv[0] === 'iohyve' && argv[1] === 'set'), 'nothing was set');
  await vmRefused(root, 'install', { name: 'db1', iso: 'nosuch.iso' }, 404, 'iso');
  await vmRefused(root, 'resizedisk', { name: 'db1', disk: 'disk4', size: '50G' }, 404, 'disk');
  await vmOk(root, 'start', { name: 'db1' });
  for (const action of ['start', 'delete']) await vmRefused(root, action, { name: 'db1' }, 409, 'name');
  await vmRefused(root, 'adddisk', { name: 'db1', size: '1G' }, 409, 'name');
  await vmOk(root, 'stop', { name: 'db1' });
  await vmRefused(root, 'stop', { name: 'db1' }, 409, 'name');
  // Loaded in the VMM but not running (a loader that never handed over): stop frees it with destroy.
  Object.assign(host.guests.get('db1') as FakeGuest, { vmm: true });
  await vmRefused(root, 'start', { name: 'db1' }, 409, 'name');
  host.calls.length = 0;
  await vmOk(root, 'stop', { name: 'db1' });
  assert.deepEqual(
    host.calls.filter((argv) => argv[0] === 'iohyve' && argv[1] !== 'list'),
    [['iohyve', 'destroy', 'db1']],
  );
  assert.ok(!host.calls.some((argv) => argv.includes('forcekill')));
  // A download that fails leaves no ISO dataset behind.
  const failed = await fetchIso(root, `file://${join(host.mount, 'missing.iso')}`);
  assert.equal(failed.events.at(-1)?.success, 'false');
  assert.ok(host.calls.some((argv) => argv.join(' ') === 'zfs destroy -- zroot/iohyve/ISO/missing.iso'));
  assert.deepEqual(await vmOk(root, 'listisos'), { listisos: [] });
});

test('with neither vm-bhyve nor iohyve installed, vm is left out and answers 501 with the reason', async (t) => {
  const agent = await startTestAgent({ platform: 'freebsd', runner: new RecordingRunner([{ match: () => true, stdout: '' }]), freebsdVmTool: null });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  const error = expectError(await root.call('vm', 'listvms', {}), 501);
  assert.match(error.message, /neither vm-bhyve \(\/usr\/local\/sbin\/vm\) nor iohyve \(\/usr\/local\/sbin\/iohyve\) is installed/);
});
