/**
 * `admin/pkg` on the simulated FreeBSD host over a real socket: every action in the spec's shapes,
 * each queued one acknowledged with `{proc_cmd, proc_id, status: "pending"}` and ending with the
 * completion event (`pkg_log`, `action`, `updates_available`), the effects read back and kept across a
 * restart, bad names refused with a 400 naming the field, and a limited user held to reading.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { PACKAGE_FIELDS, queued, read, succeeded } from './pkg-support.ts';

type Packages = Record<string, Record<string, unknown>>;
const info = async (client: Parameters<typeof read>[0], args: Record<string, unknown> = {}) => (await read(client, 'pkg_info', args)).pkg_info as Packages;

test('reads: installed packages keyed by origin, full records, repositories, categories and a ranked search', async (t) => {
  const admin = await clientFor(t, await agentFor(t), 'admin');
  assert.deepEqual(await read(admin, 'list_repos'), { list_repos: ['local', 'FreeBSD', 'FreeBSD-kmods'] });
  const installed = await info(admin);
  assert.ok(installed['editors/vim'] && installed['security/sudo']);
  assert.equal(installed['devel/git'], undefined, 'only installed packages by default');
  const vim = installed['editors/vim'] as Record<string, unknown>;
  for (const field of PACKAGE_FIELDS) assert.equal(typeof vim[field], 'string', field);
  assert.equal(vim.origin, 'editors/vim');
  assert.equal(vim.locked, '0');
  assert.equal(vim.dependencies, undefined, 'multi-valued fields only with result: full');
  const full = (await info(admin, { pkg_origins: 'editors/vim', result: 'full' }))['editors/vim'] as Record<string, unknown>;
  assert.deepEqual(full.dependencies, ['devel/gettext-runtime']);
  assert.deepEqual(full.options, { CTAGS_BASE: 'on', NLS: 'on', XTERM_SAVE: 'off' });
  assert.deepEqual(Object.keys(await info(admin, { category: 'shells' })), ['shells/bash']);
  assert.deepEqual(Object.keys(await info(admin, { repo: 'FreeBSD', category: 'games' })), ['games/angband', 'games/nethack36']);

  assert.deepEqual(await read(admin, 'list_categories'), { list_categories: ['devel', 'editors', 'ports-mgmt', 'security', 'shells', 'sysutils'] });
  assert.deepEqual(await read(admin, 'list_categories', { repo: 'FreeBSD-kmods' }), { list_categories: ['emulators', 'graphics'] });

  const search = (await read(admin, 'pkg_search', { search_term: 'editor', repo: 'FreeBSD' })).pkg_search as Record<string, unknown>;
  assert.deepEqual(search.results_order, ['editors/nano', 'editors/vim'], 'comment matches, by name');
  const nano = search['editors/nano'] as Record<string, unknown>;
  assert.equal(nano.path, 'All/nano-8.2.pkg');
  const exact = (await read(admin, 'pkg_search', { search_term: 'git', repo: 'FreeBSD', search_excludes: ['gettext'] })).pkg_search as Record<string, unknown>;
  assert.deepEqual(exact.results_order, ['devel/git'], 'the exact name first; excluded phrases drop results');
  const local = (await read(admin, 'pkg_search', { search_term: 'git' })).pkg_search as Record<string, unknown>;
  assert.deepEqual(local.results_order, [], 'the default repository is the installed packages');
});

test('queued actions: ack and completion event for each, effects read back and kept across a restart', async (t) => {
  let agent = await startTestAgent({ dispatcher: { progressIntervalMs: 10 } });
  t.after(() => agent.dispose());
  let admin = await clientFor(t, agent, 'admin');
  await admin.request('events', 'subscribe', ['dispatcher']);

  const check = await succeeded(admin, 'pkg_check_upgrade');
  assert.equal(check.ack.proc_cmd, 'pkg upgrade -n');
  assert.equal(check.event.updates_available, 'true');
  assert.match(String(check.event.pkg_log), /sudo: 1\.9\.15p5 -> 1\.9\.16p1/);

  const audit = await succeeded(admin, 'pkg_audit');
  assert.equal(audit.ack.proc_cmd, 'pkg audit -F -r');
  assert.deepEqual(audit.event.vulnerable_pkgs, ['sudo-1.9.15p5']);
  assert.match(String(audit.event.pkg_log), /1 problem\(s\) in 1 installed package\(s\) found/);

  const install = await succeeded(admin, 'pkg_install', { pkg_origins: ['devel/git'], repo: 'FreeBSD' });
  assert.equal(install.ack.proc_cmd, 'pkg install -y -r FreeBSD devel/git');
  assert.equal(install.event.percent_done, '100%');
  const git = (await info(admin, { pkg_origins: ['devel/git'] }))['devel/git'] as Record<string, unknown>;
  assert.equal(git.automatic, '0');

  const lock = await succeeded(admin, 'pkg_lock', { pkg_origins: 'security/sudo' });
  assert.equal(lock.ack.proc_cmd, 'pkg lock -y security/sudo');
  assert.equal(((await info(admin))['security/sudo'] as Record<string, unknown>).locked, '1');
  const upgrade = await succeeded(admin, 'pkg_upgrade');
  assert.match(String(upgrade.event.pkg_log), /sudo-1\.9\.15p5 is locked, skipping/);
  assert.ok(
    upgrade.running.some((e) => typeof e.percent_done === 'string'),
    'progress reached the subscriber',
  );
  let now = await info(admin);
  assert.equal(now['security/sudo']?.version, '1.9.15p5', 'the locked package was skipped');
  assert.equal(now['editors/vim']?.version, '9.1.0707');
  assert.equal(now['sysutils/tmux']?.version, '3.5a');
  const refused = await queued(admin, 'pkg_remove', { pkg_origins: 'security/sudo' });
  assert.equal(refused.event.success, 'false', 'a locked package is not removed');
  assert.ok(now['security/sudo']);
  await succeeded(admin, 'pkg_unlock', { pkg_origins: ['security/sudo'] });
  await succeeded(admin, 'pkg_upgrade');
  assert.equal((await info(admin))['security/sudo']?.version, '1.9.16p1');
  assert.equal((await succeeded(admin, 'pkg_check_upgrade')).event.updates_available, 'false');

  const remove = await succeeded(admin, 'pkg_remove', { pkg_origins: 'devel/git', recursive: false });
  assert.equal(remove.ack.proc_cmd, 'pkg delete -y devel/git');
  const auto = await succeeded(admin, 'pkg_autoremove');
  assert.equal(auto.ack.proc_cmd, 'pkg autoremove -y');
  assert.match(String(auto.event.pkg_log), /Deinstalling ca_root_nss-3\.104/);
  now = await info(admin);
  assert.equal(now['security/ca_root_nss'], undefined, 'the dependency nothing needs any more is gone');
  assert.ok(now['devel/gettext-runtime'], 'a dependency still needed stays');
  assert.equal((await succeeded(admin, 'pkg_update', { force: true })).ack.proc_cmd, 'pkg update -f');

  agent = await agent.restart();
  t.after(() => agent.dispose());
  admin = await clientFor(t, agent, 'admin');
  now = await info(admin);
  assert.equal(now['security/sudo']?.version, '1.9.16p1');
  assert.equal(now['devel/git'], undefined);
  assert.equal(now['security/ca_root_nss'], undefined);
});

test('bad names and unknown packages are a 400 naming the field, with nothing queued; limited users only read', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');
  for (const origin of ['-rf/x', 'editors/-vim', 'editors', 'a/b/c', '../etc/passwd', 'editors/vim;id', 'editors/$(id)', 'editors/vim name']) {
    const error = expectError(await admin.call('pkg', 'pkg_install', { pkg_origins: [origin] }), 400);
    assert.ok(
      error.errors?.some((e) => e.field.startsWith('pkg_origins')),
      `${origin}: ${JSON.stringify(error)}`,
    );
  }
  expectError(await admin.call('pkg', 'pkg_info', { category: '../x' }), 400);
  expectError(await admin.call('pkg', 'pkg_search', { search_term: '-x' }), 400);
  const noRepo = expectError(await admin.call('pkg', 'pkg_info', { repo: 'nowhere' }), 400);
  assert.deepEqual(
    noRepo.errors?.map((e) => e.field),
    ['repo'],
  );
  const notInstalled = expectError(await admin.call('pkg', 'pkg_lock', { pkg_origins: ['devel/git'] }), 400);
  assert.deepEqual(
    notInstalled.errors?.map((e) => e.field),
    ['pkg_origins'],
  );
  assert.match(notInstalled.message, /devel\/git not installed/);
  const unknown = expectError(await admin.call('pkg', 'pkg_install', { pkg_origins: ['editors/emacs'] }), 400);
  assert.match(unknown.message, /editors\/emacs in no repository/);
  const list = (await admin.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: { pkg_queue: Record<string, unknown> } };
  assert.deepEqual(list.jobs.pkg_queue, {}, 'nothing was queued');

  const operator = await clientFor(t, agent, 'operator');
  assert.ok((await info(operator))['editors/vim']);
  for (const [action, args] of [
    ['pkg_install', { pkg_origins: 'devel/git' }],
    ['pkg_remove', { pkg_origins: 'editors/vim' }],
    ['pkg_lock', { pkg_origins: 'editors/vim' }],
    ['pkg_unlock', { pkg_origins: 'editors/vim' }],
    ['pkg_upgrade', {}],
    ['pkg_update', {}],
    ['pkg_autoremove', {}],
  ] as const) {
    expectError(await operator.call('pkg', action, args), 403);
  }
  assert.equal(((await operator.request('rpc', 'query', {})).args as Record<string, string>)['admin/pkg'], 'read');
  assert.equal((await operator.call('pkg', 'pkg_check_upgrade')).name, 'response', 'checking is a read');
});
