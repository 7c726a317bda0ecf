import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CommandError, SAFE_ENV, createRunner, runChecked } from './runner.ts';
import { RecordingRunner } from './recording-runner.ts';

const runner = createRunner();

/**
 * Gone means no such process, or a zombie: once killed, our test's grandchildren are reparented to
 * PID 1, which in a container may never reap them, so kill(pid, 0) alone would still succeed.
 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  try {
    // The state field follows the parenthesised command name, which may itself contain spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** A process that has closed its pipes may take a moment to be marked dead; wait, but not forever. */
async function waitGone(pids: number[], deadlineMs = 10_000): Promise<number[]> {
  const until = Date.now() + deadlineMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
    alive = alive.filter(isAlive);
  }
  return alive;
}

function pidsFrom(stdout: string): number[] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
}

test('captures stdout, stderr and the exit code', async () => {
  const result = await runner.run(['sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.equal(result.stdout, 'out\n');
  assert.equal(result.stderr, 'err\n');
  assert.equal(result.code, 3);
  assert.equal(result.signal, null);
  assert.equal(result.timedOut, false);
  assert.equal(result.truncated, false);
  assert.deepEqual(result.argv, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
});

test('input reaches the process on stdin, as text or bytes', async () => {
  assert.equal((await runner.run(['cat'], { input: 's3cret\n' })).stdout, 's3cret\n');
  const bytes = new TextEncoder().encode('héllo');
  assert.equal((await runner.run(['cat'], { input: bytes })).stdout, 'héllo');
});

test('without input stdin is closed, so a reader does not hang', async () => {
  const result = await runner.run(['cat'], { timeoutMs: 30_000 });
  assert.equal(result.code, 0);
  assert.equal(result.timedOut, false);
  assert.equal(result.stdout, '');
});

test('input a command never reads does not break the run', async () => {
  const result = await runner.run(['true'], { input: 'x'.repeat(4 * 1024 * 1024) });
  assert.equal(result.code, 0);
});

test('shell metacharacters in arguments are passed literally', async () => {
  for (const arg of ['a; echo pwned', '$(echo pwned)', '`echo pwned`', 'a && b | c > /dev/null', '\'"*?~']) {
    const result = await runner.run(['printf', '%s', arg]);
    assert.equal(result.stdout, arg);
  }
});

test('a timeout kills the whole process group, background children included', async () => {
  const result = await runner.run(['sh', '-c', 'sleep 30 & echo $!; sleep 31 & echo $!; wait'], { timeoutMs: 300 });
  assert.equal(result.timedOut, true);
  assert.equal(result.code, null);
  assert.equal(result.signal, 'SIGTERM');
  const pids = pidsFrom(result.stdout);
  assert.equal(pids.length, 2, `expected two pids, got ${JSON.stringify(result.stdout)}`);
  assert.deepEqual(await waitGone(pids), [], 'background sleeps outlived the timeout');
});

test('a process ignoring SIGTERM is killed after the grace period', async () => {
  const result = await runner.run(['sh', '-c', "trap '' TERM; sleep 30 & echo $!; wait"], { timeoutMs: 300, graceMs: 300 });
  assert.equal(result.timedOut, true);
  assert.equal(result.code, null);
  const pids = pidsFrom(result.stdout);
  assert.equal(pids.length, 1);
  assert.deepEqual(await waitGone(pids), [], 'sleep survived SIGKILL of its group');
});

test('aborting the signal kills the process group', async () => {
  const controller = new AbortController();
  const running = runner.run(['sh', '-c', 'sleep 30 & echo $!; wait'], { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  const result = await running;
  assert.equal(result.timedOut, false);
  assert.equal(result.code, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.deepEqual(await waitGone(pidsFrom(result.stdout)), []);
});

test('an already aborted signal rejects without running anything', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-'));
  try {
    const marker = join(dir, 'ran');
    await assert.rejects(runner.run(['touch', marker], { signal: AbortSignal.abort() }), { name: 'AbortError' });
    assert.throws(() => readFileSync(marker), { code: 'ENOENT' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing binary resolves with code 127 and says so', async () => {
  const result = await runner.run(['hostadm-no-such-command-xyz', '--help']);
  assert.equal(result.code, 127);
  assert.match(result.stderr, /command not found: hostadm-no-such-command-xyz/);
  await assert.rejects(runChecked(runner, ['hostadm-no-such-command-xyz']), CommandError);
});

test('a missing working directory rejects and names the directory, not the command', async () => {
  await assert.rejects(runner.run(['true'], { cwd: '/nonexistent/hostadm-dir' }), /working directory does not exist/);
});

test('cwd sets the working directory', async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'runner-')));
  try {
    assert.equal((await runner.run(['pwd'], { cwd: dir })).stdout, `${dir}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the prefix is prepended to every command', async () => {
  const prefixed = createRunner({ prefix: ['env', 'FOO=bar'] });
  const result = await prefixed.run(['sh', '-c', 'echo $FOO']);
  assert.equal(result.stdout, 'bar\n');
  assert.deepEqual(result.argv, ['env', 'FOO=bar', 'sh', '-c', 'echo $FOO']);
  assert.throws(() => createRunner({ prefix: [''] }), TypeError);
});

test('output beyond the cap is dropped and flagged, and the process runs to completion', async () => {
  const result = await runner.run(['sh', '-c', 'yes | head -c 100000; echo done >&2'], { maxOutputBytes: 1000 });
  assert.equal(result.code, 0);
  assert.equal(result.truncated, true);
  assert.equal(result.stdout, 'y\n'.repeat(500));
  assert.equal(result.stderr, 'done\n');
});

test("the child sees a minimal environment, not the agent's", async () => {
  const secret = randomBytes(8).toString('hex');
  process.env['HOSTADM_TEST_SECRET'] = secret;
  try {
    const result = await runner.run(['env'], { env: { EXTRA: 'yes' } });
    assert.ok(!result.stdout.includes(secret), 'agent environment leaked into the child');
    const env = new Map(
      result.stdout
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.equal(env.get('PATH'), SAFE_ENV['PATH']);
    assert.equal(env.get('LANG'), 'C.UTF-8');
    assert.equal(env.get('EXTRA'), 'yes');
    assert.equal(env.has('HOSTADM_TEST_SECRET'), false);
  } finally {
    delete process.env['HOSTADM_TEST_SECRET'];
  }
});

test('anything but a non-empty argv of strings is refused before spawning', async () => {
  const bad: unknown[] = [[], [''], ['a\0b'], ['echo', 'x\0y'], 'echo hi', [42], undefined];
  for (const argv of bad) {
    await assert.rejects(runner.run(argv as string[]), TypeError, `accepted ${JSON.stringify(argv)}`);
  }
});

test('runChecked returns on success and throws a CommandError carrying the result otherwise', async () => {
  const ok = await runChecked(runner, ['echo', 'hi']);
  assert.equal(ok.stdout, 'hi\n');

  const long = 'e'.repeat(2000);
  const error = await runChecked(runner, ['sh', '-c', `echo ${long} >&2; exit 9`]).then(
    () => assert.fail('expected a CommandError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof CommandError);
  assert.equal(error.result.code, 9);
  assert.match(error.message, /^sh exited with code 9: e+$/);
  assert.ok(error.message.length < 600, 'stderr in the message is not capped');

  const prefixed = createRunner({ prefix: ['env'] });
  await assert.rejects(runChecked(prefixed, ['false']), /^CommandError: false exited with code 1$/m);
});

test('RecordingRunner answers from canned replies and records every call', async () => {
  const rec = new RecordingRunner([
    { match: ['id', '-Gn', 'alice'], stdout: 'alice wheel\n' },
    { match: (argv) => argv[0] === 'useradd', code: 9, stderr: 'exists', once: true },
    { match: (argv) => argv[0] === 'useradd' },
  ]);
  assert.equal((await rec.run(['id', '-Gn', 'alice'])).stdout, 'alice wheel\n');
  assert.equal((await rec.run(['useradd', 'bob'], { input: 'pw' })).code, 9);
  assert.equal((await rec.run(['useradd', 'bob'])).code, 0);
  assert.deepEqual(rec.calls, [
    ['id', '-Gn', 'alice'],
    ['useradd', 'bob'],
    ['useradd', 'bob'],
  ]);
  assert.equal(rec.options[1]?.input, 'pw');

  await assert.rejects(rec.run(['rm', '-rf', '/home/bob']), /no canned reply for \["rm","-rf","\/home\/bob"\]/);
  assert.deepEqual(rec.calls.at(-1), ['rm', '-rf', '/home/bob']);
  await assert.rejects(rec.run([]), TypeError);
});

test('RecordingRunner applies its prefix and matches against the full argv', async () => {
  const rec = new RecordingRunner([{ match: ['chroot', '/tmp/root', 'id', 'bob'], stdout: 'uid=1001\n' }], {
    prefix: ['chroot', '/tmp/root'],
  });
  const result = await rec.run(['id', 'bob']);
  assert.equal(result.stdout, 'uid=1001\n');
  assert.deepEqual(result.argv, ['chroot', '/tmp/root', 'id', 'bob']);
  assert.deepEqual(rec.calls, [['chroot', '/tmp/root', 'id', 'bob']]);
});
