/**
 * Password sign-in on the real Linux platform through PAM. PAM reads /etc in the process that calls
 * it, so these checks run in processes that live in the sandbox's mount namespace (its own /etc):
 * the PAM module alone in a small child process, and a whole `hostadm agent --platform linux`
 * started inside the sandbox (sharing the host's network, so the test can connect to it), which
 * also checks the group rule (sudo on Debian = full, operator = limited, others refused).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPlatform, defaultLinuxAdminGroup } from '@hostadm/agent/platforms/index.ts';
import { accessLevelFor } from '@hostadm/agent/server/access.ts';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import { assertFullQuery, TestClient } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';

const can = canSandbox();
const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules/.bin/node');

/** Checks one password with the agent's PAM module in a child process inside the sandbox's /etc. */
function pamCheck(sandbox: LinuxSandbox, user: string, password: string): { ok: boolean; ticks: number } {
  const script = `
    import { linuxPasswordVerifier } from ${JSON.stringify(join(root, 'agent/src/platforms/linux/password.ts'))};
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const { user, password } = JSON.parse(input);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    const ok = await linuxPasswordVerifier()(user, password);
    clearInterval(timer);
    process.stdout.write(JSON.stringify({ ok, ticks }));`;
  // The password goes on stdin, as the agent's own commands do; never in argv.
  const res = spawnSync('nsenter', ['-t', String(sandbox.pid), '-m', '--', node, '--input-type=module', '-e', script], {
    input: JSON.stringify({ user, password }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(res.status, 0, `PAM probe died (${String(res.signal)}): ${res.stderr}`);
  return JSON.parse(res.stdout) as { ok: boolean; ticks: number };
}

async function sh(sandbox: LinuxSandbox, argv: string[], input?: string): Promise<void> {
  const r = await sandbox.runner.run(argv, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr}`);
}

async function addAccount(sandbox: LinuxSandbox, name: string, password: string, groups: string[] = []): Promise<void> {
  await sh(sandbox, ['useradd', '-M', ...(groups.length > 0 ? ['-G', groups.join(',')] : []), '--', name]);
  await sh(sandbox, ['chpasswd'], `${name}:${password}\n`);
}

test('the Linux PAM check: right, wrong, locked and expired passwords', { skip: can.ok ? false : can.reason }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  await addAccount(sandbox, 'pammy', 'Right: pass 1');

  assert.equal(pamCheck(sandbox, 'pammy', 'Right: pass 1').ok, true);
  const wrong = pamCheck(sandbox, 'pammy', 'wrong');
  assert.equal(wrong.ok, false);
  // Debian's login stack delays a failure (pam_faildelay); the agent's event loop kept running meanwhile.
  assert.ok(wrong.ticks > 0, 'the check ran off the event loop');
  assert.equal(pamCheck(sandbox, 'nosuchuser', 'whatever').ok, false);
  assert.equal(pamCheck(sandbox, 'pammy', 'Right: pass 1\0tail').ok, false);

  await sh(sandbox, ['usermod', '-L', 'pammy']);
  assert.equal(pamCheck(sandbox, 'pammy', 'Right: pass 1').ok, false, 'locked');
  await sh(sandbox, ['usermod', '-U', 'pammy']);
  assert.equal(pamCheck(sandbox, 'pammy', 'Right: pass 1').ok, true, 'unlocked again');
  await sh(sandbox, ['chage', '-E', '1', 'pammy']);
  assert.equal(pamCheck(sandbox, 'pammy', 'Right: pass 1').ok, false, 'account expired (pam_acct_mgmt)');
});

test("the Linux admin group: the distribution's (sudo on Debian) unless --admin-group names another", async () => {
  const debianLike = defaultLinuxAdminGroup();
  const platform = await createPlatform('linux', { dataDir: '/nonexistent', runner: new RecordingRunner() });
  assert.equal(platform.adminGroup, debianLike);
  assert.equal(accessLevelFor('alice', [debianLike], platform), 'full');
  assert.equal(accessLevelFor('olga', ['operator'], platform), 'limited');
  assert.equal(accessLevelFor('nina', ['users'], platform), null);
  const custom = await createPlatform('linux', { dataDir: '/nonexistent', runner: new RecordingRunner(), adminGroup: 'admins' });
  assert.equal(custom.adminGroup, 'admins');
  assert.equal(accessLevelFor('alice', [debianLike], custom), null);
});

interface AgentProcess {
  url: string;
  stop(): Promise<void>;
}

/** `hostadm agent --platform linux` in the sandbox's mount, UTS and IPC namespaces, on the host's loopback. */
async function agentInSandbox(t: TestContext, sandbox: LinuxSandbox): Promise<AgentProcess> {
  mkdirSync(join(sandbox.home, '.hostadm'), { mode: 0o700 });
  const child = spawn(
    'nsenter',
    [
      '-t',
      String(sandbox.pid),
      '-m',
      '-u',
      '-i',
      '--',
      join(root, 'node_modules/.bin/hostadm'),
      'agent',
      '--platform',
      'linux',
      '--listen',
      '127.0.0.1:0',
      '--data',
      '/home/.hostadm',
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`agent exited (${String(code)}): ${err}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  t.after(stop);
  return { url, stop };
}

async function signIn(url: string, username: string, password: string): Promise<TestClient | null> {
  const client = await TestClient.connect(url);
  const reply = await client.request('rpc', 'auth', { username, password });
  if (reply.name === 'response') return client;
  assert.deepEqual(reply.args, { code: 401, message: 'Unauthorized' });
  client.close();
  return null;
}

test('hostadm agent --platform linux signs users in with PAM and applies the group rule', { skip: can.ok ? false : can.reason }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  await addAccount(sandbox, 'alice', 'alice pw', ['sudo']);
  await addAccount(sandbox, 'olga', 'olga pw', ['operator']);
  await addAccount(sandbox, 'nina', 'nina pw');
  const agent = await agentInSandbox(t, sandbox);

  const alice = await signIn(agent.url, 'alice', 'alice pw');
  assert.ok(alice, 'alice (sudo, the Debian admin group) signs in');
  t.after(() => alice.close());
  const query = await alice.request('rpc', 'query', {});
  assertFullQuery(query.args);
  assert.equal((query.args as Record<string, string>)['admin/users'], 'read/write');

  const olga = await signIn(agent.url, 'olga', 'olga pw');
  assert.ok(olga, 'olga (operator) signs in');
  t.after(() => olga.close());
  const mine = await olga.call('users', 'usershow');
  assert.equal((mine.args as Record<string, { canremove?: string }>).olga?.canremove, 'false', 'limited: every account, hers marked');

  assert.equal(await signIn(agent.url, 'nina', 'nina pw'), null, 'in neither group');
  assert.equal(await signIn(agent.url, 'alice', 'not it'), null, 'wrong password');

  // An account made through the agent signs in with the password it was given; a changed one with the new one.
  const made = await alice.call('users', 'useradd', { name: 'zoe', password: 'zoe first', other_groups: ['operator'] });
  assert.equal(made.name, 'response', JSON.stringify(made.args));
  const zoe = await signIn(agent.url, 'zoe', 'zoe first');
  assert.ok(zoe);
  zoe.close();
  assert.equal((await alice.call('users', 'usermod', { name: 'zoe', password: 'zoe second' })).name, 'response');
  assert.equal(await signIn(agent.url, 'zoe', 'zoe first'), null);
  const again = await signIn(agent.url, 'zoe', 'zoe second');
  assert.ok(again);
  again.close();
  await agent.stop();
});
