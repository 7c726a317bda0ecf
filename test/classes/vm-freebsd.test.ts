/**
 * FreeBSD vm (vm-bhyve): the parsers against published `vm list`, `vm info`, `vm switch list` and
 * `vm iso` outputs (test/fixtures/freebsd/vm, sources in vm.source.md), then all 19 actions through a
 * real agent on the FreeBSD platform whose runner answers as vm-bhyve would (its outputs rendered in
 * the fixtures' layouts, following what earlier commands did): the argv each action runs is compared
 * with the checked-in snapshot. The ISO store is a temporary directory standing in for the
 * datastore's mountpoint, so `fetchiso` really downloads into it.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { RunOptions } from '@hostadm/agent/runner/runner.ts';
import { parseIsoList, parseRcFile, parseSwitchList, parseVmInfo, parseVmList } from '@hostadm/agent/platforms/freebsd/parse/vm.ts';
import { snapshotArgv } from './services-support.ts';
import { argvSteps, fetchIso, freebsdVmAgent, vmOk, vmRefused, walkInstalledGuest } from './vm-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/vm/${name}`, import.meta.url), 'utf8');

test('vm list in all four published layouts: names, columns, autostart order, state and pid', () => {
  const readme = parseVmList(fixture('vm-list-readme.txt'));
  assert.equal(readme.length, 10);
  assert.deepEqual(readme[1], {
    name: 'c7',
    columns: { GUEST: 'linux', LOADER: 'default', CPU: '1', MEMORY: '512M' },
    autostart: 2,
    state: 'Stopped',
    stateDetail: null,
  });
  assert.deepEqual(readme[9], {
    name: 'wintest',
    columns: { GUEST: 'windows', LOADER: 'default', CPU: '2', MEMORY: '2G' },
    autostart: null,
    state: 'Running',
    stateDetail: '2796',
  });
  const ds = parseVmList(fixture('vm-list-datastore.txt'));
  assert.deepEqual(
    ds.map((g) => [g.name, g.columns.DATASTORE, g.autostart, g.state]),
    [
      ['alpine', 'default', null, 'Stopped'],
      ['centos', 'default', 1, 'Stopped'],
      ['wintest', 'default', null, 'Running'],
      ['fb2', 'ssd', null, 'Stopped'],
    ],
  );
  assert.deepEqual(parseVmList(fixture('vm-list-vnc.txt')), [
    {
      name: 'freebsd-current',
      columns: { DATASTORE: 'default', LOADER: 'uefi', CPU: '4', MEMORY: '4G', VNC: '-' },
      autostart: 1,
      state: 'Stopped',
      stateDetail: null,
    },
  ]);
  const auto = parseVmList(fixture('vm-list-auto.txt'));
  assert.deepEqual(
    auto.map((g) => [g.name, g.columns.LOADER, g.state, g.stateDetail]),
    [
      ['fbsd14', 'bhyveload', 'Stopped', null],
      ['spos-osy', 'bhyveload', 'Running', '11568'],
    ],
  );
  assert.throws(() => parseVmList('vm: command not found\n'), /unexpected header/);
});

test('vm info: a running guest with a file disk, a stopped one with a sparse zvol; switches, ISOs, rc files', () => {
  const fbsd = parseVmInfo(fixture('vm-info-fbsd.txt'));
  assert.equal(fbsd.name, 'fbsd');
  assert.equal(fbsd.fields.state, 'running (33508)');
  assert.equal(fbsd.fields.memory, '256M');
  assert.deepEqual(fbsd.disks, [{ name: 'disk0', deviceType: 'file', path: '/data/vm/fbsd/disk0.img', bytes: 21474836480 }]);
  const nixos = parseVmInfo(fixture('vm-info-nixos0.txt'));
  assert.equal(nixos.fields.state, 'stopped');
  assert.deepEqual(nixos.disks, [{ name: 'disk0', deviceType: 'sparse-zvol', path: '/dev/zvol/pfSense/vm/nixos0/nixos0', bytes: 17179869184 }]);
  assert.deepEqual(parseSwitchList(fixture('vm-switch-list.txt')), [{ name: 'public', type: 'standard', iface: 'vm-public', ports: ['igb0'] }]);
  assert.deepEqual(parseSwitchList(fixture('vm-switch-list-empty.txt')), []);
  assert.deepEqual(parseSwitchList(fixture('vm-switch-list-two-ports.txt'))[0]?.ports, ['bge1', 'epair0a']);
  assert.deepEqual(parseIsoList(fixture('vm-iso.txt')), ['kali-linux-2021.1-installer-amd64.iso']);
  assert.equal(parseIsoList(fixture('vm-img.txt')).length, 5);
  assert.deepEqual(parseRcFile(fixture('web1.conf')), {
    loader: 'bhyveload',
    cpu: '1',
    memory: '256M',
    network0_type: 'virtio-net',
    network0_switch: 'public',
    disk0_type: 'virtio-blk',
    disk0_name: 'disk0.img',
    uuid: 'e5881af2-53ed-11e6-b442-50e549369bc6',
    network0_mac: '58:9c:fc:01:a1:ce',
  });
});

interface FakeGuest {
  running: boolean;
  conf: Record<string, string>;
  disks: Array<{ dev: string; bytes: number }>;
}

const SIZES: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
const bytesOf = (size: string) => Number(size.slice(0, -1)) * (SIZES[size.slice(-1).toUpperCase()] ?? 1);

/** vm-bhyve on a FreeBSD 14 host, as far as the agent asks it. */
class VmBhyveHost extends RecordingRunner {
  vmDir: string | null = null;
  vmList: string[] = [];
  readonly guests = new Map<string, FakeGuest>();
  readonly ports: string[] = [];
  switchMade = false;
  /** The datastore's mountpoint (a temporary directory: fetchiso writes its ISO store for real). */
  readonly mount: string;

  constructor(mount: string) {
    super([
      { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
      { match: () => true, stdout: '' },
    ]);
    this.mount = mount;
  }

  override async run(argv: readonly string[], options: RunOptions = {}) {
    const reply = await super.run(argv, options);
    const ok = (stdout = '') => ({ ...reply, stdout });
    const fail = (stderr: string) => ({ ...reply, stderr, code: 1 });
    const [cmd, sub, ...rest] = argv;
    const line = argv.join(' ');
    if (line === 'sysrc -n -- vm_dir') return this.vmDir ? ok(`${this.vmDir}\n`) : fail("sysrc: unknown variable 'vm_dir'\n");
    if (cmd === 'zfs' && sub === 'get') return ok(`${this.mount}\n`);
    if (cmd === 'ifconfig')
      return sub === 'igb0'
        ? ok('igb0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500\n')
        : fail(`ifconfig: interface ${sub} does not exist\n`);
    if (cmd === 'zfs' && sub === 'create')
      return argv.at(-1)?.startsWith('zroot/') ? ok() : fail(`cannot create '${argv.at(-1)}': no such pool '${argv.at(-1)?.split('/')[0]}'\n`);
    if (cmd === 'sysrc' && argv[2]?.startsWith('vm_dir=')) this.vmDir = argv[2].slice('vm_dir='.length);
    if (cmd === 'sysrc' && argv[2]?.startsWith('vm_list+=')) this.vmList.push(argv[2].slice(9));
    if (cmd === 'sysrc' && argv[2]?.startsWith('vm_list-=')) this.vmList = this.vmList.filter((n) => n !== argv[2]?.slice(9));
    if (cmd === 'sysrc' && sub === '-f') return this.sysrcFile(argv, ok);
    if (cmd === 'sysrc' && sub === '-i')
      return this.sysrcFile(
        argv.filter((a) => a !== '-i'),
        ok,
      );
    if (cmd === 'cat') {
      const name = /\/([^/]+)\.conf$/.exec(argv.at(-1) ?? '')?.[1] ?? '';
      const g = this.guests.get(name);
      return g
        ? ok(
            Object.entries(g.conf)
              .map(([k, v]) => `${k}="${v}"\n`)
              .join(''),
          )
        : fail(`cat: ${argv.at(-1)}: No such file or directory\n`);
    }
    if (cmd !== 'vm') return reply;
    if (sub === 'switch') return this.switch(rest, ok);
    if (sub === 'init') {
      mkdirSync(join(this.mount, '.iso'), { recursive: true });
      return ok();
    }
    if (sub === 'list') return ok(this.renderList());
    if (sub === 'version') return ok(fixture('vm-version.txt'));
    if (sub === 'iso')
      return ok(
        `DATASTORE           FILENAME\n${readdirSync(join(this.mount, '.iso'))
          .map((f) => `default             ${f}\n`)
          .join('')}`,
      );
    const name = (sub === 'install' ? argv[2] : argv.at(-1)) as string;
    const g = this.guests.get(name);
    if (sub === 'create') {
      this.guests.set(name, { running: false, conf: parseRcFile(fixture('web1.conf')), disks: [{ dev: 'file', bytes: bytesOf(argv[3] as string) }] });
      return ok();
    }
    if (!g) return fail(`/usr/local/sbin/vm: ERROR: ${name} doesn't appear to be a valid virtual machine\n`);
    if (sub === 'info') return ok(this.renderInfo(name, g));
    if (sub === 'start') g.running = true;
    if (sub === 'install') g.running = true;
    if (sub === 'stop') g.running = false;
    if (sub === 'destroy') this.guests.delete(name);
    if (sub === 'add') g.disks.push({ dev: argv[5] as string, bytes: bytesOf(argv[7] as string) });
    return ok(sub === 'start' || sub === 'install' ? `Starting ${name}\n  * found guest in ${this.mount}/${name}\n  * booting...\n` : '');
  }

  private sysrcFile(argv: readonly string[], ok: (s?: string) => Awaited<ReturnType<RecordingRunner['run']>>) {
    const name = /\/([^/]+)\.conf$/.exec(argv[2] ?? '')?.[1] ?? '';
    const g = this.guests.get(name);
    if (!g) return ok();
    if (argv[3] === '-x') {
      for (const key of argv.slice(5)) delete g.conf[key];
      const n = Number(/^disk(\d+)_/.exec(argv[5] ?? '')?.[1]);
      g.disks.splice(n, 1);
      return ok();
    }
    const [key, value] = (argv[4] ?? '').split('=') as [string, string];
    g.conf[key] = value;
    return ok(`${key}: -> ${value}\n`);
  }

  private switch(rest: readonly string[], ok: (s?: string) => Awaited<ReturnType<RecordingRunner['run']>>) {
    if (rest[0] === 'create') this.switchMade = true;
    if (rest[0] === 'add') this.ports.push(rest[2] as string);
    if (rest[0] !== 'list') return ok();
    const head = 'NAME    TYPE      IFACE      ADDRESS  PRIVATE  MTU  VLAN  PORTS\n';
    return ok(
      this.switchMade
        ? `${head}public  standard  vm-public  -        no       -    -     ${this.ports.join(' ') || '-'}\n`
        : fixture('vm-switch-list-empty.txt'),
    );
  }

  private renderList(): string {
    const rows = [...this.guests.entries()].map(([name, g]) => {
      const order = this.vmList.indexOf(name);
      return [
        name,
        'default',
        'bhyveload',
        g.conf.cpu ?? '1',
        g.conf.memory ?? '256M',
        '-',
        order >= 0 ? `Yes [${order + 1}]` : 'No',
        g.running ? 'Running (4711)' : 'Stopped',
      ];
    });
    const all = [['NAME', 'DATASTORE', 'LOADER', 'CPU', 'MEMORY', 'VNC', 'AUTO', 'STATE'], ...rows];
    const widths = all[0]?.map((_, i) => Math.max(...all.map((r) => (r[i] as string).length))) ?? [];
    const lines = all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] as number) + 2))).join(''));
    return `${lines.join('\n')}\n`;
  }

  private renderInfo(name: string, g: FakeGuest): string {
    const disks = g.disks.map(
      (d, n) =>
        `\n  virtual-disk\n    number: ${n}\n    device-type: ${d.dev}\n    emulation: virtio-blk\n    options: -\n    system-path: ${this.mount}/${name}/disk${n}.img\n    bytes-size: ${d.bytes} (x)\n    bytes-used: 0 (0.000B)\n`,
    );
    return `------------------------\nVirtual Machine: ${name}\n------------------------\n  state: ${g.running ? 'running (4711)' : 'stopped'}\n  datastore: default\n  loader: bhyveload\n  cpu: ${g.conf.cpu}\n  memory: ${g.conf.memory}\n${disks.join('')}`;
  }
}

const freebsdAgent = (t: TestContext) => freebsdVmAgent(t, 'vm-bhyve', (dir) => new VmBhyveHost(dir));

test('every action runs vm-bhyve as an administrator would (argv snapshot)', async (t) => {
  const { host, root } = await freebsdAgent(t);
  const { ran, step } = argvSteps(root, host, '/zroot/vm');
  await step('issetup (not yet)', 'issetup', {}, { issetup: { setup: 'false' } });
  await step('setup', 'setup', { nic: 'igb0', pool: 'zroot' }, { setup: { nic: 'igb0', pool: 'zroot' } });
  assert.deepEqual(host.ports, ['igb0']);
  await step('setup again (switch and port kept)', 'setup', { nic: 'igb0', pool: 'zroot' });
  assert.deepEqual(host.ports, ['igb0']);
  await step('issetup', 'issetup', {}, { issetup: { setup: 'true' } });
  await step('version', 'version', {}, { version: { version: 'vm-bhyve: Bhyve virtual machine management v1.6-devel (rev. 106001)' } });
  await step('create', 'create', { name: 'web1', size: '20G' }, { create: { name: 'web1', size: '20G' } });
  await step(
    'setprop',
    'setprop',
    { name: 'web1', cpu: '2', ram: '2G', description: 'frontend', boot: '1' },
    { setprop: { web1: { cpu: '2', ram: '2G', description: 'frontend', boot: '1' } } },
  );
  const props = (await step('getprops', 'getprops', { name: 'web1' })).getprops as Record<string, Record<string, string>>;
  const { memory: _memory, ...conf } = parseRcFile(fixture('web1.conf'));
  assert.deepEqual(props.web1, { ...conf, name: 'web1', cpu: '2', ram: '2G', description: 'frontend', boot: '1', size: '20G' });
  await step('listvms', 'listvms', {}, { listvms: { web1: { description: 'frontend', rcboot: 'YES', running: 'NO', vmm: 'NO' } } });
  // boot is membership of rc.conf's vm_list, which vm-bhyve's rc.d/vm starts at boot (`vm startall`).
  await step('setprop boot=0', 'setprop', { name: 'web1', boot: '0' }, { setprop: { web1: { boot: '0' } } });
  assert.deepEqual(host.vmList, []);
  await step('listvms (boot=0)', 'listvms', {}, { listvms: { web1: { description: 'frontend', rcboot: 'NO', running: 'NO', vmm: 'NO' } } });
  await step('setprop boot=1', 'setprop', { name: 'web1', boot: '1' }, { setprop: { web1: { boot: '1' } } });
  assert.deepEqual(host.vmList, ['web1']);
  writeFileSync(join(host.mount, 'local.iso'), Buffer.alloc(200 * 1024, 7));
  host.calls.length = 0;
  const fetched = await fetchIso(root, `file://${join(host.mount, 'local.iso')}`);
  assert.equal(fetched.events.at(-1)?.success, 'true', JSON.stringify(fetched.events.at(-1)));
  assert.equal(fetched.events.at(-1)?.filename, 'local.iso');
  ran.fetchiso = host.calls.map((argv) => argv.map((a) => a.replaceAll(host.mount, '/zroot/vm')));
  await step('listisos', 'listisos', {}, { listisos: ['local.iso'] });
  await step('renameiso', 'renameiso', { source: 'local.iso', target: 'FreeBSD-14.3.iso' }, { renameiso: { source: 'local.iso', target: 'FreeBSD-14.3.iso' } });
  // The fake host does not run mv: do what it asked.
  renameSync(join(host.mount, '.iso', 'local.iso'), join(host.mount, '.iso', 'FreeBSD-14.3.iso'));
  await walkInstalledGuest(root, step);
  assert.equal(host.guests.size, 0);
  snapshotArgv(t, ran);
});

test('refusals before anything changes: unknown guests, running guests, unsafe settings, disks out of order, bad nic and pool', async (t) => {
  const { host, root } = await freebsdAgent(t);
  await vmRefused(root, 'create', { name: 'web1', size: '1G' }, 409);
  await vmRefused(root, 'setup', { nic: 'em7', pool: 'zroot' }, 400, 'nic');
  await vmRefused(root, 'setup', { nic: 'igb0', pool: 'tank' }, 400, 'pool');
  await vmOk(root, 'setup', { nic: 'igb0', pool: 'zroot' });
  await vmOk(root, 'create', { name: 'db1', size: '10G' });
  await vmRefused(root, 'create', { name: 'db1', size: '10G' }, 409, 'name');
  await vmRefused(root, 'start', { name: 'nosuch' }, 404, 'name');
  await vmOk(root, 'adddisk', { name: 'db1', size: '1G' });
  await vmOk(root, 'adddisk', { name: 'db1', size: '1G' });
  host.calls.length = 0;
  await vmRefused(root, 'deletedisk', { name: 'db1', disk: 'disk1' }, 409, 'disk');
  for (const [key, value] of [
    ['disk0_name', '/dev/ada0'],
    ['prestart', '/tmp/x.sh'],
    ['bhyve_options', '-w'],
    ['network0_switch', 'lan'],
  ] as const) {
    await vmRefused(root, 'setprop', { name: 'db1', [key]: value }, 400, key);
  }
  await vmRefused(root, 'install', { name: 'db1', iso: 'nosuch.iso' }, 404, 'iso');
  await vmOk(root, 'start', { name: 'db1' });
  await vmRefused(root, 'resizedisk', { name: 'db1', disk: 'disk0', size: '50G' }, 409, 'name');
  await vmRefused(root, 'start', { name: 'db1' }, 409, 'name');
  assert.ok(
    !host.calls.some(
      (argv) => argv[0] === 'sysrc' || argv[0] === 'rm' || argv[0] === 'truncate' || (argv[0] === 'vm' && ['destroy', 'add'].includes(argv[1] as string)),
    ),
    JSON.stringify(host.calls),
  );
  assert.equal(host.guests.get('db1')?.disks.length, 3);
});
