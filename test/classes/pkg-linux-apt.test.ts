/**
 * `admin/pkg` on Linux for real: the agent's runner is aimed into an apt sandbox (an overlay of this
 * machine's own root in private namespaces, test/helpers/apt-sandbox.ts) whose only sources are two
 * local flat repositories built here with dpkg-deb, one as a one-line `.list`, one as a deb822
 * `.sources`. Every read and every queued action goes over a real agent socket; apt-get, apt-mark and
 * dpkg change the overlay only, and afterwards the host's dpkg database knows none of the packages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { sessionClientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { canAptSandbox, createAptSandbox, hostHasPackage, hostMountsUnder, type TestDeb } from '../helpers/apt-sandbox.ts';
import { expectError } from './services-support.ts';
import { PACKAGE_FIELDS, queued, read, succeeded } from './pkg-support.ts';

const able = canAptSandbox();
const skip = able.ok ? false : `the apt sandbox ${able.reason}`;

const P = `hostadm-t${process.pid}`;
const APP = `${P}-app`;
const LIB = `${P}-lib`;
const GAME = `${P}-game`;
const EXTRA = `${P}-extra`;
const MAIN_REPO = 'srv_hostadm-test-repo';
const EXTRA_REPO = 'srv_hostadm-test-repo_extra';

const release = (version: string): TestDeb[] => [
  { name: LIB, version, section: 'libs', summary: 'shared pieces of the test app' },
  { name: APP, version, section: 'utils', depends: [`${LIB} (>= ${version})`], summary: 'the hostadm test app', homepage: 'https://hostadm.invalid/app' },
  { name: GAME, version: '1.0', section: 'games', summary: 'a game about packages', description: 'Nothing to play; it only has a searchable description.' },
];

type Packages = Record<string, Record<string, unknown>>;
const local = async (client: TestClient, origins: string[]) => (await read(client, 'pkg_info', { pkg_origins: origins })).pkg_info as Packages;

test('pkg on a real apt/dpkg: reads, install, lock, upgrade, unlock, remove, autoremove, checks, over a real socket', { skip }, async (t) => {
  const sandbox = await createAptSandbox();
  const mountsOf = sandbox.root.replace(/^\/proc\/\d+\/root/, '').replace(/\/root$/, '');
  t.after(async () => {
    await sandbox.dispose();
    assert.deepEqual(hostMountsUnder(mountsOf), [], 'no mount of the sandbox is left');
    for (const name of [APP, LIB, GAME, EXTRA]) assert.equal(hostHasPackage(name), false, `${name} never reached the host's dpkg database`);
  });
  sandbox.publish(release('1.0'));
  const extraUri = sandbox.publish([{ name: EXTRA, version: '1.0', section: 'net', summary: 'from the second repository' }], 'extra');
  sandbox.writeFile('/etc/apt/sources.list.d/hostadm-extra.sources', `Types: deb\nURIs: ${extraUri}\nSuites: ./\nTrusted: yes\n`);

  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }) });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher']);

  const update = await succeeded(root, 'pkg_update');
  assert.equal(update.ack.proc_cmd, 'apt-get update');
  assert.match(String(update.event.pkg_log), /hostadm-test-repo/);

  // Reads: both sources formats, categories and records of a repository, a search.
  assert.deepEqual(await read(root, 'list_repos'), { list_repos: ['local', MAIN_REPO, EXTRA_REPO] });
  assert.deepEqual(await read(root, 'list_categories', { repo: MAIN_REPO }), { list_categories: ['games', 'libs', 'utils'] });
  assert.deepEqual(await read(root, 'list_categories', { repo: EXTRA_REPO }), { list_categories: ['net'] });
  const offered = (await read(root, 'pkg_info', { repo: MAIN_REPO, category: 'utils' })).pkg_info as Packages;
  assert.deepEqual(Object.keys(offered), [`utils/${APP}`]);
  assert.equal(offered[`utils/${APP}`]?.version, '1.0');
  assert.equal(offered[`utils/${APP}`]?.www, 'https://hostadm.invalid/app');
  const search = (await read(root, 'pkg_search', { search_term: 'searchable', repo: MAIN_REPO })).pkg_search as Record<string, Record<string, unknown>>;
  assert.deepEqual(search.results_order, [`games/${GAME}`], 'found by its description');
  assert.equal(search[`games/${GAME}`]?.path, `./${GAME}_1.0_all.deb`);
  const byName = (await read(root, 'pkg_search', { search_term: P, repo: MAIN_REPO, search_excludes: ['game'] })).pkg_search as Record<string, unknown>;
  assert.deepEqual(byName.results_order, [`utils/${APP}`, `libs/${LIB}`], 'name prefix, excluded phrases dropped');

  // Install: the dependency comes along, marked automatic; a named repository pins its version.
  const install = await succeeded(root, 'pkg_install', { pkg_origins: `utils/${APP}` });
  assert.equal(install.ack.proc_cmd, `env DEBIAN_FRONTEND=noninteractive apt-get -y -o Dpkg::Options::=--force-confold install ${APP}`);
  let now = await local(root, [`utils/${APP}`, `libs/${LIB}`]);
  assert.equal(now[`utils/${APP}`]?.version, '1.0');
  assert.equal(now[`utils/${APP}`]?.automatic, '0');
  assert.equal(now[`libs/${LIB}`]?.automatic, '1');
  for (const field of PACKAGE_FIELDS) assert.equal(typeof now[`utils/${APP}`]?.[field], 'string', field);
  const full = (await read(root, 'pkg_info', { pkg_origins: [`utils/${APP}`], result: 'full' })).pkg_info as Packages;
  assert.deepEqual(full[`utils/${APP}`]?.dependencies, [`libs/${LIB}`]);
  assert.ok(((full[`utils/${APP}`]?.files ?? []) as string[]).includes(`/usr/share/${APP}/version`));
  const fromExtra = await succeeded(root, 'pkg_install', { pkg_origins: [`net/${EXTRA}`], repo: EXTRA_REPO });
  assert.match(fromExtra.ack.proc_cmd, new RegExp(`install ${EXTRA}=1\\.0$`));
  const installedCategories = (await read(root, 'list_categories')).list_categories as string[];
  for (const category of ['libs', 'net', 'utils']) assert.ok(installedCategories.includes(category), `${category} in ${installedCategories}`);

  // A lock (apt-mark hold) makes the upgrade skip the package; after unlocking it is upgraded.
  const lock = await succeeded(root, 'pkg_lock', { pkg_origins: [`utils/${APP}`] });
  assert.equal(lock.ack.proc_cmd, `apt-mark hold ${APP}`);
  assert.equal((await local(root, [`utils/${APP}`]))[`utils/${APP}`]?.locked, '1');
  sandbox.publish(release('1.1'));
  const check = await succeeded(root, 'pkg_check_upgrade');
  assert.equal(check.event.updates_available, 'true');
  const upgrade = await succeeded(root, 'pkg_upgrade');
  assert.match(String(upgrade.event.pkg_log), new RegExp(`kept back|${APP}`));
  now = await local(root, [`utils/${APP}`, `libs/${LIB}`]);
  assert.equal(now[`utils/${APP}`]?.version, '1.0', 'the locked package was skipped');
  const unlock = await succeeded(root, 'pkg_unlock', { pkg_origins: `utils/${APP}` });
  assert.equal(unlock.ack.proc_cmd, `apt-mark unhold ${APP}`);
  assert.equal((await local(root, [`utils/${APP}`]))[`utils/${APP}`]?.locked, '0');
  await succeeded(root, 'pkg_upgrade');
  now = await local(root, [`utils/${APP}`, `libs/${LIB}`]);
  assert.equal(now[`utils/${APP}`]?.version, '1.1');
  assert.equal(now[`libs/${LIB}`]?.version, '1.1');
  assert.equal((await succeeded(root, 'pkg_check_upgrade')).event.updates_available, 'false');

  // Remove without dependents, then autoremove takes the dependency nothing needs any more.
  const refused = await queued(root, 'pkg_remove', { pkg_origins: `libs/${LIB}`, recursive: false });
  assert.equal(refused.event.success, 'false', 'dpkg refuses to remove a package another one depends on');
  const remove = await succeeded(root, 'pkg_remove', { pkg_origins: [`utils/${APP}`], recursive: 'false' });
  assert.equal(remove.ack.proc_cmd, `dpkg --remove ${APP}`);
  assert.deepEqual(Object.keys(await local(root, [`utils/${APP}`, `libs/${LIB}`])), [`libs/${LIB}`]);
  const autoremove = await succeeded(root, 'pkg_autoremove');
  assert.match(String(autoremove.event.pkg_log), new RegExp(`Removing ${LIB}`));
  assert.deepEqual(await local(root, [`utils/${APP}`, `libs/${LIB}`]), {});
  const recursive = await succeeded(root, 'pkg_remove', { pkg_origins: `net/${EXTRA}` });
  assert.match(recursive.ack.proc_cmd, new RegExp(`apt-get -y -o Dpkg::Options::=--force-confold remove ${EXTRA}$`));

  // Audit: debsecan where installed; otherwise a clear "unsupported", never an empty "no vulnerabilities".
  if (!existsSync('/usr/bin/debsecan')) {
    const audit = expectError(await root.call('pkg', 'pkg_audit'), 501);
    assert.match(audit.message, /debsecan is not installed/);
  }

  // Bad input changes nothing; a limited user only reads.
  const bad = expectError(await root.call('pkg', 'pkg_install', { pkg_origins: ['utils/-o'] }), 400);
  assert.ok(bad.errors?.some((e) => e.field.startsWith('pkg_origins')));
  const unknown = expectError(await root.call('pkg', 'pkg_install', { pkg_origins: [`games/${APP}`] }), 400);
  assert.match(unknown.message, /in no repository/, 'the category is part of the origin');
  const limited = await sessionClientFor(t, agent, 'nobody', 'limited');
  assert.ok(((await read(limited, 'pkg_info', { repo: MAIN_REPO })).pkg_info as Packages)[`utils/${APP}`]);
  expectError(await limited.call('pkg', 'pkg_install', { pkg_origins: `utils/${APP}` }), 403);
  expectError(await limited.call('pkg', 'pkg_lock', { pkg_origins: `utils/${APP}` }), 403);
  assert.deepEqual(await local(root, [`utils/${APP}`]), {}, 'nothing was installed by the refused calls');
});
