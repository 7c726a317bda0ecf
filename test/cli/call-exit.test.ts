/**
 * A one-shot `hostadm call` ends as soon as its reply is written (lib/exit.ts, exitWhenWritten), not
 * when the bridge has answered its close: each command is the real binary in its own process. What a
 * user and the other side would notice stays the same: the whole reply arrives, even through a pipe
 * read late; the exit code; the bridge sees the client leave; the resumption ticket the first command
 * saved for the next one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cliSetup, HOSTADM, runCli, show } from './cli-support.ts';
import { bridgedProfile } from './bridged-profile.ts';

/** Runs hostadm with stdout read only after the process has exited: everything must already be in the pipe (or the exit waited for it). */
function runReadingLate(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(HOSTADM, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pause();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      child.stdout.once('end', () => resolve({ code, stdout, stderr }));
      child.stdout.resume();
    });
  });
}

test('a bridged call exits once its reply is written: the whole reply, the bridge sees it leave, the ticket kept', async (t) => {
  const { bridge, agent, config, env } = await bridgedProfile(t, 'call-exit');
  const first = await runCli(['call', 'systemmanager', 'memorystats', '--profile', 'lab'], {
    ...env,
    HOSTADM_JOIN_TOKEN: await bridge.token('client'),
    HOSTADM_ACCEPT_HOST_KEY: agent.services.hostKey.fingerprint,
  });
  assert.equal(first.code, 0, show(first));
  const tickets = readdirSync(join(config, 'hostadm', 'tickets'));
  assert.ok(
    tickets.some((f) => !f.startsWith('bridge-')),
    `the channel's resumption ticket was saved (${tickets.join(', ')})`,
  );

  // A reply of many lines (the simulated host's processes), read from the pipe only after the exit.
  const before = await bridge.metrics();
  const big = await runReadingLate(['call', 'systemmanager', 'procinfo', '--profile', 'lab'], env);
  assert.equal(big.code, 0, big.stderr);
  assert.equal(big.stderr, '');
  const reply = JSON.parse(big.stdout) as Record<string, unknown>;
  assert.ok(big.stdout.length > 1000 && Object.keys(reply).length > 0, 'the whole reply, as one JSON document');

  // The bridge saw the client go, with nothing to close on its side.
  let after = await bridge.metrics();
  for (let i = 0; i < 50 && after.connections.client > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await bridge.metrics();
  }
  assert.equal(after.connections.client, 0, 'the client left');
  assert.equal(after.signin_failures, before.signin_failures);
  assert.deepEqual(after.closes, before.closes, 'the bridge closed nothing itself');

  // An error still exits with its code and message.
  const refused = await runCli(['call', 'systemmanager', 'nosuch', '--profile', 'lab'], env);
  assert.equal(refused.code, 2, show(refused));
  assert.match(refused.stderr, /systemmanager has no action nosuch/);
});

/** Runs hostadm with stdout given as `stdout` (a file descriptor, or a pipe whose reader goes away at once). */
function runWithStdout(args: string[], env: Record<string, string>, stdout: number | 'closed-pipe'): Promise<{ code: number | null; stderr: string }> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HOSTADM_') && k !== 'XDG_CONFIG_HOME'));
  const child = spawn(HOSTADM, args, { env: { ...inherited, ...env }, stdio: ['ignore', stdout === 'closed-pipe' ? 'pipe' : stdout, 'pipe'] });
  if (stdout === 'closed-pipe') child.stdout?.destroy();
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

test('a reply that cannot be written is exit 1, never success and never a stack trace', async (t) => {
  const { env } = await cliSetup(t);
  const args = ['call', 'systemmanager', 'procinfo'];
  const gone = await runWithStdout(args, env, 'closed-pipe');
  assert.equal(gone.code, 1, gone.stderr);
  assert.equal(gone.stderr, '', 'nothing to say when the reader left (| head)');
  if (!existsSync('/dev/full')) {
    t.diagnostic('no /dev/full here: the full-device case is not run');
    return;
  }
  const full = openSync('/dev/full', 'w');
  try {
    const result = await runWithStdout(args, env, full);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, 'hostadm: the reply could not be written to standard output (ENOSPC: no space left on device, write)\n');
    // Nothing written to stdout, nothing lost: a usage error keeps its own code.
    const usage = await runWithStdout(['call', 'systemmanager', 'nosuch'], env, full);
    assert.equal(usage.code, 2, usage.stderr);
  } finally {
    closeSync(full);
  }
});
