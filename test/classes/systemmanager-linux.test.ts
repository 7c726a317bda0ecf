/**
 * systemmanager on the real Linux platform. Processes, signals, sysctls, mounts and the host's
 * identity are exercised for real inside a throwaway sandbox (its own PID, mount, UTS and network
 * namespaces); sensors and the battery, which this machine lacks, against a fake sysfs tree;
 * halt/reboot only against a recording runner. Parsers are checked against samples captured here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, cpus, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import {
  externalMountsFrom,
  memoryFromMeminfo,
  parseLsblk,
  parseMeminfo,
  parseMountinfo,
  parseProcStat,
  parsePs,
  sysctlNameFromPath,
} from '@hostadm/agent/platforms/linux/parse/systemmanager.ts';
import { readBattery, readCpuTemperatures } from '@hostadm/agent/platforms/linux/systemmanager/sysfs.ts';
import { startTestAgent, type TestAgent } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox, SANDBOX_INIT } from '../helpers/linux-sandbox.ts';
import { clientWithSession, error, ok } from './systemmanager-helpers.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'linux', 'systemmanager');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const SM = 'systemmanager';
const sandboxable = canSandbox();
const skip = sandboxable.ok ? false : `Linux sandbox unavailable: ${sandboxable.reason}`;

/** A fake sysfs: files under `root`, written from a `relative path → content` table. */
function fakeSys(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'hostadm-sys-'));
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), `${content}\n`);
  }
  return root;
}

const LAPTOP_SYS = {
  'class/hwmon/hwmon0/name': 'acpitz',
  'class/hwmon/hwmon0/temp1_input': '27800',
  'class/hwmon/hwmon1/name': 'coretemp',
  'class/hwmon/hwmon1/temp1_label': 'Package id 0',
  'class/hwmon/hwmon1/temp1_input': '52000',
  'class/hwmon/hwmon1/temp2_label': 'Core 0',
  'class/hwmon/hwmon1/temp2_input': '48000',
  'class/hwmon/hwmon1/temp3_label': 'Core 1',
  'class/hwmon/hwmon1/temp3_input': '50500',
  'class/thermal/thermal_zone0/type': 'acpitz',
  'class/thermal/thermal_zone0/temp': '27800',
  'class/power_supply/AC/type': 'Mains',
  'class/power_supply/AC/online': '0',
  'class/power_supply/BAT0/type': 'Battery',
  'class/power_supply/BAT0/present': '1',
  'class/power_supply/BAT0/status': 'Discharging',
  'class/power_supply/BAT0/capacity': '76',
  'class/power_supply/BAT0/energy_now': '38000000',
  'class/power_supply/BAT0/power_now': '9500000',
};

test('parsers on samples captured on this machine', () => {
  const mem = memoryFromMeminfo(parseMeminfo(fixture('meminfo.txt')));
  const info = parseMeminfo(fixture('meminfo.txt'));
  assert.equal(mem.free, Math.floor((info.MemFree ?? 0) / 1024));
  assert.equal(mem.cache, Math.floor((info.Cached ?? 0) / 1024));
  assert.equal(mem.wired, Math.floor(((info.Unevictable ?? 0) + (info.SUnreclaim ?? 0) + (info.KernelStack ?? 0) + (info.PageTables ?? 0)) / 1024));

  // cpuN user nice system idle iowait irq softirq steal guest guest_nice
  const [cpu0, cpu1] = parseProcStat(fixture('stat.txt'));
  const f = fixture('stat.txt')
    .split('\n')
    .filter((l) => /^cpu\d/.test(l))
    .map((l) => l.split(/\s+/).slice(1).map(Number));
  for (const [ticks, n] of [
    [cpu0, f[0]],
    [cpu1, f[1]],
  ] as const) {
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = n ?? [];
    assert.deepEqual(ticks, { idle: idle + iowait, total: user + nice + system + idle + iowait + irq + softirq + steal });
  }

  const ps = parsePs(fixture('ps.txt'));
  assert.equal(ps.length, 4);
  assert.deepEqual(ps[2], {
    pid: 3,
    username: 'root',
    thr: '1',
    pri: '14',
    nice: '5',
    size: '2920K',
    res: '1800K',
    state: 'SN',
    cpu: '1',
    time: '0:00',
    wcpu: '0.00%',
    command: 'sleep 100',
  });
  assert.match(ps[0]?.command ?? '', /^sh -c sleep 100 & nice -n 5 sleep 100/);

  // Only the root disk here, and it is the system's: nothing external.
  assert.deepEqual(externalMountsFrom(parseMountinfo(fixture('mountinfo.txt')), parseLsblk(fixture('lsblk.json'))), []);
  assert.equal(sysctlNameFromPath('/proc/sys/net/ipv4/conf/eth0.10/forwarding'), 'net.ipv4.conf.eth0/10.forwarding');
});

test('external mounts: USB, LUKS-on-USB, SD card, DVD, second disk, loop; system disk, binds and repeats left out', () => {
  const mounts = externalMountsFrom(parseMountinfo(fixture('mountinfo-removable.txt')), parseLsblk(fixture('lsblk-removable.json')));
  assert.deepEqual(mounts, [
    { device: '/dev/sdb1', filesystem: 'vfat', path: '/media/alice/KINGSTON', type: 'USB' },
    { device: '/dev/sdc1', filesystem: 'xfs', path: '/data', type: 'HDRIVE' },
    { device: '/dev/mapper/backup', filesystem: 'ext4', path: '/media/alice/My Backup', type: 'USB' },
    { device: '/dev/sr0', filesystem: 'iso9660', path: '/media/alice/UBUNTU', type: 'DVD' },
    { device: '/dev/mmcblk0p1', filesystem: 'exfat', path: '/media/alice/SDCARD', type: 'SDCARD' },
    { device: '/dev/loop0', filesystem: 'squashfs', path: '/var/snap/core', type: 'UNKNOWN' },
  ]);
});

test('sensors from a fake sysfs: coretemp cores first, then packages, AMD Tdie, thermal zones', async (t) => {
  const roots: string[] = [];
  t.after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));
  const sys = (files: Record<string, string>) => {
    const r = fakeSys(files);
    roots.push(r);
    return r;
  };
  assert.deepEqual(await readCpuTemperatures(sys(LAPTOP_SYS)), [
    { cpu: 0, celsius: 48 },
    { cpu: 1, celsius: 50.5 },
  ]);
  assert.deepEqual(
    await readCpuTemperatures(
      sys({ 'class/hwmon/hwmon0/name': 'coretemp', 'class/hwmon/hwmon0/temp1_label': 'Package id 0', 'class/hwmon/hwmon0/temp1_input': '61000' }),
    ),
    [{ cpu: 0, celsius: 61 }],
  );
  assert.deepEqual(
    await readCpuTemperatures(
      sys({
        'class/hwmon/hwmon0/name': 'k10temp',
        'class/hwmon/hwmon0/temp1_label': 'Tctl',
        'class/hwmon/hwmon0/temp1_input': '55250',
        'class/hwmon/hwmon0/temp3_label': 'Tccd1',
        'class/hwmon/hwmon0/temp3_input': '49000',
      }),
    ),
    [{ cpu: 0, celsius: 55.3 }],
  );
  assert.deepEqual(
    await readCpuTemperatures(
      sys({
        'class/thermal/thermal_zone0/type': 'acpitz',
        'class/thermal/thermal_zone0/temp': '30000',
        'class/thermal/thermal_zone1/type': 'x86_pkg_temp',
        'class/thermal/thermal_zone1/temp': '47000',
      }),
    ),
    [{ cpu: 0, celsius: 47 }],
  );
  assert.deepEqual(await readCpuTemperatures(sys({})), []);
});

test('battery from a fake sysfs: on battery with time left, charging, full, absent', async (t) => {
  const roots: string[] = [];
  t.after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));
  const sys = (files: Record<string, string>) => {
    const r = fakeSys(files);
    roots.push(r);
    return r;
  };
  assert.deepEqual(await readBattery(sys(LAPTOP_SYS)), { present: true, level: 76, status: 'offline', secondsLeft: 14400 });
  const charging = { ...LAPTOP_SYS, 'class/power_supply/AC/online': '1', 'class/power_supply/BAT0/status': 'Charging' };
  assert.deepEqual(await readBattery(sys(charging)), { present: true, level: 76, status: 'charging', secondsLeft: null });
  const full = {
    'class/power_supply/BAT1/type': 'Battery',
    'class/power_supply/BAT1/status': 'Full',
    'class/power_supply/BAT1/charge_now': '4000000',
    'class/power_supply/BAT1/charge_full': '4000000',
  };
  assert.deepEqual(await readBattery(sys(full)), { present: true, level: 100, status: 'charging', secondsLeft: null });
  const mouse = { 'class/power_supply/hidpp_battery_0/type': 'Battery', 'class/power_supply/hidpp_battery_0/scope': 'Device' };
  assert.deepEqual(await readBattery(sys(mouse)), { present: false });
  assert.deepEqual(await readBattery('/nonexistent-sys'), { present: false });
});

test('halt and reboot run shutdown -P / -r now (recorded, never for real)', async (t) => {
  const runner = new RecordingRunner([{ match: ['shutdown', '-P', 'now'] }, { match: ['shutdown', '-r', 'now'] }]);
  const agent = await startTestAgent({ platform: 'linux', runner });
  const client = await clientWithSession(agent);
  t.after(async () => {
    client.close();
    await agent.dispose();
  });
  assert.deepEqual(ok(await client.call(SM, 'halt')), { halt: { response: 'true' } });
  assert.deepEqual(ok(await client.call(SM, 'reboot')), { reboot: { response: 'true' } });
  assert.deepEqual(runner.calls, [
    ['shutdown', '-P', 'now'],
    ['shutdown', '-r', 'now'],
  ]);
  const limited = await clientWithSession(agent, 'operator', 'limited');
  t.after(() => limited.close());
  error(await limited.call(SM, 'reboot'), 403);
  assert.equal(runner.calls.length, 2);
});

interface Box {
  sandbox: LinuxSandbox;
  agent: TestAgent;
  call: (action: string, args?: Record<string, unknown>) => ReturnType<Awaited<ReturnType<typeof clientWithSession>>['call']>;
  /** Runs a shell line inside the sandbox (test setup and read-back only). */
  sh: (script: string) => Promise<string>;
}

async function sandboxAgent(t: { after: (fn: () => unknown) => void }, sysRoot?: string): Promise<Box> {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }), ...(sysRoot ? { sysRoot } : {}) });
  const client = await clientWithSession(agent);
  t.after(async () => {
    client.close();
    await agent.dispose();
  });
  const sh = async (script: string) => {
    const r = await sandbox.runner.run(['sh', '-c', script], { timeoutMs: 30_000 });
    assert.equal(r.code, 0, `${script}: ${r.stderr}`);
    return r.stdout;
  };
  return { sandbox, agent, call: (action, args = {}) => client.call(SM, action, args), sh };
}

test('real: memory, CPU, identity and uptime of the machine, as the sandbox sees it', { skip }, async (t) => {
  const box = await sandboxAgent(t);
  const mem = ok<{ memorystats: Record<string, string> }>(await box.call('memorystats')).memorystats;
  const total = Math.floor((parseMeminfo(readFileSync('/proc/meminfo', 'utf8')).MemTotal ?? 0) / 1024);
  for (const v of Object.values(mem)) assert.match(v, /^\d+$/);
  assert.ok(Number(mem.free) > 0 && Number(mem.free) <= total);

  const cpu = ok<{ cpupercentage: Record<string, unknown> }>(await box.call('cpupercentage')).cpupercentage;
  assert.deepEqual(Object.keys(cpu).sort(), ['busytotal', ...cpus().map((_, i) => `cpu${i}`)].sort());

  const info = ok<{ systemmanager: Record<string, unknown> }>(await box.call('systemmanager')).systemmanager;
  assert.equal(info.hostname, 'sandbox', 'the sandbox UTS namespace, through the runner');
  assert.equal(info.kernelversion, release());
  assert.equal(info.arch, arch() === 'x64' ? 'x86_64' : info.arch);
  assert.equal(info.cpucores, String(cpus().length));
  assert.equal(info.totalmem, total);
  const osRelease = await box.sh('cat /etc/os-release');
  assert.ok(osRelease.includes(`PRETTY_NAME="${String(info.systemversion)}"`));
  assert.match(info.uptime as string, /^up /);

  // This machine has no sensors and no battery: an empty reading and "no battery" are the truth.
  assert.deepEqual(ok(await box.call('cputemps')), { cputemps: {} });
  assert.deepEqual(ok(await box.call('batteryinfo')), { batteryinfo: { battery: 'false' } });
});

test("real: procinfo sees the sandbox's processes; killproc ends one there", { skip }, async (t) => {
  const box = await sandboxAgent(t);
  // An intermediate shell stays as the sleep's parent, so the killed sleep is reaped, not left a zombie.
  await box.sh(`sh -c 'sleep 300 & echo $! > /tmp/sleep.pid; wait' >/dev/null 2>&1 &`);
  let pid = '';
  for (let i = 0; i < 50 && pid === ''; i++) {
    pid = (await box.sh('cat /tmp/sleep.pid 2>/dev/null || true')).trim();
    if (pid === '') await new Promise((r) => setTimeout(r, 20));
  }
  assert.match(pid, /^\d+$/);
  const before = ok<{ procinfo: Record<string, Record<string, string>> }>(await box.call('procinfo')).procinfo;
  assert.equal(before[pid]?.command, 'sleep 300');
  assert.equal(before[pid]?.username, 'root');
  assert.equal(before['1']?.command, SANDBOX_INIT.join(' '), 'PID 1 of the sandbox, not of the machine');

  error(await box.call('killproc', { pid: '1', signal: 'KILL' }), 400, 'pid');
  error(await box.call('killproc', { pid: String(process.pid), signal: 'KILL' }), 400, 'pid');
  error(await box.call('killproc', { pid: '4000000', signal: 'TERM' }), 400, 'pid');

  assert.deepEqual(ok(await box.call('killproc', { pid, signal: 'TERM' })), { killproc: { action: 'killproc', pid, signal: 'TERM' } });
  let after: Record<string, unknown> = {};
  for (let i = 0; i < 50; i++) {
    after = ok<{ procinfo: Record<string, unknown> }>(await box.call('procinfo')).procinfo;
    if (!after[pid]) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(after[pid], undefined);
  assert.ok(after['1'], 'the sandbox itself lives on');
});

test('real: setsysctl net.ipv4.ip_forward in the sandbox only; sysctllist lists writable keys', { skip }, async (t) => {
  const box = await sandboxAgent(t);
  const KEY = 'net.ipv4.ip_forward';
  assert.ok(KEY.startsWith('net.'), "these tests only ever set net.* keys, which live in the sandbox's netns");
  const hostBefore = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();

  const list = ok<{ sysctllist: Record<string, string> }>(await box.call('sysctllist')).sysctllist;
  const old = list[KEY];
  assert.match(old ?? '', /^[01]$/);
  assert.equal(list['kernel.osrelease'], undefined, 'read-only keys are not configurable');
  assert.ok(Object.keys(list).length > 100);

  const next = old === '1' ? '0' : '1';
  const reply = ok(await box.call('setsysctl', { sysctl: KEY, value: next }));
  assert.deepEqual(reply, { setsysctl: { response: `${KEY}: ${old} -> ${next}`, sysctl: KEY, value: next } });
  assert.equal((await box.sh(`sysctl -n ${KEY}`)).trim(), next, 'read back inside the sandbox');
  assert.equal(ok<{ sysctllist: Record<string, string> }>(await box.call('sysctllist')).sysctllist[KEY], next);
  assert.equal(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(), hostBefore, 'the real host is untouched');

  error(await box.call('setsysctl', { sysctl: 'kernel.osrelease', value: '1.0' }), 400, 'sysctl');
  error(await box.call('setsysctl', { sysctl: 'net.no_such.key', value: '1' }), 400, 'sysctl');
  error(await box.call('setsysctl', { sysctl: 'net.ipv4', value: '1' }), 400, 'sysctl');
  error(await box.call('setsysctl', { sysctl: KEY, value: 'abc' }), 400, 'value');
  assert.equal((await box.sh(`sysctl -n ${KEY}`)).trim(), next, 'refused changes changed nothing');
  assert.equal(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(), hostBefore);
});

test('real: a loop-mounted image in the sandbox is an external mount; the root disk is not', { skip }, async (t) => {
  const box = await sandboxAgent(t);
  assert.deepEqual(ok(await box.call('externalmounts')), { externalmounts: {} });
  await box.sh('truncate -s 16M /tmp/disk.img && mkfs.ext4 -q -F /tmp/disk.img && mkdir -p /tmp/media && mount -o loop /tmp/disk.img /tmp/media');
  const device = (await box.sh('findmnt -n -o SOURCE /tmp/media')).trim();
  assert.match(device, /^\/dev\/loop\d+$/);
  const mounts = ok<{ externalmounts: Record<string, unknown> }>(await box.call('externalmounts')).externalmounts;
  assert.deepEqual(mounts, { [device]: { filesystem: 'ext4', path: '/tmp/media', type: 'UNKNOWN' } });
});

test('sensors and battery through the agent, with sysRoot aimed at a fake tree', { skip }, async (t) => {
  const sysRoot = fakeSys(LAPTOP_SYS);
  t.after(() => rmSync(sysRoot, { recursive: true, force: true }));
  const box = await sandboxAgent(t, sysRoot);
  assert.deepEqual(ok(await box.call('cputemps')), { cputemps: { cpu0: '48.0C', cpu1: '50.5C' } });
  assert.deepEqual(ok(await box.call('batteryinfo')), { batteryinfo: { battery: 'true', level: '76', status: 'offline', timeleft: '14400' } });
});

test('a sysctl value with shell metacharacters or option-like text reaches sysctl -w as one argument after --', async (t) => {
  const values = ['; rm -rf /', '$(id)', '`id`', 'a | b', 'x && y', '-rf', '--help'];
  const runner = new RecordingRunner([
    { match: ['stat', '-c', '%F:%a', '--', '/proc/sys/net/ipv4/ip_local_reserved_ports'], stdout: 'regular empty file:644\n' },
    { match: ['sysctl', '-n', '--', 'net.ipv4.ip_local_reserved_ports'], stdout: '\n' },
    {
      match: (argv) => argv[0] === 'sysctl' && argv[1] === '-w' && argv.length === 4,
      code: 255,
      stderr: 'sysctl: setting key "net.ipv4.ip_local_reserved_ports": Invalid argument\n',
    },
  ]);
  const agent = await startTestAgent({ platform: 'linux', runner });
  const client = await clientWithSession(agent);
  t.after(async () => {
    client.close();
    await agent.dispose();
  });
  for (const value of values) error(await client.call(SM, 'setsysctl', { sysctl: 'net.ipv4.ip_local_reserved_ports', value }), 400, 'value');
  const writes = runner.calls.filter((c) => c[1] === '-w');
  assert.deepEqual(
    writes,
    values.map((v) => ['sysctl', '-w', '--', `net.ipv4.ip_local_reserved_ports=${v}`]),
  );
});
