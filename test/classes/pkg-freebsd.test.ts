/**
 * FreeBSD pkg: the parsers on published pkg(8) outputs (test/fixtures/freebsd/pkg, sources in
 * pkg.source.md), then every action through a real agent on the FreeBSD platform whose runner answers
 * like a FreeBSD 14 host with pkg: the argv each action runs, reads and queued jobs alike, is compared
 * with the checked-in snapshot, and the exit status 1 of `pkg audit` / `pkg upgrade -n` is an answer.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { RunOptions } from '@hostadm/agent/runner/runner.ts';
import { parseAudit, parseDryRun, parseQuery, parseRepositories, QUERY_FORMAT } from '@hostadm/agent/platforms/freebsd/parse/pkg.ts';
import { startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';
import { queued, read, succeeded } from './pkg-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/pkg/${name}`, import.meta.url), 'utf8');

test('published outputs: repositories of pkg -vv, the dry-run upgrade, the audit report', () => {
  assert.deepEqual(parseRepositories(fixture('pkg-vv-mirrors.txt')), ['bme', 'nyi', 'ydx', 'isc', 'chinafreebsd']);
  assert.deepEqual(parseRepositories(fixture('pkg-vv-14.txt')), ['FreeBSD'], 'the space after `{` as pkg 1.21 prints it');
  assert.deepEqual(parseRepositories(fixture('pkg-vv-14.txt').replace('enabled         : yes', 'enabled         : no')), []);
  assert.equal(parseDryRun(fixture('upgrade-n-available.txt')), true);
  assert.equal(parseDryRun(fixture('upgrade-n-uptodate.txt')), false);
  assert.equal(parseDryRun('pkg: No active remote repositories configured.\n'), null, 'no answer is not "no updates"');
  assert.deepEqual(parseAudit(fixture('audit-node.txt')), ['node-8.1.3']);
  assert.deepEqual(parseAudit(fixture('audit-bind96.txt')), ['bind96-9.6.3.2.ESV.R10_2']);
  assert.deepEqual(parseAudit(fixture('audit-none.txt')), []);
});

/** Packages of the fake host: [origin, version, automatic, locked, comment, deps]. */
const LOCAL: Array<[string, string, string, string, string, string[]]> = [
  ['editors/vim', '9.1.0500', '0', '0', 'Improved version of the vi editor (console flavor)', ['devel/gettext-runtime']],
  ['devel/gettext-runtime', '0.22.5', '1', '1', 'GNU gettext runtime libraries and programs', []],
];
const REMOTE: Array<[string, string, string]> = [
  ['editors/vim', '9.1.0707', 'Improved version of the vi editor (console flavor)'],
  ['editors/nano', '8.2', "Nano's ANOther editor, an enhanced free Pico clone"],
  ['devel/gettext-runtime', '0.22.5', 'GNU gettext runtime libraries and programs'],
];
const FS = '\x1f';
const RS = '\x1e';

/** Answers pkg like a FreeBSD 14 host, in the formats the port asks for (pkg adds a newline after each record). */
class FreebsdPkgHost extends RecordingRunner {
  override async run(argv: readonly string[], options: RunOptions = {}) {
    const reply = await super.run(argv, options);
    const [, sub] = argv;
    if (argv[0] !== 'pkg' || (sub !== 'query' && sub !== 'rquery')) return reply;
    const local = sub === 'query';
    const rest = argv.slice(local ? 2 : 5);
    const all = rest[0] === '-a';
    const format = (all ? rest[1] : rest[0]) ?? '';
    const asked = all ? null : rest.slice(1);
    const rows = local
      ? LOCAL.map(([o, v, a, k, c, d]) => ({ o, v, a, k, c, d }))
      : REMOTE.map(([o, v, c]) => ({ o, v, a: '0', k: '0', c, d: [] as string[] }));
    const chosen = rows.filter((r) => !asked || asked.includes(r.o));
    const name = (o: string) => o.slice(o.indexOf('/') + 1);
    const field: Record<string, (r: (typeof rows)[number]) => string> = {
      '%o': (r) => r.o,
      '%n': (r) => name(r.o),
      '%v': (r) => r.v,
      '%q': () => 'FreeBSD:14:amd64',
      '%c': (r) => r.c,
      '%e': (r) => `${r.c}.\n\nWWW: https://www.freshports.org/${r.o}/`,
      '%sb': () => '1048576',
      '%m': () => 'ports@FreeBSD.org',
      '%w': (r) => `https://www.freshports.org/${r.o}/`,
      '%l': () => '',
      '%p': () => '/usr/local',
      '%M': () => '',
      '%a': (r) => r.a,
      '%k': (r) => r.k,
      '%t': () => '1727000000',
      '%R': () => 'FreeBSD',
    };
    let stdout: string;
    if (format.includes('%do')) stdout = chosen.flatMap((r) => r.d.map((d) => `${r.o}${FS}${d}\n`)).join('');
    else if (/%[FObBL]/.test(format)) stdout = '';
    else
      stdout = chosen
        .map(
          (r) =>
            `${format
              .replace(RS, '')
              .split(FS)
              .map((f) => field[f]?.(r) ?? '')
              .join(FS)}${format.endsWith(RS) ? RS : ''}\n`,
        )
        .join('');
    return { ...reply, stdout, code: asked && chosen.length < asked.length ? 1 : 0 };
  }
}

async function freebsdAgent(t: TestContext, host: FreebsdPkgHost): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  await root.request('events', 'subscribe', ['dispatcher']);
  host.calls.length = 0;
  return root;
}

function newHost(): FreebsdPkgHost {
  return new FreebsdPkgHost([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: ['pkg', '-vv'], stdout: fixture('pkg-vv-14.txt') },
    { match: ['pkg', 'upgrade', '-n'], stdout: fixture('upgrade-n-available.txt'), code: 1 },
    { match: ['pkg', 'audit', '-F', '-r'], stdout: fixture('audit-node.txt'), code: 1 },
    { match: (argv) => argv[0] === 'pkg', stdout: '' },
  ]);
}

test('the query format parses back into Package records', () => {
  const out = `editors/vim${FS}vim${FS}9.1.0500${FS}FreeBSD:14:amd64${FS}Vi${FS}Long\ntext${FS}1048576${FS}ports@FreeBSD.org${FS}https://www.vim.org/${FS}|${FS}/usr/local${FS}${FS}0${FS}1${FS}1727000000${FS}FreeBSD${RS}\n`;
  const [vim] = parseQuery(out);
  assert.equal(QUERY_FORMAT.split(FS).length, 16);
  assert.deepEqual(
    { origin: vim?.origin, desc: vim?.desc, locked: vim?.locked, licenselogic: vim?.licenselogic, repository: vim?.repository },
    { origin: 'editors/vim', desc: 'Long\ntext', locked: '1', licenselogic: 'or', repository: 'FreeBSD' },
  );
});

test('every action runs pkg as an administrator would (argv snapshot); pkg exit 1 of audit and upgrade -n are answers', async (t) => {
  const host = newHost();
  const root = await freebsdAgent(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async <T>(label: string, call: () => Promise<T>): Promise<T> => {
    host.calls.length = 0;
    const result = await call();
    ran[label] = [...host.calls];
    return result;
  };
  assert.deepEqual(await step('list_repos', () => read(root, 'list_repos')), { list_repos: ['local', 'FreeBSD'] });
  const info = await step('pkg_info', () => read(root, 'pkg_info'));
  assert.deepEqual(Object.keys(info.pkg_info as object), ['editors/vim', 'devel/gettext-runtime']);
  const full = await step('pkg_info full', () => read(root, 'pkg_info', { pkg_origins: 'editors/vim', result: 'full' }));
  assert.deepEqual((full.pkg_info as Record<string, { dependencies: string[] }>)['editors/vim']?.dependencies, ['devel/gettext-runtime']);
  const remote = await step('pkg_info repo', () => read(root, 'pkg_info', { repo: 'FreeBSD', category: 'editors' }));
  assert.deepEqual(Object.keys(remote.pkg_info as object), ['editors/vim', 'editors/nano']);
  const search = await step('pkg_search', () => read(root, 'pkg_search', { search_term: 'editor', repo: 'FreeBSD' }));
  assert.deepEqual((search.pkg_search as { results_order: string[] }).results_order, ['editors/nano', 'editors/vim']);
  assert.deepEqual(await step('list_categories', () => read(root, 'list_categories', { repo: 'FreeBSD' })), { list_categories: ['devel', 'editors'] });

  const check = await step('pkg_check_upgrade', () => succeeded(root, 'pkg_check_upgrade'));
  assert.equal(check.event.updates_available, 'true');
  const audit = await step('pkg_audit', () => succeeded(root, 'pkg_audit'));
  assert.deepEqual(audit.event.vulnerable_pkgs, ['node-8.1.3']);
  const acks: Record<string, string> = {};
  for (const [action, args] of [
    ['pkg_install', { pkg_origins: ['editors/nano'], repo: 'FreeBSD' }],
    ['pkg_install', { pkg_origins: 'editors/nano' }],
    ['pkg_remove', { pkg_origins: 'editors/vim' }],
    ['pkg_remove', { pkg_origins: 'editors/vim', recursive: false }],
    ['pkg_autoremove', {}],
    ['pkg_lock', { pkg_origins: ['editors/vim', 'devel/gettext-runtime'] }],
    ['pkg_unlock', { pkg_origins: 'devel/gettext-runtime' }],
    ['pkg_upgrade', {}],
    ['pkg_update', {}],
    ['pkg_update', { force: 'true' }],
  ] as const) {
    const label = `${action} ${JSON.stringify(args)}`;
    acks[label] = (await step(label, () => succeeded(root, action, args))).ack.proc_cmd;
  }
  assert.equal(acks['pkg_install {"pkg_origins":["editors/nano"],"repo":"FreeBSD"}'], 'pkg install -y -r FreeBSD editors/nano');
  assert.equal(acks['pkg_remove {"pkg_origins":"editors/vim","recursive":false}'], 'pkg delete -y editors/vim');
  snapshotArgv(t, ran);
});

test('a failing dry run is a failed check, never "no updates"; unknown origins and repositories queue nothing', async (t) => {
  const host = new FreebsdPkgHost([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: ['pkg', '-vv'], stdout: fixture('pkg-vv-14.txt') },
    { match: ['pkg', 'upgrade', '-n'], stderr: 'pkg: No active remote repositories configured.\n', code: 3 },
    { match: (argv) => argv[0] === 'pkg', stdout: '' },
  ]);
  const root = await freebsdAgent(t, host);
  const check = await queued(root, 'pkg_check_upgrade');
  assert.equal(check.event.success, 'false');
  assert.equal(check.event.updates_available, undefined);
  assert.match(String(check.event.reason), /exited with code 3/);
  host.calls.length = 0;
  const unknown = expectError(await root.call('pkg', 'pkg_lock', { pkg_origins: 'editors/nano' }), 400);
  assert.deepEqual(
    unknown.errors?.map((e) => e.field),
    ['pkg_origins'],
  );
  expectError(await root.call('pkg', 'pkg_install', { pkg_origins: 'editors/nano', repo: 'FreeBSD-kmods' }), 400);
  assert.ok(
    host.calls.every((argv) => argv[1] === 'query' || argv[1] === 'rquery' || argv[1] === '-vv'),
    JSON.stringify(host.calls),
  );
});
