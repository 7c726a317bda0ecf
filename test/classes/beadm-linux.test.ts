/**
 * Linux beadm: boot environments only on a ZFS root with zectl. Detection from /proc/mounts (a fake
 * proc tree), the class left out of `query` and every action answering 501 "unsupported on this host"
 * where they are missing, and zectl's command lines where they are there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { beadmUnavailable, rootFsType } from '@hostadm/agent/platforms/linux/beadm.ts';
import { beToolPort, ZECTL } from '@hostadm/agent/platforms/common/be-tool.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';

const EXT4_ROOT = 'sysfs /sys sysfs rw 0 0\n/dev/sda1 / ext4 rw,relatime 0 0\nproc /proc proc rw 0 0\n';
const ZFS_ROOT = 'rpool/ROOT/ubuntu_abc123 / zfs rw,relatime,xattr,posixacl 0 0\nrpool/USERDATA/home /home zfs rw 0 0\n';

function procWith(mounts: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-proc-'));
  writeFileSync(join(dir, 'mounts'), mounts);
  return dir;
}

test('the root filesystem type and what a host needs for boot environments', (t) => {
  assert.equal(rootFsType(EXT4_ROOT), 'ext4');
  assert.equal(rootFsType(ZFS_ROOT), 'zfs');
  // An overlay mounted over / later (containers) is what / is.
  assert.equal(rootFsType(`${ZFS_ROOT}overlay / overlay rw 0 0\n`), 'overlay');
  const ext4 = procWith(EXT4_ROOT);
  const zfs = procWith(ZFS_ROOT);
  t.after(() => [ext4, zfs].forEach((d) => rmSync(d, { recursive: true, force: true })));
  assert.match(beadmUnavailable({ procRoot: ext4 }, () => true) ?? '', /need a ZFS root .* \/ is ext4/);
  assert.match(beadmUnavailable({ procRoot: zfs }, () => false) ?? '', /zectl is not installed/);
  assert.equal(
    beadmUnavailable({ procRoot: zfs }, (c) => c === 'zectl'),
    null,
  );
});

test('without a ZFS root: admin/beadm is not in query and every action is 501 unsupported on this host', async (t) => {
  const procRoot = procWith(EXT4_ROOT);
  const runner = new RecordingRunner([{ match: () => true, stdout: '' }]);
  const agent = await startTestAgent({ platform: 'linux', runner, procRoot });
  t.after(async () => {
    await agent.dispose();
    rmSync(procRoot, { recursive: true, force: true });
  });
  const root = await sessionClientFor(t, agent, 'root', 'full');
  const query = (await root.request('rpc', 'query', {})).args as Record<string, string>;
  assert.equal(query['admin/beadm'], undefined);
  assert.ok(query['admin/users'], 'query still lists the served classes');
  runner.calls.length = 0;
  for (const [action, args] of [
    ['listbes', {}],
    ['createbe', { newbe: 'x' }],
    ['renamebe', { source: 'y', target: 'x' }],
    ['activatebe', { target: 'x' }],
    ['destroybe', { target: 'x' }],
    ['mountbe', { be: 'x' }],
    ['umountbe', { be: 'x' }],
  ] as const) {
    const err = expectError(await root.call('beadm', action, args), 501);
    assert.match(err.message, /^admin\/beadm is unsupported on this host: boot environments need a ZFS root filesystem managed by zectl; \/ is ext4$/);
  }
  assert.deepEqual(runner.calls, [], 'nothing ran');
});

test('zectl command lines; it cannot mount at a chosen directory (501 naming mountpoint)', async () => {
  const runner = new RecordingRunner([
    { match: ['zectl', 'list', '-H'], stdout: 'default\tNR\t/\t2020-03-02 01:09\nbefore-upgrade\t-\t-\t2020-04-11 18:22\n' },
    { match: ['zectl', 'mount', 'before-upgrade'], stdout: '/tmp/zectl-before-upgrade-Xa1b2\n' },
    { match: (argv) => argv[0] === 'zectl', stdout: '' },
  ]);
  const port = beToolPort(runner, async () => ZECTL);
  assert.deepEqual(await port.list(), {
    default: { active: 'NR', mount: '/', space: '-', date: '2020-03-02', nick: '01:09' },
    'before-upgrade': { active: '-', mount: '-', space: '-', date: '2020-04-11', nick: '18:22' },
  });
  assert.equal(await port.mount('before-upgrade'), '/tmp/zectl-before-upgrade-Xa1b2');
  await assert.rejects(port.mount('before-upgrade', '/mnt/x'), (e: Error & { code?: string }) => e.code === 'UNSUPPORTED' && /^mountpoint:/.test(e.message));
  await port.unmount('before-upgrade');
  await port.destroy('before-upgrade');
  await port.create('new', 'default');
  assert.deepEqual(runner.calls.slice(-3), [
    ['zectl', 'unmount', 'before-upgrade'],
    ['zectl', 'destroy', '-F', 'before-upgrade'],
    ['zectl', 'create', '-e', 'default', 'new'],
  ]);
});
