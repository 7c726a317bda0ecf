/**
 * `hostadm call` as a user runs it: the real binary against a real agent. JSON replies, arguments
 * (key=value, key:=json, repeated keys, --json) checked against the contract before anything is sent,
 * help generated from the contracts, and every exit code: 0 ok, 2 usage, 3 sign-in, 4 refused,
 * 5 host error, 6 connection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from '@hostadm/shared/api/index.ts';
import { users } from '@hostadm/shared/api/users.ts';
import { classes } from '@hostadm/agent/classes/index.ts';
import { cliSetup, json, runCli, show } from './cli-support.ts';

test('call prints the reply as one JSON document', async (t) => {
  const { run } = await cliSetup(t);
  const result = await run(['call', 'users', 'usershow']);
  assert.equal(result.code, 0, show(result));
  const reply = json<Record<string, { uid: string }>>(result);
  assert.equal(reply.admin?.uid, '1001');
  const same = await run(['call', 'admin/users', 'usershow', '--json', '{}']);
  assert.deepEqual(json(same), reply);
  const query = json<Record<string, string>>(await run(['call', 'rpc/query']));
  assert.equal(query['admin/users'], 'read/write');
});

test('a class name that exists in one namespace only works alone; mistyped names get suggestions', async (t) => {
  const { run } = await cliSetup(t);
  const list = await run(['call', 'dispatcher', 'list']);
  assert.equal(list.code, 0, show(list));
  assert.deepEqual(json(list), json(await run(['call', 'rpc/dispatcher', 'list'])));
  assert.equal(json<{ type: string }>(await run(['call', 'identify'])).type, 'server');
  // settings is in both namespaces: alone it is admin's (the default namespace).
  const settingsHelp = await run(['call', 'settings', '--help']);
  assert.match(settingsHelp.stdout, /^admin\/settings: /m);

  const nowhere = { HOSTADM_URL: 'ws://127.0.0.1:1' };
  const cases: [string[], RegExp][] = [
    [['call', 'dispatch', 'list'], /^hostadm: unknown class dispatch \(did you mean dispatcher\?\)$/m],
    [['call', 'systemmanger', 'procinfo'], /\(did you mean systemmanager\?\)/],
    [['call', 'rpc/dispacher', 'list'], /\(did you mean dispatcher\?\)/],
    [['call', 'users', 'usrshow'], /^hostadm: users has no action usrshow \(did you mean usershow\?\)$/m],
    [['call', 'dispatcher', 'lsit'], /\(did you mean list\?\)/],
    [['call', 'amdin/users', 'usershow'], /unknown namespace amdin in amdin\/users \(did you mean admin\?\)/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args, nowhere);
    assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
    assert.match(r.stderr, message, args.join(' '));
  }
  const far = await run(['call', 'zzzzzzzz', 'x'], nowhere);
  assert.doesNotMatch(far.stderr, /did you mean/);
});

test('rpc/identify needs no credentials', async (t) => {
  const { run } = await cliSetup(t);
  const result = await run(['call', 'rpc/identify'], { HOSTADM_USER: undefined, HOSTADM_PASSWORD: undefined });
  assert.equal(result.code, 0, show(result));
  assert.equal(json<{ type: string }>(result).type, 'server');
});

test('arguments: key=value strings, key:=json values, repeated keys as arrays, --json underneath', async (t) => {
  const { run } = await cliSetup(t);
  const started = await run(['call', 'services', 'start', 'services=cron', 'services=sshd']);
  assert.equal(started.code, 0, show(started));
  assert.deepEqual(json(started), { services_started: ['cron', 'sshd'] });
  const merged = await run(['call', 'services', 'stop', '--json', '{"services":["cron","sshd"]}', 'services:=["sshd"]']);
  assert.deepEqual(json(merged), { services_stopped: ['sshd'] });
  const killed = await run(['call', 'systemmanager', 'killproc', 'pid:=412', 'signal=TERM']);
  assert.equal(killed.code, 0, show(killed));
  assert.deepEqual(json(killed), { killproc: { action: 'killproc', pid: '412', signal: 'TERM' } });
});

test('arguments that break the contract are refused before connecting (exit 2), naming each field', async (t) => {
  const { run } = await cliSetup(t);
  // Nothing listens there: a usage error must not even try to connect.
  const nowhere = { HOSTADM_URL: 'ws://127.0.0.1:1' };
  const bad = await run(['call', 'systemmanager', 'killproc', 'pid=abc', 'signal=HUP'], nowhere);
  assert.equal(bad.code, 2, show(bad));
  assert.match(bad.stderr, /refused before sending/);
  assert.match(bad.stderr, /^ {2}pid: /m);
  assert.match(bad.stderr, /^ {2}signal: /m);
  assert.equal(bad.stdout, '');

  const missing = await run(['call', 'users', 'useradd', 'name=bob'], nowhere);
  assert.equal(missing.code, 2, show(missing));
  assert.match(missing.stderr, /password/);
  const unknownArg = await run(['call', 'users', 'usershow', 'verbose=yes'], nowhere);
  assert.equal(unknownArg.code, 2);
  assert.match(unknownArg.stderr, /verbose: unknown argument/);
  const array = await run(['call', 'users', 'groupadd', 'name=staff', 'users=bob'], nowhere);
  assert.equal(array.code, 2);
  assert.match(array.stderr, /^ {2}users: must be a list \(got "bob"\)$/m);
  assert.match(array.stderr, /repeat key=value/);

  for (const args of [
    ['call', 'nosuchclass', 'x'],
    ['call', 'users', 'nosuchaction'],
    ['call', 'users', 'usershow', 'pid:=notjson'],
    ['call', 'users', 'usershow', 'novalue'],
    ['call', 'users', 'usershow', '--json', '[1]'],
    ['call', 'events/subscribe'],
    ['call', 'rpc/auth'],
    ['call', '--bogus'],
    ['ps', '--sort', 'nope'],
    ['nosuchcommand'],
  ]) {
    const r = await run(args, nowhere);
    assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
  }
  const noUrl = await run(['call', 'users', 'usershow'], { HOSTADM_URL: undefined });
  assert.equal(noUrl.code, 2);
  assert.match(noUrl.stderr, /--url/);
});

test('a call without arguments: sent when the action takes none (aliases too), refused before connecting when it needs some', async (t) => {
  const { run } = await cliSetup(t);
  // Sent from the call index alone (lib/call-index.ts), as a call with arguments is after its check.
  const memory = await run(['call', 'systemmanager', 'memorystats']);
  assert.equal(memory.code, 0, show(memory));
  assert.deepEqual(Object.keys(json<{ memorystats: object }>(memory).memorystats).sort(), ['active', 'cache', 'free', 'inactive', 'wired']);
  const alias = await run(['call', 'systemmanager', 'systeminfo']);
  assert.equal(alias.code, 0, show(alias));
  assert.equal(json<{ systemmanager: { hostname: string } }>(alias).systemmanager.hostname, 'simhost');
  const rpcAlias = await run(['call', 'rpc/settings', 'list_ssl_certificates']);
  assert.equal(rpcAlias.code, 0, show(rpcAlias));
  assert.deepEqual(json(rpcAlias), json(await run(['call', 'rpc/settings', 'list_ssl_certs'])));

  // Nothing listens there: the refusal comes from the contract, as with arguments, before any connection.
  const nowhere = { HOSTADM_URL: 'ws://127.0.0.1:1' };
  const missing = await run(['call', 'systemmanager', 'killproc'], nowhere);
  assert.equal(missing.code, 2, show(missing));
  assert.match(missing.stderr, /^hostadm: refused before sending: invalid arguments for admin\/systemmanager killproc:$/m);
  assert.match(missing.stderr, /^ {2}pid: is required/m);
  assert.match(missing.stderr, /^ {2}signal: /m);
  assert.equal(missing.stdout, '');
  const unknown = await run(['call', 'systemmanager', 'memorystat'], nowhere);
  assert.equal(unknown.code, 2, show(unknown));
  assert.match(unknown.stderr, /^hostadm: systemmanager has no action memorystat \(did you mean memorystats\?\)$/m);
  // The same action with arguments it does not take: checked against the contract, refused locally.
  const extra = await run(['call', 'systemmanager', 'memorystats', 'verbose=yes'], nowhere);
  assert.equal(extra.code, 2, show(extra));
  assert.match(extra.stderr, /verbose: unknown argument/);
});

test('exit codes: 3 sign-in failed, 4 refused (403, 404, 400 from the host), 6 connection failure', async (t) => {
  // A host that leaves beadm out (as a Linux host without a ZFS root does): in the contracts, not served.
  const { run } = await cliSetup(t, { classes: { ...classes, 'admin/beadm': null } });
  const wrong = await run(['call', 'users', 'usershow'], { HOSTADM_PASSWORD: 'wrong' });
  assert.equal(wrong.code, 3, show(wrong));
  assert.match(wrong.stderr, /401/);
  const noCredentials = await run(['call', 'users', 'usershow'], { HOSTADM_PASSWORD: undefined });
  assert.equal(noCredentials.code, 3, show(noCredentials));
  assert.match(noCredentials.stderr, /HOSTADM_PASSWORD/);

  const forbidden = await run(['call', 'systemmanager', 'killproc', 'pid:=412', 'signal=TERM'], { HOSTADM_USER: 'operator' });
  assert.equal(forbidden.code, 4, show(forbidden));
  assert.match(forbidden.stderr, /403 FORBIDDEN: .*needs full access/);
  const notServed = await run(['call', 'beadm', 'listbes']);
  assert.equal(notServed.code, 4, show(notServed));
  assert.match(notServed.stderr, /404 NOT_FOUND/);
  const hostRefused = await run(['call', 'fs', 'dirlist', 'dir=/no/such/dir']);
  assert.equal(hostRefused.code, 4, show(hostRefused));
  assert.match(hostRefused.stderr, /400 BAD_REQUEST/);
  assert.match(hostRefused.stderr, /^ {2}dir: /m);

  const down = await run(['call', 'users', 'usershow'], { HOSTADM_URL: 'ws://127.0.0.1:1' });
  assert.equal(down.code, 6, show(down));
  assert.match(down.stderr, /cannot connect to ws:\/\/127\.0\.0\.1:1/);
  assert.doesNotMatch(down.stderr, /^\s+at /m, 'no stack trace');
});

test('exit code 5: the host failed (500)', async (t) => {
  // A Linux agent whose every command fails: dirlist's realpath fails, a 500.
  const { agent, run } = await cliSetup(t, {
    platform: 'linux',
    runner: {
      run: async (argv) => ({
        argv: [...argv],
        code: 2,
        signal: null,
        stdout: '',
        stderr: 'simulated failure',
        timedOut: false,
        truncated: false,
        durationMs: 0,
      }),
    },
  });
  // Linux refuses passwords until PAM is set up; hand a session over in HOSTADM_TOKEN instead.
  const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: ['wheel'], method: 'token', connectionId: 'test' });
  const result = await run(['call', 'fs', 'dirlist', 'dir=/'], { HOSTADM_TOKEN: session.token, HOSTADM_PASSWORD: undefined });
  assert.equal(result.code, 5, show(result));
  assert.match(result.stderr, /500 HOST_ERROR: .*simulated failure/);
});

test('help comes from the contracts: classes, actions, arguments, required or optional', async (t) => {
  const { run } = await cliSetup(t, { classes: { ...classes, 'admin/beadm': null } });
  // No connection configured: every class in the contracts, saying so.
  const overview = await run(['call', '--help'], { HOSTADM_URL: undefined });
  assert.equal(overview.code, 0, show(overview));
  assert.match(overview.stdout, /^All classes in the contracts: no connection configured/m);
  for (const [name, contract] of Object.entries(api.admin)) {
    assert.match(overview.stdout, new RegExp(`^ {2}${name} +${escapeRegExp(contract.description)}$`, 'm'), name);
  }
  assert.match(overview.stdout, /rpc\/dispatcher/);
  assert.match(overview.stdout, /rpc\/identify/);
  assert.match(overview.stdout, /key:=json/);

  // Connected: only what this host serves (rpc/query), with the user's access.
  const served = json<Record<string, string>>(await run(['call', 'query']));
  const connected = await run(['call', '--help']);
  assert.equal(connected.code, 0, show(connected));
  assert.match(connected.stdout, /^Classes that ws:\/\/127\.0\.0\.1:\d+ serves \(rpc\/query\)/m);
  for (const [name, contract] of Object.entries(api.admin)) {
    const line = new RegExp(`^ {2}${name} +${escapeRegExp(contract.description)}`, 'm');
    if (served[`admin/${name}`]) assert.match(connected.stdout, line, name);
    else assert.doesNotMatch(connected.stdout, line, `${name} is not served but listed`);
  }
  assert.equal(served['admin/beadm'], undefined, 'this host serves no beadm');
  assert.match(connected.stdout, /^ {2}users +User accounts and groups {2}\[read\/write\]$/m);
  // Without a way to sign in (no prompt for help): all classes, saying why.
  const fresh = mkdtempSync(join(tmpdir(), 'hostadm-cli-fresh-'));
  t.after(() => rmSync(fresh, { recursive: true, force: true }));
  const anonymous = await run(['call', '--help'], { HOSTADM_PASSWORD: undefined, XDG_CONFIG_HOME: fresh });
  assert.match(anonymous.stdout, /^All classes in the contracts: not signed in to ws:/m);
  assert.match(anonymous.stdout, /^ {2}pkg /m);

  const help = await run(['call', 'users', '--help']);
  assert.equal(help.code, 0, show(help));
  for (const [action, contract] of Object.entries(users.actions)) {
    assert.match(help.stdout, new RegExp(`^ {2}${action} {2}\\[`, 'm'), action);
    assert.ok(flat(help.stdout).includes(contract.description), `${action}: ${contract.description}`);
  }
  assert.match(help.stdout, /name=STRING +required +Account name/);
  assert.match(help.stdout, /comment=STRING +optional +GECOS field/);
  assert.match(help.stdout, /clean_home:=true\|false +optional/);
  assert.ok(flat(help.stdout).includes(users.actions.useradd.args.shape.password.description!));

  const one = await run(['call', 'systemmanager', 'killproc', '--help']);
  assert.equal(one.code, 0);
  assert.match(one.stdout, /signal=INT\|QUIT\|ABRT\|KILL\|ALRM\|TERM/);
  assert.match(one.stdout, /\[full access\]/);
  const run2 = await run(['call', 'rpc/dispatcher', 'run', '--help']);
  assert.match(run2.stdout, /queued on no_queue/);

  // No action: the class's help on stderr and a usage error.
  const bare = await run(['call', 'users']);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /usershow/);
});

test('--version and --help exit 0', async () => {
  const version = await runCli(['--version'], {});
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  const help = await runCli(['--help'], {});
  assert.equal(help.code, 0);
  for (const command of ['call', 'ps', 'users', 'services', 'jobs', 'events', 'profile', 'keys', 'login'])
    assert.match(help.stdout, new RegExp(`^ {2}${command}\\b`, 'm'));
  assert.match(help.stdout, /Exit codes/);
});

/** Help text with its line wrapping undone. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
