/**
 * Long work from the command line: a queued call shows a line log (not a terminal) or a progress bar
 * (`--progress bar`) on stderr and ends with the jobs' result on stdout; `--no-wait` prints the job
 * id; `jobs run|wait|log|kill|ack` and the job list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cliSetup, HOSTADM, json, show } from './cli-support.ts';

/** These jobs run real shells (exit codes, quoting): sim simulates jobs unless told otherwise. */
const REAL_JOBS = { simHostCommands: true };

interface Completion {
  proc_id: string;
  success: string;
  log: string;
  reason: string;
  state: string;
}

test('a queued call logs each job line by line on stderr and prints {ack, jobs} on stdout', async (t) => {
  const { run } = await cliSetup(t, REAL_JOBS);
  const result = await run(['call', 'rpc/dispatcher', 'run', 'job1=sleep 0.3', 'job2:=["echo one","sleep 0.2","echo two"]']);
  assert.equal(result.code, 0, show(result));
  const doc = json<{ ack: { started: string[] }; jobs: Record<string, Completion> }>(result);
  assert.deepEqual(doc.ack.started.sort(), ['job1', 'job2']);
  assert.equal(doc.jobs.job1?.success, 'true');
  assert.equal(doc.jobs.job2?.log, 'one\ntwo\n');
  const lines = result.stderr.trimEnd().split('\n');
  assert.ok(lines.includes('[job1] started'), result.stderr);
  assert.ok(lines.includes('[job2] one'));
  assert.ok(lines.includes('[job2] two'));
  assert.ok(lines.indexOf('[job2] one') < lines.indexOf('[job2] two'));
  assert.ok(
    lines.some((l) => /^\[job1\] succeeded in \d+\.\ds$/.test(l)),
    result.stderr,
  );
});

test('--progress bar draws a live bar per job on stderr and ends at 100%', async (t) => {
  const { run } = await cliSetup(t, REAL_JOBS);
  const result = await run(['call', 'rpc/dispatcher', 'run', 'barjob=sleep 0.6', '--progress', 'bar']);
  assert.equal(result.code, 0, show(result));
  assert.match(result.stderr, / barjob \|-+\| +-- running/);
  assert.match(result.stderr, / barjob \|=+\| 100% succeeded in \d+\.\ds/);
  assert.equal(json<{ jobs: Record<string, Completion> }>(result).jobs.barjob?.success, 'true');
  // --progress none: no display at all, the same result.
  const quiet = await run(['call', 'rpc/dispatcher', 'run', 'quietjob=echo x', '--progress', 'none']);
  assert.equal(quiet.code, 0);
  assert.equal(quiet.stderr, '');
});

test('a failed job exits 5 with its completion on stdout', async (t) => {
  const { run } = await cliSetup(t, REAL_JOBS);
  const result = await run(['call', 'rpc/dispatcher', 'run', 'failing:=["echo before","false"]']);
  assert.equal(result.code, 5, show(result));
  const doc = json<{ jobs: Record<string, Completion> }>(result);
  assert.equal(doc.jobs.failing?.success, 'false');
  assert.match(result.stderr, /\[failing\] failed: "false" exited with code 1/);
});

test('--no-wait prints the job id; jobs wait follows it; jobs lists it; log, kill and ack', async (t) => {
  const { run } = await cliSetup(t, REAL_JOBS);
  const started = await run(['call', 'rpc/dispatcher', 'run', 'later=sleep 0.5', '--no-wait']);
  assert.equal(started.code, 0, show(started));
  assert.equal(started.stdout, 'later\n');
  const waited = await run(['jobs', 'wait', 'later', '--json']);
  assert.equal(waited.code, 0, show(waited));
  assert.equal(json<Completion>(waited).success, 'true');

  const list = await run(['jobs']);
  assert.equal(list.code, 0, show(list));
  assert.match(list.stdout.split('\n')[0]!, /^QUEUE +ID +STATE +POS +RESULT +COMMANDS$/);
  assert.match(list.stdout, /^no_queue +later +finished +- +ok +sleep 0\.5$/m);
  const listed = json<Array<{ queue: string; id: string; state: string }>>(await run(['jobs', 'list', '--json']));
  assert.deepEqual(
    listed.map((j) => [j.queue, j.id, j.state]),
    [['no_queue', 'later', 'finished']],
  );

  const long = await run(['jobs', 'run', '--id', 'sleeper', '--no-wait', 'sleep', '30']);
  assert.equal(long.stdout, 'sleeper\n');
  const killed = await run(['jobs', 'kill', 'sleeper']);
  assert.equal(killed.code, 0, show(killed));
  assert.equal(killed.stdout, 'cancelled: sleeper\n');
  const gone = await run(['jobs', 'wait', 'sleeper', '--json']);
  assert.equal(gone.code, 5);
  assert.match(json<Completion>(gone).reason, /killed/);

  const acked = await run(['jobs', 'ack', 'later', 'sleeper']);
  assert.equal(acked.code, 0, show(acked));
  assert.deepEqual(json(await run(['jobs', '--json'])), []);
  const unknown = await run(['jobs', 'wait', 'never-was']);
  assert.equal(unknown.code, 4, show(unknown));
});

test("jobs run streams the output to stdout and exits with the job's result", async (t) => {
  const { run } = await cliSetup(t, REAL_JOBS);
  const ok = await run(['jobs', 'run', '--id', 'greet', '--', 'sh', '-c', 'echo "hello  world"; sleep 0.2; echo done']);
  assert.equal(ok.code, 0, show(ok));
  assert.equal(ok.stdout, 'hello  world\ndone\n');
  assert.match(ok.stderr, /\[greet\] succeeded/);
  const log = await run(['jobs', 'log', 'greet']);
  assert.equal(log.stdout, 'hello  world\ndone\n');

  const failed = await run(['jobs', 'run', '--json', 'sh -c "exit 3"']);
  assert.equal(failed.code, 5, show(failed));
  assert.match(json<Completion>(failed).reason, /exited with code 3/);
});

test('Ctrl-C while waiting stops waiting (exit 130) and says the job keeps running', async (t) => {
  const { env } = await cliSetup(t, REAL_JOBS);
  const child = spawn(HOSTADM, ['jobs', 'run', '--id', 'patient', 'sleep', '30'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const startedLine = new Promise<void>((resolve) =>
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      if (/\[patient\] started/.test(stderr)) resolve();
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  await startedLine;
  child.kill('SIGINT');
  assert.equal(await exited, 130, stderr);
  assert.match(stderr, /still running on the host: patient/);
  assert.match(stderr, /hostadm jobs kill patient/);
});
