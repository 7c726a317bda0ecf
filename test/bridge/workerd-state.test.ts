/**
 * scripts/workerd-bridge.ts, the harness every Workers bridge test and bench starts workerd with: a
 * process that ends without `stop` (node --test cancels a file with SIGTERM when it times out) leaves
 * neither workerd running nor its temporary state directory behind (it used to leave a
 * /tmp/hostadm-workerd-* of a few MB per cancelled run).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { BRIDGE_RUNTIME } from './helpers.ts';

const root = new URL('../..', import.meta.url).pathname;

/** Running (not zombie) processes whose process group is `pgrp` (workerd runs in wrangler's group). */
function groupMembers(pgrp: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(group) === pgrp && state !== 'Z') found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const CHILD = `
  import { startWorkerdBridge } from ${JSON.stringify(`${root}scripts/workerd-bridge.ts`)};
  const bridge = await startWorkerdBridge();
  const res = await fetch(bridge.httpUrl + '/healthz');
  // A socket on the relay hub: its Durable Object has state to flush when workerd shuts down.
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(bridge.httpUrl.replace('http', 'ws') + '/relay');
  await new Promise((resolve, reject) => { ws.once('message', resolve); ws.once('error', reject); });
  ws.terminate();
  console.log(JSON.stringify({ stateDir: bridge.stateDir, ok: res.ok, workerd: bridge.workerdPid(), wrangler: bridge.wranglerPid }));
  if (process.argv[1] === 'signal') process.kill(process.pid, 'SIGTERM');
  // 'exit': the event loop is left empty (workerd does not keep the process alive), so it ends.
`;

for (const how of ['signal', 'exit'] as const) {
  test(`a process that ends by ${how === 'signal' ? 'SIGTERM' : 'leaving its event loop'} without stop() takes workerd and its temporary state with it`, {
    // Runs once: it tests the harness, not a bridge runtime.
    skip: BRIDGE_RUNTIME === 'workers' ? 'the harness is tested in the node pass' : false,
    timeout: 120_000,
  }, async () => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', CHILD, how], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    const line = out.split('\n').find((l) => l.startsWith('{'));
    assert.ok(line, `the child started workerd and said where (exit ${JSON.stringify(exit)}):\n${out}\n${err}`);
    const started = JSON.parse(line) as { stateDir: string; workerd: number; wrangler: number; ok: boolean };
    assert.equal(started.ok, true, 'workerd answered before the child ended');
    if (how === 'signal') assert.equal(exit.signal, 'SIGTERM', 'the signal is re-raised: the process still ends by it');
    assert.equal(existsSync(started.stateDir), false, `${started.stateDir} is left behind`);
    // Already gone when the child has ended, not merely signalled: a workerd shutting down still flushes
    // its Durable Objects, and wrote their directories back into a state removed meanwhile (CI saw it).
    // wrangler runs detached, leading its own process group; zombies write nothing.
    assert.deepEqual(groupMembers(started.wrangler), [], "wrangler's process group still runs after the child ended");
    assert.equal(existsSync(started.stateDir), false, `${started.stateDir} was written again after its removal`);
  });
}
