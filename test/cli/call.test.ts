/**
 * `hostadm call` as a user runs it: the real binary against a real agent. JSON replies, arguments
 * (key=value, key:=json, repeated keys, --json) checked against the contract before anything is sent,
 * help generated from the contracts, and every exit code: 0 ok, 2 usage, 3 sign-in, 4 refused,
 * 5 host error, 6 connection.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api } from '@hostadm/shared/api/index.ts';
import { users } from '@hostadm/shared/api/users.ts';
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

  for (const args of [['call', 'nosuchclass', 'x'], ['call', 'users', 'nosuchaction'], ['call', 'users', 'usershow', 'pid:=notjson'], ['call', 'users', 'usershow', 'novalue'], ['call', 'users', 'usershow', '--json', '[1]'], ['call', 'events/subscribe'], ['call', 'rpc/auth'], ['call', '--bogus'], ['ps', '--sort', 'nope'], ['nosuchcommand']]) {
    const r = await run(args, nowhere);
    assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
  }
  const noUrl = await run(['call', 'users', 'usershow'], { HOSTADM_URL: undefined });
  assert.equal(noUrl.code, 2);
  assert.match(noUrl.stderr, /--url/);
});

test('exit codes: 3 sign-in failed, 4 refused (403, 404, 400 from the host), 6 connection failure', async (t) => {
  const { run } = await cliSetup(t);
  const wrong = await run(['call', 'users', 'usershow'], { HOSTADM_PASSWORD: 'wrong' });
  assert.equal(wrong.code, 3, show(wrong));
  assert.match(wrong.stderr, /401/);
  const noCredentials = await run(['call', 'users', 'usershow'], { HOSTADM_PASSWORD: undefined });
  assert.equal(noCredentials.code, 3, show(noCredentials));
  assert.match(noCredentials.stderr, /HOSTADM_PASSWORD/);

  const forbidden = await run(['call', 'systemmanager', 'killproc', 'pid:=412', 'signal=TERM'], { HOSTADM_USER: 'operator' });
  assert.equal(forbidden.code, 4, show(forbidden));
  assert.match(forbidden.stderr, /403 FORBIDDEN: .*needs full access/);
  const notServed = await run(['call', 'pkg', 'list_repos']);
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
      run: async (argv) => ({ argv: [...argv], code: 2, signal: null, stdout: '', stderr: 'simulated failure', timedOut: false, truncated: false, durationMs: 0 }),
    },
  });
  // Linux refuses passwords until PAM is set up; hand a session over in HOSTADM_TOKEN instead.
  const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: ['wheel'], method: 'token', connectionId: 'test' });
  const result = await run(['call', 'fs', 'dirlist', 'dir=/'], { HOSTADM_TOKEN: session.token, HOSTADM_PASSWORD: undefined });
  assert.equal(result.code, 5, show(result));
  assert.match(result.stderr, /500 HOST_ERROR: .*simulated failure/);
});

test('help comes from the contracts: classes, actions, arguments, required or optional', async (t) => {
  const { run } = await cliSetup(t);
  const overview = await run(['call', '--help']);
  assert.equal(overview.code, 0, show(overview));
  for (const [name, contract] of Object.entries(api.admin)) {
    assert.match(overview.stdout, new RegExp(`^ {2}${name} +${escape(contract.description)}$`, 'm'), name);
  }
  assert.match(overview.stdout, /rpc\/dispatcher/);
  assert.match(overview.stdout, /rpc\/identify/);
  assert.match(overview.stdout, /key:=json/);

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
  for (const command of ['call', 'ps', 'users', 'services', 'jobs', 'events', 'profile', 'keys', 'login']) assert.match(help.stdout, new RegExp(`^ {2}${command}\\b`, 'm'));
  assert.match(help.stdout, /Exit codes/);
});

/** Help text with its line wrapping undone. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
