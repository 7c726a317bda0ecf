/**
 * `hostadm up` as a subprocess on free ports with its own HOME/XDG_CONFIG_HOME and data directory: it
 * prints the commands to try; one of them runs through the bridge; a changed host key is refused
 * (exit 3); SIGTERM stops it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOSTADM, runCli, show } from './cli-support.ts';

test('hostadm up: bridge + sim agent + profile; the printed command works through the bridge', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-up-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOSTADM_')) env[k] = v;
  Object.assign(env, { HOME: home, XDG_CONFIG_HOME: join(home, 'config') });
  const child = spawn(HOSTADM, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(home, 'data')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  const deadline = Date.now() + 30_000;
  while (!/Ctrl-C stops/.test(stdout)) {
    if (Date.now() > deadline || child.exitCode !== null) assert.fail(`hostadm up did not get ready:\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const command = /^ {2}hostadm (ps --profile \S+)$/m.exec(stdout);
  assert.ok(command, stdout);
  const cliEnv = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  const ps = await runCli(command[1]!.split(' '), cliEnv);
  assert.equal(ps.code, 0, show(ps));
  assert.match(ps.stdout, /PID/);

  const mem = await runCli(['call', 'systemmanager', 'memorystats', '--profile', 'local'], cliEnv);
  assert.equal(mem.code, 0, show(mem));
  assert.match(mem.stdout, /memorystats/);

  // A different pinned key for that host: refused, exit 3, both fingerprints named.
  const knownPath = join(home, 'config', 'hostadm', 'known_hosts.json');
  const known = JSON.parse(readFileSync(knownPath, 'utf8')) as Record<string, { hostKey: string; fingerprint: string }>;
  const entry = Object.keys(known)[0]!;
  const real = known[entry]!.fingerprint;
  known[entry] = { ...known[entry]!, hostKey: Buffer.alloc(32, 9).toString('base64') };
  writeFileSync(knownPath, JSON.stringify(known));
  const mismatch = await runCli(['ps', '--profile', 'local'], cliEnv);
  assert.equal(mismatch.code, 3, show(mismatch));
  assert.ok(mismatch.stderr.includes(real) && /pinned SHA256:/.test(mismatch.stderr), show(mismatch));

  // Not pinned and not interactive: refused unless the fingerprint is given.
  writeFileSync(knownPath, '{}');
  const unpinned = await runCli(['ps', '--profile', 'local'], cliEnv);
  assert.equal(unpinned.code, 3, show(unpinned));
  assert.ok(unpinned.stderr.includes(real), show(unpinned));
  const given = await runCli(['ps', '--profile', 'local', '--host-key', real], cliEnv);
  assert.equal(given.code, 0, show(given));

  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
});
