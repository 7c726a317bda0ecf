/**
 * `hostadm agent` as a user runs it: a real subprocess, its stdout banner, a real connection to the
 * port it reports, SIGTERM shutdown, state kept in the data directory across restarts, and bad flags.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { assertFullQuery, TestClient } from '../helpers/agent.ts';
import { ed25519Key, signatureProof } from '../helpers/keys.ts';

const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');

interface Running {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function dataDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts `hostadm <args>` and resolves once it has printed its listening line. */
function startAgentProcess(t: TestContext, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const child = spawn(hostadm, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const match = /listening on (ws:\/\/127\.0\.0\.1:(\d+))/.exec(out);
      if (match) resolve({ child, url: match[1]!, stdout: () => out, stderr: () => err, exited });
    });
    void exited.then(({ code, signal }) => reject(new Error(`hostadm exited (${code ?? signal}) before listening\nstdout: ${out}\nstderr: ${err}`)));
  });
}

/** Runs `hostadm <args>` to completion. */
function runToExit(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(hostadm, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

async function stop(agent: Running): Promise<void> {
  agent.child.kill('SIGTERM');
  const { code, signal } = await agent.exited;
  assert.equal(signal, null, `stderr: ${agent.stderr()}`);
  assert.equal(code, 0, `stderr: ${agent.stderr()}`);
}

test('hostadm agent prints where it listens, serves that port, and exits 0 on SIGTERM', async (t) => {
  const dir = dataDir(t);
  const agent = await startAgentProcess(t, ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', dir, '--sim-password', 'x1']);
  const port = Number(new URL(agent.url).port);
  assert.ok(port > 0 && port !== 12150, agent.url);
  // The banner does not print the password that was given on the command line.
  assert.doesNotMatch(agent.stdout(), /\bx1\b/);
  // What it administers and where its data goes, before anything else.
  assert.ok(agent.stdout().includes(`  Platform: sim (--platform), a simulated host   Data: ${dir}\n`), agent.stdout());

  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  const identity = (await client.request('rpc', 'identify', {})).args as Record<string, string>;
  assert.equal(identity.type, 'server');
  assert.equal(identity.hostname, 'simhost');
  assert.ok(agent.stdout().includes(`Host key: ${identity.host_key_fingerprint}`), 'the banner shows the host key fingerprint that identify reports');
  const wrong = await client.request('rpc', 'auth', { username: 'admin', password: 'hostadm' });
  assert.deepEqual(wrong.args, { code: 401, message: 'Unauthorized' });
  await client.login('admin', 'x1');
  assertFullQuery((await client.request('rpc', 'query', {})).args);

  // REST on the same port.
  const res = await fetch(`${agent.url.replace(/^ws/, 'http')}/rpc/query`, {
    method: 'PUT',
    headers: { authorization: `Basic ${Buffer.from('operator:x1').toString('base64')}` },
  });
  assert.equal(res.status, 200);

  await stop(agent);
  // A connected client is told the agent went away.
  assert.equal((await client.closed).code, 1001);
});

test('state in the data directory survives a restart of the same command', async (t) => {
  const dir = dataDir(t);
  const args = ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', dir, '--sim-password', 'x1'];
  const key = ed25519Key();

  const first = await startAgentProcess(t, args);
  const c1 = await TestClient.connect(first.url);
  t.after(() => c1.close());
  const token = await c1.login('admin', 'x1');
  const reg = await c1.call('settings', 'register_ssl_cert', {
    pub_key: key.pubKeyB64,
    proof: signatureProof(key, 'register-proof', token),
    nickname: 'laptop',
  });
  assert.equal(reg.name, 'response', JSON.stringify(reg));
  c1.close();
  await stop(first);

  const second = await startAgentProcess(t, args);
  const c2 = await TestClient.connect(second.url);
  t.after(() => c2.close());
  await c2.login('admin', 'x1');
  const list = await c2.call('settings', 'list_ssl_certs');
  const certs = list.args as Record<string, Record<string, { nickname: string }>>;
  assert.deepEqual(Object.keys(certs), ['admin']);
  assert.equal(certs.admin?.[key.pubKeyB64]?.nickname, 'laptop');
  // The old session token does not outlive the process.
  const c3 = await TestClient.connect(second.url);
  t.after(() => c3.close());
  assert.deepEqual((await c3.request('rpc', 'auth_token', { token })).args, { code: 401, message: 'Unauthorized' });
  c2.close();
  c3.close();
  await stop(second);

  // Without --sim-password the sim host keeps the password it already has (not the default).
  const third = await startAgentProcess(t, ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', dir]);
  const c4 = await TestClient.connect(third.url);
  t.after(() => c4.close());
  assert.deepEqual((await c4.request('rpc', 'auth', { username: 'admin', password: 'hostadm' })).args, { code: 401, message: 'Unauthorized' });
  await c4.login('operator', 'x1');
  c4.close();
  await stop(third);
});

test('bad flags exit non-zero with a message on stderr and start nothing', async (t) => {
  const dir = dataDir(t);

  const listen = await runToExit(['agent', '--platform', 'sim', '--listen', 'nonsense', '--data', dir, '--sim-password', 'x1']);
  assert.notEqual(listen.code, 0);
  assert.match(listen.stderr, /--listen/);
  assert.match(listen.stderr, /nonsense/);
  assert.doesNotMatch(listen.stdout, /listening on/);

  const platform = await runToExit(['agent', '--platform', 'bsd', '--listen', '127.0.0.1:0', '--data', dir]);
  assert.notEqual(platform.code, 0);
  assert.match(platform.stderr, /--platform/);
  assert.match(platform.stderr, /bsd/);
  assert.doesNotMatch(platform.stdout, /listening on/);

  const port = await runToExit(['agent', '--platform', 'sim', '--listen', '127.0.0.1:70000', '--data', dir]);
  assert.notEqual(port.code, 0);
  assert.match(port.stderr, /--listen/);
});

test('a bad --listen is reported as a plain error like other bad flags, not as a crash with a stack trace', async (t) => {
  const dir = dataDir(t);
  const listen = await runToExit(['agent', '--platform', 'sim', '--listen', 'nonsense', '--data', dir]);
  assert.notEqual(listen.code, 0);
  assert.match(listen.stderr, /--listen.*nonsense/);
  // No stack frames, no echoed source line, no Node.js version footer: that is a crash, not a message.
  assert.doesNotMatch(listen.stderr, /^\s+at /m, `stderr:\n${listen.stderr}`);
  assert.doesNotMatch(listen.stderr, /^Node\.js v/m);
});

test('the sim password never has to be on the command line: a file or HOSTADM_SIM_PASSWORD, one way at a time', async (t) => {
  const dir = dataDir(t);
  const file = join(dir, 'sim-password');
  writeFileSync(file, 'from-a-file\n', { mode: 0o600 });
  const fromFile = await startAgentProcess(t, ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', join(dir, 'a'), '--sim-password-file', file]);
  assert.doesNotMatch(fromFile.stdout(), /from-a-file/, 'the banner does not print the password');
  assert.match(fromFile.stdout(), /Dispatcher jobs: simulated/);
  const c1 = await TestClient.connect(fromFile.url);
  await c1.login('admin', 'from-a-file');
  c1.close();
  await stop(fromFile);

  const fromEnv = await startAgentProcess(t, ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', join(dir, 'b')], {
    HOSTADM_SIM_PASSWORD: 'from-env',
  });
  const c2 = await TestClient.connect(fromEnv.url);
  await c2.login('operator', 'from-env');
  c2.close();
  await stop(fromEnv);

  const both = await runToExit(['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', join(dir, 'c'), '--sim-password-file', file], {
    HOSTADM_SIM_PASSWORD: 'x',
  });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /one way only.*--sim-password-file and HOSTADM_SIM_PASSWORD/);
  assert.doesNotMatch(both.stdout, /listening on/);

  const missing = await runToExit(['agent', '--platform', 'sim', '--listen', '127.0.0.1:0', '--data', join(dir, 'd'), '--join-file', join(dir, 'nope')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--join-file .*nope: no such file/);
});

test('no default platform, and the system data directory only for root: a mistyped command administers nothing', async (_t) => {
  const bare = await runToExit(['agent']);
  assert.equal(bare.code, 2, bare.stderr);
  assert.match(
    bare.stderr,
    /^hostadm: choose what the agent administers with --platform: sim \(a simulated host; nothing on this machine changes\), or linux, freebsd or auto to administer this machine \(auto detects: \w+\)$/m,
  );
  assert.equal(bare.stdout, '');

  // Not root (as nobody when the tests run as root): the default /var/db/hostadm is refused, naming --data.
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawn(hostadm, ['agent', '--platform', 'sim', '--listen', '127.0.0.1:0'], { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], ...asNobody });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.equal(code, 2, stderr);
  assert.match(stderr, /^hostadm: the default data directory \/var\/db\/hostadm is for an agent run as root; give --data DIR/m);
});

test('a port another program holds: one line naming the port and the program, exit 6', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const taken = await runToExit(['agent', '--platform', 'sim', '--listen', `127.0.0.1:${port}`, '--data', dataDir(t)]);
  assert.equal(taken.code, 6, taken.stderr);
  assert.match(
    taken.stderr,
    new RegExp(
      `^hostadm: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use by another program( \\(pid ${process.pid}: [^)]*\\))?; stop it, or choose another port with --listen`,
      'm',
    ),
  );
  assert.equal(taken.stderr.trim().split('\n').length, 1, taken.stderr);
});
