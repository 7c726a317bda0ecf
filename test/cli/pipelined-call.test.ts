/**
 * Cold bridged `hostadm call`s against a real `hostadm up` (a bridge and a sim agent in their own
 * process, free ports, the test's own HOME): each command is the real binary in its own process and
 * resumes with the ticket the one before left, its call leaving in RC's flight (the ticket says the
 * host allows it: `pipelining`). Each still prints its result and leaves a fresh ticket for the next.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOSTADM, runCli, show } from './cli-support.ts';

async function startUp(t: TestContext, home: string, env: Record<string, string>): Promise<void> {
  const up = spawn(HOSTADM, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(home, 'data'), '--profile', 'p'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let banner = '';
  up.stdout.setEncoding('utf8').on('data', (c: string) => (banner += c));
  up.stderr.setEncoding('utf8').on('data', (c: string) => (banner += c));
  // One hook, in this order: removed while `up` still ran, its agent wrote the sim state back into `home`.
  t.after(async () => {
    if (up.exitCode === null && up.signalCode === null) {
      up.kill('SIGTERM');
      await new Promise((r) => up.once('close', r));
    }
    rmSync(home, { recursive: true, force: true });
  });
  const deadline = Date.now() + 60_000;
  while (!banner.includes('Ctrl-C stops')) {
    if (up.exitCode !== null) assert.fail(`hostadm up exited:\n${banner}`);
    if (Date.now() > deadline) assert.fail(`hostadm up did not start:\n${banner}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface KeptTicket {
  ticket: string;
  pipelining?: boolean;
}

test('cold bridged calls through hostadm up: each prints its result and leaves a fresh ticket that allows pipelining', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-pipelined-'));
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  await startUp(t, home, env);
  const ticketFile = join(home, 'config', 'hostadm', 'tickets', 'profile-p.json');
  const call = ['call', 'systemmanager', 'memorystats', '--profile', 'p'];
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) {
    const result = await runCli(call, env);
    assert.equal(result.code, 0, show(result));
    assert.match(result.stdout, /"memorystats"/, show(result));
    assert.ok(existsSync(ticketFile), `call ${i + 1} left a ticket`);
    const kept = JSON.parse(readFileSync(ticketFile, 'utf8')) as KeptTicket;
    assert.equal(kept.pipelining, true, 'the host takes requests in RC’s flight');
    assert.ok(!seen.includes(kept.ticket), `call ${i + 1} left a fresh ticket`);
    seen.push(kept.ticket);
  }
  // A call the host refuses still says why (the request in RC's flight is answered like any other).
  const refused = await runCli(['call', 'users', 'usermod', 'name=nobodyhere', 'shell=/bin/sh', '--profile', 'p'], env);
  assert.equal(refused.code, 4, show(refused));
  assert.ok(!seen.includes((JSON.parse(readFileSync(ticketFile, 'utf8')) as KeptTicket).ticket), 'and leaves a fresh ticket too');
});
