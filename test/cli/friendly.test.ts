/**
 * The friendly commands, each a thin layer over the SDK: tables for people, one JSON document with
 * `--json`; `events` streams one line (or one JSON document) per event.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { TestClient } from '../helpers/agent.ts';
import { cliSetup, HOSTADM, json, show } from './cli-support.ts';

const headerOf = (stdout: string) =>
  stdout
    .split('\n')[0]!
    .split(/\s{2,}/)
    .filter(Boolean);
const rowsOf = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => l.split(/\s{2,}/));

test('ps: a process table, sortable; --json is an array with pid', async (t) => {
  const { run } = await cliSetup(t);
  const table = await run(['ps']);
  assert.equal(table.code, 0, show(table));
  assert.deepEqual(headerOf(table.stdout), ['PID', 'USER', 'STATE', 'CPU%', 'THR', 'RES', 'SIZE', 'TIME', 'COMMAND']);
  const rows = rowsOf(table.stdout);
  assert.deepEqual(rows[0]?.slice(0, 2), ['1', 'root']);
  assert.ok(rows.some((r) => r.at(-1) === '/sbin/init'));
  const pids = rows.map((r) => Number(r[0]));
  assert.deepEqual(
    pids,
    [...pids].sort((a, b) => a - b),
  );

  const data = json<Array<{ pid: string; username: string; command: string }>>(await run(['ps', '--json']));
  assert.equal(data.length, rows.length);
  assert.equal(data[0]?.pid, '1');
  assert.equal(data[0]?.command, '/sbin/init');
  const byUser = json<Array<{ username: string }>>(await run(['ps', '--json', '--filter-user', 'root', '--sort', 'cpu']));
  assert.ok(byUser.length > 0 && byUser.every((p) => p.username === 'root'));
});

test('users: accounts and groups as tables or JSON', async (t) => {
  const { run } = await cliSetup(t);
  const table = await run(['users']);
  assert.equal(table.code, 0, show(table));
  assert.deepEqual(headerOf(table.stdout), ['USER', 'UID', 'GID', 'HOME', 'SHELL', 'COMMENT']);
  assert.ok(rowsOf(table.stdout).some((r) => r[0] === 'admin' && r[1] === '1001'));
  const list = json<Array<{ name: string; uid: string }>>(await run(['users', '--json']));
  assert.ok(list.some((u) => u.name === 'admin' && u.uid === '1001'));
  const groups = json<Array<{ name: string; users: string[] }>>(await run(['users', '--groups', '--json']));
  assert.ok(groups.find((g) => g.name === 'wheel')?.users.includes('admin'));
  const groupTable = await run(['users', '--groups']);
  assert.deepEqual(headerOf(groupTable.stdout), ['GROUP', 'GID', 'MEMBERS']);
});

test('services: list, start and stop', async (t) => {
  const { run } = await cliSetup(t);
  const table = await run(['services']);
  assert.equal(table.code, 0, show(table));
  assert.deepEqual(headerOf(table.stdout), ['SERVICE', 'RUNNING', 'AT BOOT', 'DESCRIPTION']);
  const list = json<Array<{ name: string; is_running: string }>>(await run(['services', '--json']));
  assert.ok(list.some((s) => s.name === 'cron'));
  const stopped = await run(['services', 'stop', 'cron']);
  assert.equal(stopped.code, 0, show(stopped));
  assert.equal(stopped.stdout, 'stopped: cron\n');
  const after = json<Array<{ name: string; is_running: string }>>(await run(['services', 'list', '--json']));
  assert.equal(after.find((s) => s.name === 'cron')?.is_running, 'false');
  const unknown = await run(['services', 'start', 'no-such-service']);
  assert.equal(unknown.code, 4, show(unknown));
});

test('events: one line per event, or NDJSON with --json; --count stops', async (t) => {
  const { agent, env } = await cliSetup(t);
  const other = await TestClient.connect(agent.url);
  t.after(() => other.close());
  await other.login('admin');

  for (const mode of ['--json', 'text'] as const) {
    // The host replays the last event of a kind on subscribing: the second run sees the first's end first.
    const replayed = mode === '--json' ? 0 : 1;
    const args = mode === '--json' ? ['events', 'dispatcher', '--json', '--count', '3'] : ['events', '--count', '4'];
    const child = spawn(HOSTADM, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    const listening = new Promise<void>((resolve) =>
      child.stderr.setEncoding('utf8').on('data', (c: string) => {
        stderr += c;
        if (/listening for/.test(stderr)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    await listening;
    const id = `ev${mode === '--json' ? 'json' : 'text'}`;
    await other.request('rpc', 'dispatcher', { action: 'run', [id]: ['echo first', 'sleep 0.3', 'echo second'] });
    assert.equal(await exited, 0, `stdout:\n${stdout}\nstderr:\n${stderr}`);
    const all = stdout.trimEnd().split('\n');
    assert.equal(all.length, 3 + replayed);
    if (replayed) assert.match(all[0]!, /dispatcher evjson finished ok$/);
    const lines = all.slice(replayed);
    if (mode === '--json') {
      const events = lines.map((l) => JSON.parse(l) as { name: string; args: { proc_id: string; state: string } });
      assert.ok(events.every((e) => e.name === 'dispatcher' && e.args.proc_id === id));
      assert.equal(events.at(-1)?.args.state, 'finished');
    } else {
      assert.match(lines[0]!, new RegExp(`^\\d\\d:\\d\\d:\\d\\d dispatcher ${id} running`));
      assert.match(lines.at(-1)!, new RegExp(`dispatcher ${id} finished ok$`));
    }
  }
});

test('events: an unknown event name is a usage error', async (t) => {
  const { run } = await cliSetup(t);
  const result = await run(['events', 'no-such-event']);
  assert.equal(result.code, 2, show(result));
  assert.match(result.stderr, /refused before sending/);
});

test('events: the event replayed on subscribe shows when it happened, not when it was replayed', async (t) => {
  const { run } = await cliSetup(t);
  const done = await run(['jobs', 'run', '--id', 'replayed-1', '--progress', 'none', '--', 'true']);
  assert.equal(done.code, 0, show(done));
  // Let the clock pass the job's end (waiting, not measuring): a replay stamped now would be later.
  const finishedBy = Date.now();
  while (Date.now() <= finishedBy + 1) await new Promise((resolve) => setImmediate(resolve));
  const listening = Date.now();
  const first = await run(['events', 'dispatcher', '--json', '--count', '1']);
  const again = await run(['events', 'dispatcher', '--json', '--count', '1']);
  assert.equal(first.code, 0, show(first));
  const [a, b] = [first, again].map((r) => JSON.parse(r.stdout.trim()) as { time: string; args: { proc_id: string; state: string } });
  assert.equal(a!.args.proc_id, 'replayed-1');
  assert.equal(a!.args.state, 'finished');
  assert.ok(Date.parse(a!.time) <= finishedBy, `${a!.time} is the replay's time, not the event's`);
  assert.ok(Date.parse(a!.time) < listening);
  assert.equal(b!.time, a!.time, 'every replay carries the same, original time');
  // The line for people shows that time too (UTC, HH:MM:SS).
  const line = await run(['events', '--count', '1']);
  assert.ok(line.stdout.startsWith(`${a!.time.slice(11, 19)} dispatcher replayed-1 finished`), line.stdout);
});
