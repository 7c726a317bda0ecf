/**
 * HOSTADM_PERSIST through the real binary against `hostadm up` (a bridge and a sim agent, free ports,
 * its own HOME): calls print the same with and without a persisted session; later calls go through the
 * session (its call count); a runtime directory open to others is not used (the call still works,
 * saying nothing about it); `session stop` ends it; a 1 s idle time ends one; a stale socket is
 * replaced; the session ends with its bridge connection; no process is left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, show, startUp, until, type CliResult } from './cli-support.ts';

interface StatusRow {
  pid: number;
  profile: string | null;
  calls: number;
  socket: string;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Processes whose command line names `dir` (the test's HOME): what the test started and must end. */
function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

test('HOSTADM_PERSIST: later bridged calls go through one persisted session and print the same', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-persist-'));
  const runtime = join(home, 'run');
  mkdirSync(runtime, { mode: 0o700 });
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_RUNTIME_DIR: runtime };
  t.after(async () => {
    // Whatever this test started (up, sessions) ends here, and is checked gone.
    for (const pid of processesUnder(home)) process.kill(pid, 'SIGKILL');
    await until('no process left', () => (processesUnder(home).length === 0 ? true : undefined));
    rmSync(home, { recursive: true, force: true });
  });
  const stopUp = await startUp(t, home, env);

  const persisted = { ...env, HOSTADM_PERSIST: '30s' };
  const identify = ['call', 'rpc/identify', '--profile', 'p'];
  const refused = ['call', 'users', 'usermod', 'name=nobodyhere', 'shell=/bin/sh', '--profile', 'p'];
  const status = async (): Promise<StatusRow[]> => {
    const r = await runCli(['session', 'status', '--json'], env);
    assert.equal(r.code, 0, show(r));
    return JSON.parse(r.stdout) as StatusRow[];
  };
  const same = (a: CliResult, b: CliResult) => assert.deepEqual({ ...b }, { ...a }, `${show(a)}\n---\n${show(b)}`);

  const plainIdentify = await runCli(identify, env);
  const plainRefused = await runCli(refused, env);
  assert.equal(plainIdentify.code, 0, show(plainIdentify));
  assert.equal(plainRefused.code, 4, show(plainRefused));
  assert.deepEqual(await status(), []);

  // The first call runs in its own process (its pipes close at once: the session is detached) and starts a session.
  same(plainIdentify, await runCli(identify, persisted));
  const [session] = await until('the session', async () => {
    const rows = await status();
    return rows.length === 1 ? rows : undefined;
  });
  assert.equal(session!.profile, 'p');
  assert.equal(session!.calls, 0);
  assert.ok(alive(session!.pid));

  // Later calls go through it, output and exit codes as before.
  same(plainIdentify, await runCli(identify, persisted));
  same(plainRefused, await runCli(refused, persisted));
  assert.equal((await status())[0]!.calls, 2);

  // A request over 1 MiB is declined before it is parsed; the session goes on serving.
  const tooLarge = await new Promise<string>((done) => {
    const conn = connect(session!.socket);
    let reply = '';
    conn.setEncoding('utf8').on('data', (c: string) => (reply += c));
    conn.on('error', () => {});
    conn.on('close', () => done(reply));
    conn.end(`${JSON.stringify({ v: 1, op: 'call', argv: ['x'.repeat(2 * 1024 * 1024)], cwd: '/', env: {} })}\n`);
  });
  assert.deepEqual(JSON.parse(tooLarge), { fallback: 'request too large' });
  same(plainIdentify, await runCli(identify, persisted));
  assert.equal((await status())[0]!.calls, 3);

  // A runtime directory or a socket others may use is not used: the call works by itself and says nothing of it.
  const sessionDir = join(runtime, 'hostadm');
  chmodSync(sessionDir, 0o755);
  same(plainIdentify, await runCli(identify, persisted));
  chmodSync(sessionDir, 0o700);
  chmodSync(session!.socket, 0o666);
  same(plainIdentify, await runCli(identify, persisted));
  chmodSync(session!.socket, 0o600);
  assert.equal((await status())[0]!.calls, 3);

  // Another profile name for the same connection is another session's business: its own process.
  const other = await runCli(['call', 'rpc/identify', '--profile', 'nosuch'], persisted);
  assert.equal(other.code, 2, show(other));
  assert.equal((await status())[0]!.calls, 3);

  const stop = await runCli(['session', 'stop'], env);
  assert.equal(stop.code, 0, show(stop));
  assert.match(stop.stdout, /^stopped 1 persisted session$/m);
  await until('the stopped session to exit', () => (alive(session!.pid) ? undefined : true));
  assert.ok(!existsSync(session!.socket), 'its socket is removed');
  assert.deepEqual(await status(), []);

  // An idle time of 1 s: the session ends by itself. Its command line names its socket, under `runtime`;
  // it is there once the call that started it has exited, and lives at least the idle time.
  same(plainIdentify, await runCli(identify, { ...env, HOSTADM_PERSIST: '1s' }));
  const started = processesUnder(runtime);
  assert.equal(started.length, 1, 'one session started');
  await until('the idle session to exit', () => (started.some(alive) ? undefined : true));
  assert.deepEqual(readdirSync(sessionDir), [], 'no socket left');
  assert.deepEqual(await status(), []);

  // A session killed outright leaves its socket behind: the next call works by itself and starts a new one there.
  same(plainIdentify, await runCli(identify, persisted));
  const killed = await until('a session', async () => (await status())[0]);
  process.kill(killed.pid, 'SIGKILL');
  await until('the killed session to be gone', () => (alive(killed.pid) ? undefined : true));
  assert.ok(existsSync(killed.socket), 'the stale socket is still there');
  same(plainIdentify, await runCli(identify, persisted));
  const fresh = await until('the new session', async () => (await status()).find((row) => row.pid !== killed.pid));
  assert.equal(fresh.socket, killed.socket);

  // When its connection to the host ends (the bridge goes away), the session ends too.
  await stopUp();
  await until('the session to follow the bridge', () => (alive(fresh.pid) ? undefined : true));
  assert.deepEqual(readdirSync(sessionDir), [], 'no socket left');
});
