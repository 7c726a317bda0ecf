/**
 * Replication for real: two pools on zfs-fuse (test/helpers/zfs-fuse-sandbox.ts) and an OpenSSH
 * server started by the test on a free loopback port inside the sandbox's namespaces (openssh-server
 * unpacked, never installed; its own host key, config and log in the sandbox folder; /root a tmpfs
 * there, so authorized_keys never touches the host). The agent adds the task with root's password
 * (used once to install its key), then a first run sends the dataset whole and a second one only the
 * increment, both with progress events; the remote copy's files are read back. Skips with the reason
 * where zfs-fuse or sshd cannot start.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { agentFor, sessionClientFor, type Envelope, type TestClient } from '../helpers/agent.ts';
import { unpackDebianPackages } from '../helpers/debian-tools.ts';
import { startZfsFuse, ZFS_FUSE_PACKAGES, type ZfsFuseSandbox } from '../helpers/zfs-fuse-sandbox.ts';
import { expectError } from './services-support.ts';
import { okCall } from './powerd-support.ts';

const PASSWORD = 'repl-Pass-1 with spaces; $(and) `quotes`';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** sshd inside the zfs sandbox on 127.0.0.1:<port>, root may sign in with PASSWORD; or null after t.skip. */
async function startSshd(t: TestContext, zfs: ZfsFuseSandbox): Promise<number | null> {
  const ssh = await unpackDebianPackages(['openssh-server', 'libwrap0']);
  const tools = await unpackDebianPackages(ZFS_FUSE_PACKAGES);
  if (!ssh.ok || !tools.ok) {
    t.skip(`sshd cannot be unpacked: ${ssh.ok ? '' : ssh.reason} ${tools.ok ? '' : tools.reason}`.trim());
    return null;
  }
  const dir = join(zfs.dir, 'sshd');
  const port = await freePort();
  const config = [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${dir}/host_ed25519`,
    `PidFile ${dir}/sshd.pid`,
    'UsePAM no',
    'PermitRootLogin yes',
    'PasswordAuthentication yes',
    'KbdInteractiveAuthentication no',
    'StrictModes no',
    'LogLevel VERBOSE',
    // The remote's zfs is the unpacked one, on the same zfs-fuse daemon.
    `SetEnv PATH=${tools.env.PATH} LD_LIBRARY_PATH=${tools.env.LD_LIBRARY_PATH}`,
  ].join('\n');
  try {
    await zfs.sh(['mkdir', '-p', dir, '/run/sshd']);
    // /root and the account files only in the sandbox: a tmpfs and the /etc overlay.
    await zfs.sh(['mount', '-t', 'tmpfs', 'tmpfs', '/root']);
    await zfs.sh(['sh', '-c', 'getent passwd sshd >/dev/null || echo "sshd:x:199:65534::/run/sshd:/usr/sbin/nologin" >> /etc/passwd']);
    const pw = await zfs.runner.run(['chpasswd'], { input: `root:${PASSWORD}\n` });
    if (pw.code !== 0) throw new Error(`chpasswd: ${pw.stderr}`);
    await zfs.sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', `${dir}/host_ed25519`]);
    await zfs.runner.run(['tee', `${dir}/sshd_config`], { input: `${config}\n` });
    await zfs.sh(['env', `LD_LIBRARY_PATH=${ssh.env.LD_LIBRARY_PATH}`, join(ssh.root, 'usr/sbin/sshd'), '-f', `${dir}/sshd_config`, '-E', `${dir}/sshd.log`]);
  } catch (err) {
    t.skip(`sshd did not start: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
  return port;
}

const eventOf = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;

/** Runs the task and waits for its job's completion event; returns it with the progress seen on the way. */
async function runAndWait(root: TestClient): Promise<{ done: Record<string, unknown>; percents: number[]; log: string }> {
  const before = root.events.length;
  assert.deepEqual(await okCall(root, 'snapshot', 'runreplication', { dataset: 'src/data', host: '127.0.0.1' }), {
    runreplication: { dataset: 'src/data', host: '127.0.0.1' },
  });
  const isMine = (e: Envelope) => root.events.indexOf(e) >= before && eventOf(e).event_system === 'admin/snapshot' && eventOf(e).action === 'runreplication';
  const done = eventOf(await root.nextEvent((e) => isMine(e) && eventOf(e).state === 'finished'));
  const mine = root.events.filter(isMine).map(eventOf);
  const percents = mine.map((e) => Number.parseFloat(String(e.percent_done))).filter(Number.isFinite);
  const log = mine.map((e) => JSON.stringify(e)).join('\n');
  return { done, percents, log };
}

test('replication over a real sshd: key installed with the password once, a full then an incremental run with progress, remote data verified', async (t) => {
  const zfs = await startZfsFuse(t);
  if (!zfs) return;
  const port = await startSshd(t, zfs);
  if (port === null) return;
  const srcMnt = await zfs.createPool('src', { vdevs: 1, sizeMiB: 128 });
  const dstMnt = await zfs.createPool('dst', { vdevs: 1, sizeMiB: 128 });
  await zfs.sh(['zfs', 'create', 'src/data']);
  // Enough data for several progress steps.
  await zfs.sh(['dd', 'if=/dev/urandom', `of=${srcMnt}/data/big`, 'bs=1M', 'count=6']);
  await zfs.runner.run(['tee', `${srcMnt}/data/note`], { input: 'first version\n' });

  const agent = await agentFor(t, { platform: 'linux', runner: createRunner({ prefix: zfs.prefix }), zfsTools: true });
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher', 'life-preserver']);

  const task = { host: '127.0.0.1', port, user: 'root', dataset: 'src/data', remotedataset: 'dst/copy', frequency: 'manual' };
  // A wrong password installs nothing and stores nothing.
  expectError(await root.call('snapshot', 'addreplication', { ...task, password: 'wrong' }), 500);
  assert.deepEqual(await okCall(root, 'snapshot', 'listreplication'), { listreplication: {} });
  const added = await okCall(root, 'snapshot', 'addreplication', { ...task, password: PASSWORD });
  assert.deepEqual(added, {
    addreplication: { frequency: 'manual', host: '127.0.0.1', ldataset: 'src/data', port: String(port), rdataset: 'dst/copy', user: 'root' },
  });
  assert.ok(!JSON.stringify(added).includes(PASSWORD), 'no password in the reply');
  const keys = await zfs.sh(['cat', '/root/.ssh/authorized_keys']);
  assert.match(keys, /^ssh-ed25519 \S+ hostadm-replication@/);

  const first = await runAndWait(root);
  assert.equal(first.done.success, 'true', first.log);
  assert.equal(first.done.incremental, 'false');
  assert.ok(
    first.percents.some((p) => p > 0 && p < 100),
    `progress between 0 and 100: ${first.percents.join(',')} ${first.log}`,
  );
  assert.equal((await zfs.sh(['cat', `${dstMnt}/copy/note`])).trim(), 'first version');
  assert.equal(await zfs.sh(['cmp', `${srcMnt}/data/big`, `${dstMnt}/copy/big`]), '');
  const afterFirst = await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'dst/copy']);
  assert.equal(afterFirst.trim().split('\n').length, 1);

  await zfs.runner.run(['tee', `${srcMnt}/data/note`], { input: 'second version\n' });
  const second = await runAndWait(root);
  assert.equal(second.done.success, 'true', second.log);
  assert.equal(second.done.incremental, 'true', second.log);
  assert.match(String(second.done.snapshot), /^src\/data@hostadm-repl_127\.0\.0\.1_\d{8}T\d{6}Z/);
  // The increment is far smaller than the first, full copy.
  assert.ok(Number(second.done.bytes) < Number(first.done.bytes) / 4, `${second.done.bytes} vs ${first.done.bytes}`);
  assert.equal((await zfs.sh(['cat', `${dstMnt}/copy/note`])).trim(), 'second version');
  // Only the newest of the series is kept, on both sides.
  const remoteSnaps = (await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'dst/copy'])).trim().split('\n');
  const localSnaps = (await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'src/data'])).trim().split('\n');
  assert.equal(remoteSnaps.length, 1);
  assert.deepEqual(
    localSnaps.map((s) => s.split('@')[1]),
    remoteSnaps.map((s) => s.split('@')[1]),
  );

  // initreplication clears the remote copy; removereplication drops the task and its snapshots, not the data.
  assert.deepEqual(await okCall(root, 'snapshot', 'initreplication', { dataset: 'src/data', host: '127.0.0.1' }), {
    initreplication: { dataset: 'src/data', host: '127.0.0.1' },
  });
  const gone = await zfs.runner.run(['zfs', 'list', 'dst/copy']);
  assert.notEqual(gone.code, 0);
  const third = await runAndWait(root);
  assert.equal(third.done.success, 'true', third.log);
  assert.equal(third.done.incremental, 'false', 'a full copy again after initreplication');
  assert.deepEqual(await okCall(root, 'snapshot', 'removereplication', { dataset: 'src/data', host: '127.0.0.1' }), {
    removereplication: { dataset: 'src/data', host: '127.0.0.1' },
  });
  assert.equal((await zfs.sh(['cat', `${dstMnt}/copy/note`])).trim(), 'second version');
  assert.equal((await zfs.sh(['zfs', 'list', '-H', '-o', 'name', '-t', 'snapshot', '-r', 'src/data'])).trim(), '');
});
