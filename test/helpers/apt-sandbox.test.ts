/**
 * The apt sandbox itself: a package from the local repository installs inside it (with its
 * dependency, marked automatic), and after `dispose()` the host's dpkg database has never heard of
 * it and no mount of the sandbox is left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canAptSandbox, createAptSandbox, hostHasPackage, hostMountsUnder } from './apt-sandbox.ts';

const able = canAptSandbox();

test('apt-get installs from the local repository inside the sandbox and the host is left as it was', {
  skip: able.ok ? false : `the apt sandbox ${able.reason}`,
}, async () => {
  const app = `hostadm-sbx-${process.pid}`;
  const sandbox = await createAptSandbox();
  let disposed = false;
  try {
    sandbox.publish([
      { name: `${app}-lib`, version: '1.0', section: 'libs' },
      { name: app, version: '1.0', section: 'utils', depends: [`${app}-lib`] },
    ]);
    const update = await sandbox.runner.run(['apt-get', 'update'], { timeoutMs: 120_000 });
    assert.equal(update.code, 0, update.stderr);
    const install = await sandbox.runner.run(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', app], { timeoutMs: 120_000 });
    assert.equal(install.code, 0, install.stderr);
    const query = await sandbox.runner.run(['dpkg-query', '-W', '-f', '${Package} ${Version}\n', app, `${app}-lib`]);
    assert.equal(query.stdout, `${app} 1.0\n${app}-lib 1.0\n`);
    const auto = await sandbox.runner.run(['apt-mark', 'showauto', `${app}-lib`]);
    assert.equal(auto.stdout.trim(), `${app}-lib`);
    assert.equal(hostHasPackage(app), false, 'the host dpkg database is untouched while the sandbox runs');
    const dir = sandbox.root.replace(/^\/proc\/\d+\/root/, '').replace(/\/root$/, '');
    await sandbox.dispose();
    disposed = true;
    assert.deepEqual(hostMountsUnder(dir), []);
  } finally {
    if (!disposed) await sandbox.dispose();
  }
  assert.equal(hostHasPackage(app), false);
  assert.equal(hostHasPackage(`${app}-lib`), false);
});
