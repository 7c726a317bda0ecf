/**
 * Processes die: the bridge is killed (SIGKILL) while a client waits on a job and comes back on the
 * same port; the agent is killed while a job runs and is started again on the same data directory.
 * What a user sees in each case is stated and tested, through the bridge, with the real binary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConnectionError } from '../../client/sdk/src/node.ts';
import { bridgeToken, bridgedClient, bridgedClientWhenOnline, registerClientKey, scratchDir, startAgentProcess, startBridgeProcess } from './support.ts';

interface LogReply {
  log: { state?: string; success?: string; reason?: string; return_codes?: Record<string, string> };
}

test('bridge killed mid-command: the client is told at once, the agent comes back by itself, the job finished and its result is readable', async (t) => {
  const dir = scratchDir(t, 'kill-bridge');
  const bridgeDir = join(dir, 'bridge');
  const first = await startBridgeProcess(t, bridgeDir);
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const agent = await startAgentProcess(t, { dataDir: agentDir, bridgeUrl: first.url, joinToken: await bridgeToken(bridgeDir, 'agent', 'h1'), nickname: 'h1' });
  const { key, hostKey } = await registerClientKey(agent.url);
  const client = await bridgedClient({ bridgeUrl: first.url, nickname: 'h1', key, hostKey, joinToken: await bridgeToken(bridgeDir, 'client') });
  t.after(() => client.close());

  const job = await client.rpc.dispatcher.run({ survivor: ['sleep 2', 'echo done after the outage'] });
  assert.deepEqual(job.ack, { started: ['survivor'] });
  const waiting = job.done.then(
    () => 'finished while the bridge was gone?',
    (e: unknown) => e,
  );
  first.proc.child.kill('SIGKILL');
  const lost = await waiting;
  assert.ok(lost instanceof ConnectionError, `a connection error, not a hang: ${String(lost)}`);
  assert.match(lost.message, /lost|closed/);

  const restartedAt = Date.now();
  const second = await startBridgeProcess(t, bridgeDir, first.port);
  // The agent redials with capped backoff; until it is back a new client is told at once that h1 is not
  // online (never left waiting) and tries again.
  const again = await bridgedClientWhenOnline({ bridgeUrl: second.url, nickname: 'h1', key, hostKey });
  t.after(() => again.close());
  t.diagnostic(`the host was reachable again ${Date.now() - restartedAt} ms after the bridge restarted`);
  let log: LogReply | null = null;
  for (let i = 0; i < 100; i++) {
    log = (await again.rpc.dispatcher.log({ job_id: 'survivor' })) as unknown as LogReply;
    if (log.log.state === 'finished') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(log?.log.state, 'finished', JSON.stringify(log));
  assert.equal(log?.log.success, 'true');
  assert.deepEqual(log?.log.return_codes, { 'sleep 2': '0', 'echo done after the outage': '0' });
});

test('agent killed mid-job: after its restart the job reads as finished and failed, interrupted, and the next one runs', async (t) => {
  const dir = scratchDir(t, 'kill-agent');
  const bridgeDir = join(dir, 'bridge');
  const bridge = await startBridgeProcess(t, bridgeDir);
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const opts = { dataDir: agentDir, bridgeUrl: bridge.url, nickname: 'h2', extra: ['--max-parallel-jobs', '1'] };
  const agent = await startAgentProcess(t, { ...opts, joinToken: await bridgeToken(bridgeDir, 'agent', 'h2') });
  const { key, hostKey } = await registerClientKey(agent.url);
  const client = await bridgedClient({ bridgeUrl: bridge.url, nickname: 'h2', key, hostKey, joinToken: await bridgeToken(bridgeDir, 'client') });
  t.after(() => client.close());

  // One runs (a long sleep), one waits behind it in the queue.
  const job = await client.rpc.dispatcher.run({ cut_short: 'sleep 300', waiting: 'echo ran after the restart' });
  assert.deepEqual(job.ack, { started: ['cut_short', 'waiting'] });
  await new Promise((r) => setTimeout(r, 300));
  agent.proc.child.kill('SIGKILL');
  await agent.proc.exited;
  await assert.rejects(client.query(), ConnectionError, 'the client learns the host is gone');

  // Same data directory: the host key and the registered client key are still there (no new join token).
  const restarted = await startAgentProcess(t, opts);
  const again = await bridgedClientWhenOnline({ bridgeUrl: bridge.url, nickname: 'h2', key, hostKey });
  t.after(() => again.close());
  const cut = (await again.rpc.dispatcher.log({ job_id: 'cut_short' })) as unknown as LogReply;
  assert.equal(cut.log.state, 'finished');
  assert.equal(cut.log.success, 'false');
  assert.match(cut.log.reason ?? '', /interrupted: the agent stopped while this job was running/);
  let waiting: LogReply | null = null;
  for (let i = 0; i < 100; i++) {
    waiting = (await again.rpc.dispatcher.log({ job_id: 'waiting' })) as unknown as LogReply;
    if (waiting.log.state === 'finished') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(waiting?.log.success, 'true', `the queued job ran once the agent was back: ${JSON.stringify(waiting)}`);
  assert.ok(restarted.proc.child.exitCode === null);
});
