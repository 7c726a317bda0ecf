/**
 * Nothing accepted is lost: an agent process killed with SIGKILL while one job runs and another
 * waits is restarted on the same data directory; the running job is reported interrupted and the
 * pending one runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestClient, type Envelope } from '../helpers/agent.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const PASSWORD = 'restart-pw-1';

async function startAgentProcess(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    join(ROOT, 'node_modules/.bin/hostadm'),
    [
      'agent',
      '--platform',
      'sim',
      '--listen',
      '127.0.0.1:0',
      '--data',
      dataDir,
      '--sim-password',
      PASSWORD,
      '--max-parallel-jobs',
      '1',
      '--log-level',
      'warn',
      '--sim-host-commands',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`agent exited early (${code}): ${out}`)));
  });
  return { child, url };
}

const payload = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;

test('jobs running or queued when the agent is killed are accounted for after a restart', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-restart-'));
  let orphan = 0;
  const children: ChildProcess[] = [];
  t.after(() => {
    for (const c of children) c.kill('SIGKILL');
    if (orphan) {
      try {
        process.kill(orphan, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  const first = await startAgentProcess(dataDir);
  children.push(first.child);
  const client = await TestClient.connect(first.url);
  await client.login('admin', PASSWORD);
  await client.request('events', 'subscribe', ['dispatcher']);
  const slowStarted = client.nextEvent((e) => payload(e).proc_id === 'slow' && /^\d+/.test(String(payload(e).log)));
  const started = await client.request('rpc', 'dispatcher', { action: 'run', slow: `sh -c 'echo $$; exec sleep 300'`, queued: 'echo resumed' });
  assert.deepEqual(started.args, { started: ['slow', 'queued'] });
  orphan = Number(String(payload(await slowStarted).log).trim());
  client.close();

  const exited = new Promise((resolve) => first.child.once('exit', resolve));
  first.child.kill('SIGKILL');
  await exited;

  const second = await startAgentProcess(dataDir);
  children.push(second.child);
  const again = await TestClient.connect(second.url);
  t.after(() => again.close());
  await again.login('admin', PASSWORD);

  let jobs: Record<string, { state: string; success?: string; reason?: string }> = {};
  for (let i = 0; i < 200; i++) {
    const list = (await again.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: { no_queue?: typeof jobs } };
    jobs = list.jobs.no_queue ?? {};
    if (jobs.queued?.state === 'finished') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(jobs.slow?.state, 'finished');
  assert.equal(jobs.slow?.success, 'false');
  assert.match(jobs.slow?.reason ?? '', /interrupted: the agent stopped while this job was running/);
  assert.equal(jobs.queued?.state, 'finished');
  assert.equal(jobs.queued?.success, 'true');
  const log = await again.request('rpc', 'dispatcher', { action: 'log', job_id: 'queued' });
  assert.equal((log.args as { log: { log: string } }).log.log, 'resumed\n');

  // The interruption is also an event; a new subscriber gets the latest dispatcher event at once.
  await again.request('events', 'subscribe', ['dispatcher']);
  const latest = payload(await again.nextEvent());
  assert.equal(latest.proc_id, 'queued');
  assert.equal(latest.state, 'finished');
});
