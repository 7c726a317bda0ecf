/**
 * The argv every action runs on Linux, as the FreeBSD tests snapshot theirs (services has its own in
 * services-linux.test.ts). A real agent on the Linux platform whose runner is a RecordingRunner
 * answering like a small Debian host (outputs from test/fixtures/linux where they were captured);
 * each action's commands, and what went to their standard input, are compared with the snapshot.
 * Reads of /proc and /sys (memory, CPU ticks, sensors, battery) are not commands and do not appear.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { PS_ARGV, LSBLK_ARGV } from '@hostadm/agent/platforms/linux/parse/systemmanager.ts';
import { FIND_FORMAT, STAT_FORMAT } from '@hostadm/agent/platforms/linux/parse/fs.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/systemmanager/${name}`, import.meta.url), 'utf8');

const PASSWD = 'root:x:0:0:root:/root:/bin/bash\nadmin:x:1001:1001:Admin:/home/admin:/bin/sh\noperator:x:1002:1002::/home/operator:/bin/sh\n';
const SHADOW = 'root:*:19000:0:99999:7:::\nadmin:$y$j9T$salt$hash:19000:0:99999:7:::\noperator:*:19000::::::\n';
const GROUP = 'root:x:0:\nwheel:x:10:admin\nstaff:x:50:admin,operator\nadmin:x:1001:\noperator:x:1002:\nguest:x:1003:\n';
const IP_LINK = JSON.stringify([{ ifname: 'lo', link_type: 'loopback', address: '00:00:00:00:00:00', flags: ['LOOPBACK', 'UP', 'LOWER_UP'] }]);
const IP_ADDR = JSON.stringify([{ ifname: 'lo', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8 }] }]);

/** A directory record of STAT_FORMAT (mode 040755 in hex). */
const dirStat = (path: string) => `0 0 41ed ${path}\0`;

function debianRunner(): RecordingRunner {
  return new RecordingRunner([
    { match: ['getent', 'passwd'], stdout: PASSWD },
    { match: ['getent', 'shadow'], stdout: SHADOW },
    { match: ['getent', 'group'], stdout: GROUP },
    { match: ['getent', 'group', '--', 'staff'], stdout: 'staff:x:50:admin,operator\n' },
    { match: (argv) => argv[0] === 'test', code: 1 },
    { match: ['lsblk', '-J', '-b', '-o', 'NAME,RM,SIZE,MODEL,TYPE'], stdout: '{"blockdevices":[]}' },
    { match: (argv) => ['useradd', 'userdel', 'usermod', 'chpasswd', 'chage', 'groupadd', 'groupdel', 'gpasswd'].includes(argv[0] as string) },
    { match: ['realpath', '-m', '-z', '--', '/', '/home', '/home/admin'], stdout: '/\0/home\0/home/admin\0' },
    { match: ['stat', '-L', '--printf', STAT_FORMAT, '--', '/', '/home', '/home/admin'], stdout: dirStat('/') + dirStat('/home') + dirStat('/home/admin') },
    { match: ['id', '-u', '--', 'operator'], stdout: '1002\n' },
    { match: ['id', '-G', '--', 'operator'], stdout: '1002 50\n' },
    {
      match: (argv) => argv.includes('find') && argv.includes(FIND_FORMAT),
      stdout: 'f\0f\0admin\0admin\x005\0\0notes.txt\0d\0d\0admin\0admin\x004096\0\0src\0',
    },
    { match: ['ip', '-j', '-d', 'link', 'show'], stdout: IP_LINK },
    { match: ['ip', '-j', 'addr', 'show'], stdout: IP_ADDR },
    { match: [...PS_ARGV], stdout: fixture('ps.txt') },
    { match: ['ps', '-p', '4242', '-o', 'pid='], stdout: ' 4242\n' },
    { match: ['kill', '-s', 'TERM', '--', '4242'] },
    { match: [...LSBLK_ARGV], stdout: fixture('lsblk-removable.json') },
    { match: ['cat', '/proc/self/mountinfo'], stdout: fixture('mountinfo-removable.txt') },
    { match: ['uname', '-m'], stdout: 'x86_64\n' },
    { match: ['uname', '-r'], stdout: '6.1.0-18-amd64\n' },
    { match: ['uname', '-v'], stdout: '#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1\n' },
    { match: ['hostname'], stdout: 'web1\n' },
    { match: ['cat', '/etc/os-release'], stdout: 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n' },
    { match: ['sysctl', '-a'], stdout: 'kernel.hostname = web1\nvm.swappiness = 60\n' },
    { match: ['find', '/proc/sys', '-type', 'f', '-perm', '-u=w'], stdout: '/proc/sys/kernel/hostname\n/proc/sys/vm/swappiness\n' },
    { match: ['stat', '-c', '%F:%a', '--', '/proc/sys/vm/swappiness'], stdout: 'regular file:644\n' },
    { match: ['sysctl', '-n', '--', 'vm.swappiness'], stdout: '60\n', once: true },
    { match: ['sysctl', '-w', '--', 'vm.swappiness=10'] },
    { match: ['sysctl', '-n', '--', 'vm.swappiness'], stdout: '10\n' },
    { match: (argv) => argv[0] === 'shutdown' },
  ]);
}

type Call = [who: 'root' | 'operator', className: string, action: string, args: Record<string, unknown>];

const CALLS: Call[] = [
  ['root', 'users', 'usershow', {}],
  ['root', 'users', 'groupshow', {}],
  ['root', 'users', 'useradd', { name: 'bob', password: 'pw; $(reboot)' }],
  [
    'root',
    'users',
    'useradd',
    {
      name: 'carol',
      password: 'secret',
      uid: '2001',
      comment: 'Carol C, Room 2',
      home_dir: '/home/carol',
      expire: '20-Mar-2037',
      shell: '/bin/bash',
      group: 'staff',
      other_groups: ['wheel', 'staff'],
    },
  ],
  ['root', 'users', 'useradd', { name: 'svc', password: 'secret', home_dir: '/nonexistent' }],
  ['root', 'users', 'userdelete', { name: 'admin' }],
  ['root', 'users', 'userdelete', { name: 'admin', clean_home: 'false' }],
  ['root', 'users', 'usermod', { name: 'admin', newname: 'boss', comment: 'The Boss', other_groups: 'wheel', password: 'new pw', expire: '0' }],
  ['operator', 'users', 'usermod', { name: 'operator', shell: '/bin/sh' }],
  ['root', 'users', 'groupadd', { name: 'crew', gid: '3000', users: ['admin', 'operator'] }],
  ['root', 'users', 'groupadd', { name: 'empty' }],
  ['root', 'users', 'groupdelete', { name: 'guest' }],
  ['root', 'users', 'groupmod', { name: 'staff', users: ['admin'] }],
  ['root', 'users', 'groupmod', { name: 'staff', add_users: ['root'] }],
  ['root', 'users', 'groupmod', { name: 'staff', remove_users: ['operator'] }],
  ['root', 'users', 'personacrypt_listdevs', {}],
  ['root', 'fs', 'dirlist', { dir: '/home/admin' }],
  ['operator', 'fs', 'dirlist', { dir: '/home/admin' }],
  ['root', 'network', 'list-devices', {}],
  ['root', 'systemmanager', 'memorystats', {}],
  ['root', 'systemmanager', 'cpupercentage', {}],
  ['root', 'systemmanager', 'cputemps', {}],
  ['root', 'systemmanager', 'procinfo', {}],
  ['root', 'systemmanager', 'killproc', { pid: '4242', signal: 'TERM' }],
  ['root', 'systemmanager', 'externalmounts', {}],
  ['root', 'systemmanager', 'batteryinfo', {}],
  ['root', 'systemmanager', 'systemmanager', {}],
  ['root', 'systemmanager', 'sysctllist', {}],
  ['root', 'systemmanager', 'setsysctl', { sysctl: 'vm.swappiness', value: '10' }],
  ['root', 'systemmanager', 'halt', {}],
  ['root', 'systemmanager', 'reboot', {}],
];

test('each Linux action runs the commands an administrator would; passwords only on stdin (argv snapshot)', async (t) => {
  const runner = debianRunner();
  const agent = await startTestAgent({ platform: 'linux', runner });
  t.after(() => agent.dispose());
  const clients = { root: await sessionClientFor(t, agent, 'root', 'full'), operator: await sessionClientFor(t, agent, 'operator', 'limited') };
  const lines: string[] = [''];
  for (const [who, className, action, args] of CALLS) {
    const from = runner.calls.length;
    const reply = await clients[who].call(className, action, args);
    assert.equal(reply.name, 'response', `${className} ${action}: ${JSON.stringify(reply.args)}`);
    lines.push(`${who}: ${className} ${action} ${JSON.stringify(args)}:`);
    for (let i = from; i < runner.calls.length; i++) {
      const input = runner.options[i]?.input;
      lines.push(`  ${JSON.stringify(runner.calls[i])}${input === undefined ? '' : `  stdin ${JSON.stringify(input)}`}`);
    }
  }
  for (const argv of runner.calls) for (const pw of ['pw; $(reboot)', 'secret', 'new pw']) assert.ok(!argv.some((a) => a.includes(pw)), 'a password in argv');
  t.assert.snapshot(`${lines.join('\n')}\n`, { serializers: [(v) => String(v)] });
});
