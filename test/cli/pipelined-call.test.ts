/**
 * Cold bridged `hostadm call`s against a real `hostadm up` (a bridge and a sim agent in their own
 * process, free ports, the test's own HOME): each command is the real binary in its own process and
 * resumes with the ticket the one before left, its call leaving in RC's flight (the ticket says the
 * host allows it: `pipelining`). Each still prints its result and leaves a fresh ticket for the next.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, show, startUp } from './cli-support.ts';

interface KeptTicket {
  ticket: string;
  pipelining?: boolean;
}

test('cold bridged calls through hostadm up: each prints its result and leaves a fresh ticket that allows pipelining', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-pipelined-'));
  // Removed once `up` has stopped: removed while it still ran, its agent wrote the sim state back.
  let stopUp: (() => Promise<void>) | undefined;
  t.after(async () => {
    await stopUp?.();
    rmSync(home, { recursive: true, force: true });
  });
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  stopUp = await startUp(t, home, env);
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
