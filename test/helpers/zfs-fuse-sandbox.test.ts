/** The zfs-fuse sandbox itself: a pool on file vdevs inside, nothing of it left outside afterwards. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { startZfsFuse } from './zfs-fuse-sandbox.ts';

test('zfs-fuse sandbox: a pool is created and listed inside; the host keeps no /etc/zfs, mount or process', async (t) => {
  const hadEtcZfs = existsSync('/etc/zfs');
  const hadVarLibZfs = existsSync('/var/lib/zfs');
  const zfs = await startZfsFuse(t);
  if (!zfs) return;
  const mountpoint = await zfs.createPool('sbx');
  assert.match(await zfs.sh(['zpool', 'list', '-H', '-o', 'name,health']), /^sbx\tONLINE$/m);
  await zfs.sh(['sh', '-c', `echo inside > ${mountpoint}/file`]);
  assert.equal((await zfs.sh(['cat', `${mountpoint}/file`])).trim(), 'inside');
  assert.equal(existsSync(`${mountpoint}/file`), false, 'the dataset is mounted only inside the namespace');
  await zfs.dispose();
  assert.equal(existsSync(zfs.dir), false);
  assert.equal(existsSync('/etc/zfs'), hadEtcZfs);
  assert.equal(existsSync('/var/lib/zfs'), hadVarLibZfs);
  assert.ok(!readFileSync('/proc/mounts', 'utf8').includes(zfs.dir));
});
