/**
 * Linux jails for real, inside a sandbox the test makes and removes (test/helpers/linux-sandbox.ts:
 * its own mount, PID, UTS, IPC and network namespaces, so our bridge and veths never reach the host's
 * network). The release is a tarball built in a moment from this host's own binaries (sh, id,
 * hostname, sleep, cat and the libraries ldd names), unpacked once by the agent; jails are overlays on
 * it. A jail is created, started (progress messages), started again (INFO), `id` and `hostname` run
 * in it as two users, its limits are in our cgroups (and so is a command execjail runs), destroy is
 * refused while it runs, it is stopped and destroyed, and nothing is left: mounts, veths, the bridge,
 * cgroups, processes.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { sessionClientFor, startTestAgent, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';
import { expectError } from './services-support.ts';
import { okCall } from './powerd-support.ts';

const sandboxable = canSandbox();
const CGROUP_V1 = existsSync('/sys/fs/cgroup/memory/cgroup.procs') && existsSync('/sys/fs/cgroup/pids/cgroup.procs');
const skip = sandboxable.ok ? false : `the Linux sandbox ${sandboxable.reason}`;
const BINARIES = ['/bin/sh', '/usr/bin/id', '/bin/hostname', '/bin/sleep', '/bin/cat'];

/** A release root from this host's binaries and their libraries, as a tarball at `tarball`. */
function buildReleaseTarball(tarball: string): void {
  const root = mkdtempSync(join(tmpdir(), 'hostadm-jail-release-'));
  try {
    for (const dir of ['bin', 'etc', 'proc', 'tmp', 'root', 'home/app']) mkdirSync(join(root, dir), { recursive: true });
    for (const binary of BINARIES) {
      copyFileSync(binary, join(root, 'bin', binary.split('/').pop() as string));
      const libraries = execFileSync('ldd', [binary], { encoding: 'utf8' }).match(/\/\S+/g) ?? [];
      for (const lib of libraries) {
        mkdirSync(join(root, dirname(lib)), { recursive: true });
        copyFileSync(lib, join(root, lib));
      }
    }
    writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:App:/home/app:/bin/sh\n');
    writeFileSync(join(root, 'etc/group'), 'root:x:0:\napp:x:1000:\n');
    mkdirSync(dirname(tarball), { recursive: true });
    execFileSync('tar', ['-c', '-f', tarball, '-C', root, '.']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function jailAgent(t: TestContext): Promise<{ sandbox: LinuxSandbox; agent: TestAgent; root: TestClient; jailRoot: string }> {
  const sandbox = await createLinuxSandbox({ hostname: 'jailhost' });
  t.after(() => sandbox.dispose());
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }) });
  t.after(() => agent.dispose());
  const jailRoot = join(agent.dataDir, 'jails');
  buildReleaseTarball(join(jailRoot, 'releases', 'mini.tar'));
  return { sandbox, agent, root: await sessionClientFor(t, agent, 'root', 'full'), jailRoot };
}

const call = (c: TestClient, action: string, args: Record<string, unknown> = {}) => okCall(c, 'jail', action, args);
type Listed = Record<string, { boot: string; ip4: string; jid: string; state: string; tag: string; type: string }>;
const list = async (c: TestClient) => (await call(c, 'listjails')).listjails as Listed;
const inSandbox = async (sandbox: LinuxSandbox, argv: string[]) => (await sandbox.runner.run(argv, { timeoutMs: 30_000 })).stdout;

/** What a jail could leave behind, looked for in the sandbox and on the host. */
async function leftovers(sandbox: LinuxSandbox, jailRoot: string, uuid: string): Promise<string[]> {
  const found: string[] = [];
  const mounts = (await inSandbox(sandbox, ['cat', '/proc/self/mounts'])) + readFileSync('/proc/self/mounts', 'utf8');
  if (mounts.includes(jailRoot)) found.push('a mount under the jail root');
  const links = await inSandbox(sandbox, ['ip', '-o', 'link', 'show']);
  if (/hostadm-jails|hj[0-9a-f]{12}/.test(links)) found.push(`links: ${links}`);
  for (const c of ['memory', 'pids', 'cpu']) if (existsSync(`/sys/fs/cgroup/${c}/hostadm-jails/${uuid}`)) found.push(`cgroup ${c}`);
  const procs = await inSandbox(sandbox, ['pgrep', '-f', `[${jailRoot[0]}]${jailRoot.slice(1)}`]);
  if (procs.trim() !== '') found.push(`processes ${procs.trim()}`);
  if (existsSync(join(jailRoot, 'jails', uuid))) found.push('the jail directory');
  return found;
}

test('a jail from a release: start (progress), start again (INFO), id and hostname inside, destroy refused while running, stop, destroy, nothing left', {
  skip,
}, async (t) => {
  const { sandbox, root, jailRoot } = await jailAgent(t);
  const created = (await call(root, 'createjail', { props: 'tag=web1 release=mini ip4_addr=eth0|10.213.7.2/24 stop_timeout=1 memoryuse=256M maxproc=64' }))
    .createjail as { success: Record<string, string> };
  const [uuid, listed] = Object.entries(await list(root))[0] ?? [];
  assert.ok(uuid && listed);
  assert.deepEqual(created.success, { 'Successfully created': ` ${uuid} (web1)` });
  assert.deepEqual(listed, { boot: 'off', ip4: '10.213.7.2', jid: '-', state: 'down', tag: 'web1', type: 'basejail' });
  assert.ok(existsSync(join(jailRoot, 'releases', 'mini', 'root', 'bin', 'id')), 'the release was unpacked once, beside its tarball');

  const started = ((await call(root, 'startjail', { jail: 'web1' })).startjail as Record<string, Record<string, string>>).web1 ?? {};
  const keys = Object.keys(started);
  assert.equal(keys[0], `* Starting ${uuid} (web1)`);
  assert.equal(keys.at(-1), '+ Started OK');
  assert.ok(
    keys.some((k) => k.startsWith('+ Configuring network (eth0 on hostadm-jails, 10.213.7.2/24)')),
    keys.join('\n'),
  );
  assert.ok(Object.values(started).every((v) => v === ''));
  assert.deepEqual(await call(root, 'startjail', { jail: 'web1' }), { startjail: { web1: { INFO: ` ${uuid} (web1) is already up` } } });
  const running = (await list(root))[uuid];
  assert.equal(running?.state, 'up');
  const jid = running?.jid as string;
  assert.match(jid, /^\d+$/);

  assert.deepEqual(await call(root, 'execjail', { jail: 'web1', user: 'root', command: 'id' }), {
    execjail: { success: { 'uid=0(root) gid=0(root) groups=0(root)': '' } },
  });
  assert.deepEqual(await call(root, 'execjail', { jail: uuid, user: 'app', command: ['id'] }), {
    execjail: { success: { 'uid=1000(app) gid=1000(app) groups=1000(app)': '' } },
  });
  assert.deepEqual(await call(root, 'execjail', { jail: 'web1', user: 'app', command: ['hostname'] }), { execjail: { success: { web1: '' } } });
  assert.equal((await inSandbox(sandbox, ['hostname'])).trim(), 'jailhost', "the sandbox's own name is untouched");
  expectError(await root.call('jail', 'execjail', { jail: 'web1', user: 'nobody', command: 'id' }), 404);

  // Its network: eth0 with its address inside, the outer end on our bridge in the sandbox, not on the host.
  assert.match(await inSandbox(sandbox, ['nsenter', '-t', jid, '-n', 'ip', '-o', 'addr', 'show', 'dev', 'eth0']), /10\.213\.7\.2\/24/);
  assert.match(await inSandbox(sandbox, ['ip', '-o', 'link', 'show', 'master', 'hostadm-jails']), /hj[0-9a-f]{12}/);
  assert.doesNotMatch(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }), /hostadm-jails/);
  if (CGROUP_V1) {
    assert.equal(readFileSync(`/sys/fs/cgroup/memory/hostadm-jails/${uuid}/memory.limit_in_bytes`, 'utf8').trim(), String(256 * 1024 * 1024));
    assert.equal(readFileSync(`/sys/fs/cgroup/pids/hostadm-jails/${uuid}/pids.max`, 'utf8').trim(), '64');
    assert.ok(readFileSync(`/sys/fs/cgroup/pids/hostadm-jails/${uuid}/cgroup.procs`, 'utf8').trim() !== '', 'the init is in the cgroup');
    assert.deepEqual(await call(root, 'capjail', { jail: 'web1' }), { capjail: { success: 'jail web1 capped.' } });
    // A command execjail runs is in the jail's cgroups from its start, so the limits hold for it too.
    // (`4:memory:/hostadm-jails/<uuid>` is keyed as label `4`, text `memory:/hostadm-jails/<uuid>`.)
    const seen = Object.values(
      ((await call(root, 'execjail', { jail: 'web1', user: 'app', command: ['cat', '/proc/self/cgroup'] })).execjail as { success: object }).success,
    );
    for (const c of ['memory', 'pids', 'cpu'])
      assert.ok(
        seen.some((line) => new RegExp(`^(\\S+,)?${c}(,\\S+)?:/hostadm-jails/${uuid}$`).test(String(line))),
        `${c}: ${seen.join(' | ')}`,
      );
  }

  const refused = expectError(await root.call('jail', 'destroyjail', { jail: 'web1' }), 409);
  assert.equal(refused.errors?.[0]?.field, 'jail');
  assert.equal((await list(root))[uuid]?.state, 'up', 'the refused destroy changed nothing');

  const stopped = ((await call(root, 'stopjail', { jail: 'web1' })).stopjail as Record<string, Record<string, string>>).web1 ?? {};
  assert.equal(Object.keys(stopped)[0], `* Stopping ${uuid} (web1)`);
  assert.deepEqual(await call(root, 'stopjail', { jail: 'web1' }), { stopjail: { web1: { INFO: ` ${uuid} (web1) is already down` } } });
  expectError(await root.call('jail', 'execjail', { jail: 'web1', user: 'root', command: 'id' }), 409);
  assert.deepEqual(await call(root, 'destroyjail', { jail: 'web1' }), { destroyjail: { success: { Destroyed: ` ${uuid} (web1)` } } });
  assert.deepEqual(await list(root), {});
  assert.deepEqual(await leftovers(sandbox, jailRoot, uuid), []);
});

test('clone copies a jail’s own files; a failed create leaves nothing; clean removes what hostadm made; settings in all four modes', { skip }, async (t) => {
  const { sandbox, root, jailRoot } = await jailAgent(t);
  await call(root, 'createjail', { props: 'tag=base release=mini stop_timeout=1' });
  const base = Object.keys(await list(root))[0] as string;
  writeFileSync(join(jailRoot, 'jails', base, 'upper', 'marker'), 'from base\n');
  const cloned = (await call(root, 'clonejail', { jail: 'base', props: 'tag=copy' })).clonejail as { success: Record<string, string> };
  const copy = Object.entries(await list(root)).find(([, j]) => j.tag === 'copy')?.[0] as string;
  assert.deepEqual(cloned.success, { 'Successfully cloned': ` ${base} -> ${copy} (copy)` });
  await call(root, 'startjail', { jail: 'copy' });
  assert.deepEqual(await call(root, 'execjail', { jail: 'copy', user: 'root', command: ['cat', '/marker'] }), { execjail: { success: { 'from base': '' } } });

  assert.deepEqual(await call(root, 'getjailsettings', { jail: 'copy', prop: 'release' }), { getjailsettings: { copy: { release: 'mini' } } });
  const all = ((await call(root, 'getjailsettings', { jail: 'copy' })).getjailsettings as Record<string, Record<string, string>>).copy ?? {};
  assert.equal(all.tag, 'copy');
  assert.equal(all.exec_start, '/bin/sleep infinity');
  assert.deepEqual(await call(root, 'getjailsettings', { jail: 'copy', prop: 'all' }), { getjailsettings: { copy: all } });
  const releases = (await call(root, 'getjailsettings', { switches: '-r', prop: 'release' })).getjailsettings as Record<string, Record<string, string>>;
  assert.deepEqual(Object.values(releases), [{ TAG: 'mini', release: 'mini' }]);

  // A release that cannot be unpacked: a 500, and neither a jail nor a half-made release stays.
  writeFileSync(join(jailRoot, 'releases', 'broken.tar'), 'not a tarball');
  expectError(await root.call('jail', 'createjail', { props: 'tag=bad release=broken' }), 500);
  assert.ok(!existsSync(join(jailRoot, 'releases', 'broken')));
  assert.deepEqual(
    Object.values(await list(root))
      .map((j) => j.tag)
      .sort(),
    ['base', 'copy'],
  );
  expectError(await root.call('jail', 'createjail', { props: 'tag=base release=mini' }), 409);
  expectError(await root.call('jail', 'createjail', { props: 'tag=x release=nosuch' }), 404);
  expectError(await root.call('jail', 'activatepool', { pool: 'tank' }), 501);

  expectError(await root.call('jail', 'cleanjails'), 409);
  expectError(await root.call('jail', 'cleanreleases'), 409);
  await call(root, 'stopjail', { jail: 'copy' });
  assert.deepEqual(await call(root, 'cleanall'), { cleanall: { success: 'All iocage datasets have been cleaned.' } });
  assert.deepEqual(await list(root), {});
  assert.ok(!existsSync(join(jailRoot, 'releases', 'mini')), 'the release hostadm unpacked is gone');
  assert.ok(existsSync(join(jailRoot, 'releases', 'mini.tar')), 'the supplied tarball stays');
  assert.deepEqual(await leftovers(sandbox, jailRoot, copy), []);
});
