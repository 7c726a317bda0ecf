/**
 * systemmanager on FreeBSD: the parsers against real FreeBSD output (test/fixtures/freebsd/
 * systemmanager, each with its source noted), every action through an agent whose runner replays
 * that output, a snapshot of the argv each action runs, and hostile input that must run nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import {
  MEMORY_SYSCTLS,
  TOP_ARGV,
  externalMountsFromMountP,
  memoryFromSysctls,
  parseApm,
  parseBoottime,
  parseCpTimes,
  parseCpuTemperatures,
  parseSysctlLines,
  parseTop,
} from '@hostadm/agent/platforms/freebsd/parse/systemmanager.ts';
import { freebsdSystemmanagerPort } from '@hostadm/agent/platforms/freebsd/systemmanager/index.ts';
import { busyBetween } from '@hostadm/agent/platforms/common/cpu-sampler.ts';
import { startTestAgent } from '../helpers/agent.ts';
import { clientWithSession, error, HOSTILE, ok } from './systemmanager-helpers.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'freebsd', 'systemmanager');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const SM = 'systemmanager';

test('top(1): every row of the real listing, columns in place', () => {
  const rows = parseTop(fixture('top.txt'));
  assert.equal(rows.length, 12);
  assert.deepEqual(rows[0], {
    pid: 95139,
    username: 'klarabsd',
    thr: '1',
    pri: '23',
    nice: '0',
    size: '14M',
    res: '3988K',
    state: 'CPU3',
    cpu: '3',
    time: '0:01',
    wcpu: '0.42%',
    command: 'top',
  });
  const nfsd = rows.find((r) => r.pid === 83679);
  assert.deepEqual([nfsd?.thr, nfsd?.pri, nfsd?.state, nfsd?.cpu, nfsd?.command], ['32', '52', 'rpcsvc', '1', 'nfsd']);
  assert.equal(rows.find((r) => r.pid === 88853)?.res, '146M');
});

test('top(1): a wait channel with a space and an argv with spaces (constructed rows in the same layout)', () => {
  const text = [
    '  PID USERNAME    THR PRI NICE   SIZE    RES STATE    C   TIME    WCPU COMMAND',
    '   11 root          4 155 ki31     0B    64K CPU0     0  95.5H 390.77% [idle]',
    ' 4321 root          1  20    0    13M  2380K zfs te   1   0:00   0.00% /usr/sbin/cron -s',
  ].join('\n');
  const [idle, cron] = parseTop(text);
  assert.deepEqual([idle?.nice, idle?.time, idle?.wcpu, idle?.command], ['ki31', '95.5H', '390.77%', '[idle]']);
  assert.deepEqual([cron?.state, cron?.cpu, cron?.command], ['zfs te', '1', '/usr/sbin/cron -s']);
});

test('kern.cp_times: five counters per CPU; busy is what was not idle between two samples', () => {
  const first = parseCpTimes(fixture('cp_times.txt'));
  assert.deepEqual(first, [
    { idle: 30896, total: 31101 },
    { idle: 30787, total: 31101 },
  ]);
  // A later sample (constructed): cpu0 spent 60 of 100 ticks idle, cpu1 all 100.
  const later = parseCpTimes('146 0 95 4 30956 205 0 103 6 30887');
  const usage = busyBetween(first, later);
  assert.deepEqual(usage.perCpu.map(Math.round), [40, 0]);
  assert.equal(Math.round(usage.total), 20);
});

test('vm.stats: page counts become whole MiB; the ZFS ARC stands in for the emptied cache queue', () => {
  const values = parseSysctlLines(fixture('memory-sysctl.txt'));
  assert.deepEqual(memoryFromSysctls(values), { active: 11, inactive: 2, cache: 0, free: 1883, wired: 61 });
  const withArc = { ...values, 'kstat.zfs.misc.arcstats.size': '1073741824' };
  assert.equal(memoryFromSysctls(withArc).cache, 1024);
});

test('dev.cpu temperatures: one per CPU with amdtemp, none without a sensor driver', () => {
  const temps = parseCpuTemperatures(fixture('cputemps-amdtemp.txt'));
  assert.equal(temps.length, 24);
  assert.deepEqual(temps[0], { cpu: 0, celsius: 43.1 });
  assert.deepEqual(temps[23], { cpu: 23, celsius: 43.1 });
  assert.deepEqual(parseCpuTemperatures(fixture('dev-cpu-no-temp.txt')), []);
});

test('apm -alt: no battery, on battery, on AC', () => {
  assert.deepEqual(parseApm(fixture('apm-desktop.txt')), { present: false });
  assert.deepEqual(parseApm(fixture('apm-discharging.txt')), { present: true, level: 62, status: 'offline', secondsLeft: 9840 });
  assert.deepEqual(parseApm(fixture('apm-charging.txt')), { present: true, level: 85, status: 'charging', secondsLeft: null });
  assert.deepEqual(parseApm('2\n40\n600\n'), { present: true, level: 40, status: 'on backup', secondsLeft: 600 });
});

test("mount -p: the system's own mounts are not external; USB, DVD, disk and SD card are", () => {
  assert.deepEqual(externalMountsFromMountP(fixture('mount-p-ufs.txt')), []);
  assert.deepEqual(externalMountsFromMountP(fixture('mount-p-zfs.txt')), []);
  assert.deepEqual(externalMountsFromMountP(fixture('mount-p-external.txt')), [
    { device: '/dev/da0s1', filesystem: 'msdosfs', path: '/media/usb', type: 'USB' },
    { device: '/dev/cd0', filesystem: 'cd9660', path: '/cdrom', type: 'DVD' },
    { device: '/dev/ada1p1', filesystem: 'ufs', path: '/data', type: 'HDRIVE' },
    { device: '/dev/mmcsd0s1', filesystem: 'msdosfs', path: '/media/My Card', type: 'SDCARD' },
  ]);
});

test('sysctl name: value lines, a value spanning lines kept whole; kern.boottime seconds', () => {
  const all = parseSysctlLines(fixture('sysctl-aW.txt'));
  assert.equal(Object.keys(all).length, 13);
  assert.equal(all['kern.motd'], 'Welcome to\nthe machine');
  assert.equal(all['kern.corefile'], '%N.core');
  const info = parseSysctlLines(fixture('sysinfo-sysctl.txt'));
  assert.equal(info['hw.model'], 'Intel(R) Xeon(R) CPU           X5675  @ 3.07GHz');
  assert.equal(parseBoottime(info['kern.boottime'] ?? ''), 1789900651);
});

/** Replies for every command the port runs, from the fixtures (uname values from the same captures). */
function freebsdReplies(): CannedReply[] {
  return [
    { match: ['sysctl', '-i', ...MEMORY_SYSCTLS], stdout: fixture('memory-sysctl.txt') },
    { match: ['sysctl', '-n', 'kern.cp_times'], stdout: fixture('cp_times.txt'), once: true },
    { match: ['sysctl', '-n', 'kern.cp_times'], stdout: '146 0 95 4 30956 205 0 103 6 30887\n' },
    { match: ['sysctl', 'dev.cpu'], stdout: fixture('cputemps-amdtemp.txt') },
    { match: [...TOP_ARGV], stdout: fixture('top.txt') },
    { match: ['ps', '-p', '91467', '-o', 'pid='], stdout: '91467\n' },
    { match: ['ps', '-p', '4242', '-o', 'pid='], code: 1 },
    { match: ['kill', '-s', 'TERM', '--', '91467'] },
    { match: ['apm', '-alt'], stdout: fixture('apm-discharging.txt') },
    { match: ['mount', '-p'], stdout: fixture('mount-p-external.txt') },
    // The sshpilot capture (FreeBSD 14.5-RELEASE amd64, host "freebsd") and uname -i's GENERIC.
    { match: ['uname', '-m'], stdout: 'amd64\n' },
    { match: ['uname', '-r'], stdout: '14.5-RELEASE\n' },
    { match: ['uname', '-i'], stdout: 'GENERIC\n' },
    { match: ['freebsd-version'], stdout: '14.5-RELEASE\n' },
    { match: ['hostname'], stdout: 'freebsd\n' },
    { match: ['sysctl', 'hw.model', 'hw.ncpu', 'hw.realmem', 'kern.boottime'], stdout: fixture('sysinfo-sysctl.txt') },
    { match: ['sysctl', '-aW'], stdout: fixture('sysctl-aW.txt') },
    { match: ['sysctl', '-WN', '--', 'net.inet.ip.forwarding'], stdout: 'net.inet.ip.forwarding\n' },
    { match: ['sysctl', '-n', '--', 'net.inet.ip.forwarding'], stdout: '0\n', once: true },
    { match: ['sysctl', '--', 'net.inet.ip.forwarding=1'], stdout: 'net.inet.ip.forwarding: 0 -> 1\n' },
    { match: ['sysctl', '-n', '--', 'net.inet.ip.forwarding'], stdout: '1\n' },
    { match: ['sysctl', '-WN', '--', 'kern.ostype'], stdout: '' },
    { match: ['sysctl', '-WN', '--', 'kern.nosuch'], code: 1, stderr: "sysctl: unknown oid 'kern.nosuch'\n" },
    { match: ['sysctl', '-WN', '--', 'kern.ipc'], stdout: 'kern.ipc.maxsockbuf\nkern.ipc.soacceptqueue\n' },
    { match: ['sysctl', '-WN', '--', 'kern.maxfiles'], stdout: 'kern.maxfiles\n' },
    { match: ['sysctl', '-n', '--', 'kern.maxfiles'], stdout: '260942\n' },
    { match: ['sysctl', '--', 'kern.maxfiles=lots'], code: 1, stderr: "sysctl: invalid integer 'lots'\n" },
    { match: ['shutdown', '-p', 'now'] },
    { match: ['shutdown', '-r', 'now'] },
  ];
}

async function freebsdAgent(t: { after: (fn: () => unknown) => void }, replies: CannedReply[] = freebsdReplies()) {
  const runner = new RecordingRunner(replies);
  const agent = await startTestAgent({ platform: 'freebsd', runner });
  const client = await clientWithSession(agent);
  t.after(async () => {
    client.close();
    await agent.dispose();
  });
  return { agent, runner, client };
}

const ACTIONS: Array<[string, Record<string, unknown>]> = [
  ['memorystats', {}],
  ['cpupercentage', {}],
  ['cputemps', {}],
  ['procinfo', {}],
  ['killproc', { pid: '91467', signal: 'TERM' }],
  ['batteryinfo', {}],
  ['externalmounts', {}],
  ['systemmanager', {}],
  ['sysctllist', {}],
  ['setsysctl', { sysctl: 'net.inet.ip.forwarding', value: '1' }],
  ['halt', {}],
  ['reboot', {}],
];

test('every action through the agent: contract-shaped replies from FreeBSD output, and the argv each runs', async (t) => {
  const { runner, client } = await freebsdAgent(t);
  const argvByAction: Record<string, string[][]> = {};
  const replies: Record<string, unknown> = {};
  for (const [action, args] of ACTIONS) {
    const from = runner.calls.length;
    replies[action] = ok(await client.call(SM, action, args));
    argvByAction[action] = runner.calls.slice(from);
  }
  assert.deepEqual(replies.memorystats, { memorystats: { active: '11', cache: '0', free: '1883', inactive: '2', wired: '61' } });
  assert.deepEqual(replies.cpupercentage, { cpupercentage: { busytotal: '20', cpu0: { busy: '40' }, cpu1: { busy: '0' } } });
  assert.equal((replies.cputemps as { cputemps: Record<string, string> }).cputemps.cpu7, '43.1C');
  const top = (replies.procinfo as { procinfo: Record<string, Record<string, string>> }).procinfo;
  assert.deepEqual(top['91467'], {
    username: 'klarabsd',
    thr: '1',
    pri: '20',
    nice: '0',
    size: '21M',
    res: '9536K',
    state: 'select',
    cpu: '1',
    time: '0:00',
    wcpu: '0.04%',
    command: 'sshd',
  });
  assert.deepEqual(replies.killproc, { killproc: { action: 'killproc', pid: '91467', signal: 'TERM' } });
  assert.deepEqual(replies.batteryinfo, { batteryinfo: { battery: 'true', level: '62', status: 'offline', timeleft: '9840' } });
  assert.equal(Object.keys((replies.externalmounts as { externalmounts: object }).externalmounts).length, 4);
  const info = (replies.systemmanager as { systemmanager: Record<string, unknown> }).systemmanager;
  assert.deepEqual(
    { ...info, uptime: 'x' },
    {
      arch: 'amd64',
      cpucores: '2',
      cputype: 'Intel(R) Xeon(R) CPU           X5675  @ 3.07GHz',
      hostname: 'freebsd',
      kernelident: 'GENERIC',
      kernelversion: '14.5-RELEASE',
      systemversion: '14.5-RELEASE',
      totalmem: 2048,
      uptime: 'x',
    },
  );
  assert.match(info.uptime as string, /^up /);
  assert.equal((replies.sysctllist as { sysctllist: Record<string, string> }).sysctllist['net.inet.ip.forwarding'], '0');
  assert.deepEqual(replies.setsysctl, { setsysctl: { response: 'net.inet.ip.forwarding: 0 -> 1', sysctl: 'net.inet.ip.forwarding', value: '1' } });
  assert.deepEqual(replies.halt, { halt: { response: 'true' } });
  t.assert.snapshot(argvByAction);
});

test("uptime from kern.boottime against the host clock, in uptime(1)'s words", async () => {
  const runner = new RecordingRunner(freebsdReplies());
  const port = freebsdSystemmanagerPort({ runner, dataDir: '/nonexistent' }, { now: () => (1789900651 + 2 * 86400 + 5 * 3600 + 9 * 60) * 1000 });
  const info = await port.systemInfo();
  assert.equal(Math.round(info.uptimeSeconds), 2 * 86400 + 5 * 3600 + 9 * 60);
  const { formatUptime } = await import('@hostadm/agent/classes/systemmanager.ts');
  assert.equal(formatUptime(info.uptimeSeconds), 'up 2 days 5:09');
  assert.equal(formatUptime(3 * 60), 'up 3 mins');
  assert.equal(formatUptime(86400 + 3600), 'up 1 day 1 hr');
  assert.equal(formatUptime(12), 'up 12 secs');
});

test('refusals on FreeBSD: unknown, read-only and group sysctls, a refused value, a missing process', async (t) => {
  const { runner, client } = await freebsdAgent(t);
  error(await client.call(SM, 'setsysctl', { sysctl: 'kern.ostype', value: 'Linux' }), 400, 'sysctl');
  error(await client.call(SM, 'setsysctl', { sysctl: 'kern.nosuch', value: '1' }), 400, 'sysctl');
  error(await client.call(SM, 'setsysctl', { sysctl: 'kern.ipc', value: '1' }), 400, 'sysctl');
  error(await client.call(SM, 'setsysctl', { sysctl: 'kern.maxfiles', value: 'lots' }), 400, 'value');
  error(await client.call(SM, 'killproc', { pid: '4242', signal: 'TERM' }), 400, 'pid');
  error(await client.call(SM, 'killproc', { pid: String(process.pid), signal: 'KILL' }), 400, 'pid');
  // Only the checks ran: nothing was set and nothing was signalled.
  assert.ok(runner.calls.every((c) => c[0] !== 'kill' && !(c[0] === 'sysctl' && c[1] === '--' && c[2] !== 'kern.maxfiles=lots')));
  assert.ok(!runner.calls.some((c) => c.join(' ').includes('kern.ostype=')));
});

test('hostile strings in every argument: 400 naming the field, and no command runs', async (t) => {
  const { runner, client } = await freebsdAgent(t, []);
  for (const bad of HOSTILE) {
    error(await client.call(SM, 'killproc', { pid: bad, signal: 'TERM' }), 400, 'pid');
    error(await client.call(SM, 'killproc', { pid: '91467', signal: bad }), 400, 'signal');
    error(await client.call(SM, 'setsysctl', { sysctl: bad, value: '1' }), 400, 'sysctl');
  }
  for (const bad of ['line\nbreak', 'nul\u0000byte', 'tab\there', 'x'.repeat(100_000)]) {
    error(await client.call(SM, 'setsysctl', { sysctl: 'kern.corefile', value: bad }), 400, 'value');
  }
  assert.deepEqual(runner.calls, []);
});

test('shell metacharacters and option-like text in a sysctl value reach sysctl(8) as one plain argument', async (t) => {
  const values = ['; rm -rf /', '$(id)', '`id`', 'a | b', 'x && y', '-rf', '--help'];
  const replies: CannedReply[] = [
    { match: ['sysctl', '-WN', '--', 'kern.corefile'], stdout: 'kern.corefile\n' },
    { match: ['sysctl', '-n', '--', 'kern.corefile'], stdout: '%N.core\n' },
    { match: (argv) => argv[0] === 'sysctl' && argv[1] === '--' && argv.length === 3 },
  ];
  const { runner, client } = await freebsdAgent(t, replies);
  for (const value of values) ok(await client.call(SM, 'setsysctl', { sysctl: 'kern.corefile', value }));
  const sets = runner.calls.filter((c) => c[1] === '--' && c[2]?.startsWith('kern.corefile='));
  assert.deepEqual(
    sets,
    values.map((v) => ['sysctl', '--', `kern.corefile=${v}`]),
  );
});

test("batteryinfo: the level stays within the spec's 1 to 99 (a full battery reads 99, an empty one 1)", async (t) => {
  for (const [apm, level, status] of [
    ['1\n100\n-1\n', '99', 'charging'],
    ['0\n0\n120\n', '1', 'offline'],
    ['0\n62\n9840\n', '62', 'offline'],
  ] as const) {
    const { client } = await freebsdAgent(t, [{ match: ['apm', '-alt'], stdout: apm }, ...freebsdReplies()]);
    const reply = ok(await client.call(SM, 'batteryinfo')) as { batteryinfo: { level: string; status: string } };
    assert.equal(reply.batteryinfo.level, level, `apm life ${apm.split('\n')[1]}`);
    assert.equal(reply.batteryinfo.status, status);
  }
});
