/**
 * `hostadm up` as a subprocess on free ports with its own HOME/XDG_CONFIG_HOME and data directory: it
 * prints the commands to try; one of them runs through the bridge; a changed host key is refused
 * (exit 3); SIGTERM stops it. Started from the sources with a cold compile cache, it does not keep
 * Node's type stripper (~16 MiB) for its life.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOSTADM, runCli, show, startUp, type CliResult } from './cli-support.ts';

const root = new URL('../..', import.meta.url).pathname;

function runProgram(program: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(program, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

test('hostadm up: bridge + sim agent + profile; the printed command works through the bridge', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-up-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOSTADM_')) env[k] = v;
  // No hostadm installed on PATH (npm's node_modules/.bin does not count): from the checkout the banner says npx.
  const path = (env.PATH ?? '').split(':').filter((dir) => /\/node_modules\/\.bin\/?$/.test(dir) || !existsSync(join(dir, 'hostadm')));
  Object.assign(env, { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), PATH: path.join(':') });
  const child = spawn(HOSTADM, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(home, 'data')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  const command = /^ {2}npx hostadm (ps --profile \S+)$/m.exec(stdout);
  assert.ok(command, stdout);
  const cliEnv = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  // Exactly as printed, from the checkout.
  const ps = await runProgram('npx', ['hostadm', ...command[1]!.split(' ')], { ...env, ...cliEnv });
  assert.equal(ps.code, 0, show(ps));
  assert.match(ps.stdout, /PID/);

  // The admin password of this run: in a 0600 file the banner names, never on screen; it works directly.
  const direct = /^ +direct: (ws:\/\/127\.0\.0\.1:\d+) as admin, password in (\S+) \(mode 0600/m.exec(stdout);
  assert.ok(direct, stdout);
  const password = readFileSync(direct[2]!, 'utf8').trim();
  assert.equal(statSync(direct[2]!).mode & 0o777, 0o600);
  assert.ok(password.length >= 12 && !stdout.includes(password) && !stderr.includes(password), 'the password is not printed');
  const users = await runCli(['users', '--url', direct[1]!, '--user', 'admin'], { ...cliEnv, HOSTADM_PASSWORD: password });
  assert.equal(users.code, 0, show(users));

  // The web console: its URL serves the page, and its client join token sits in a 0600 file, not on screen.
  const web = /^web console: (http:\/\/127\.0\.0\.1:\d+\/) .*join token in (\S+),/m.exec(stdout);
  assert.ok(web, stdout);
  const page = await fetch(web[1]!);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>hostadm console<\/title>/);
  const consoleToken = readFileSync(web[2]!, 'utf8').trim();
  assert.equal(statSync(web[2]!).mode & 0o777, 0o600);
  assert.ok(consoleToken.length > 20 && !stdout.includes(consoleToken), 'the join token is not printed');

  // A second up on the same ports: one line naming the port and what holds it, exit 6, no stack.
  const agentPort = new URL(direct[1]!).port;
  const bridgePort = /bridge ws:\/\/127\.0\.0\.1:(\d+)\/relay/.exec(stdout)![1]!;
  const again = await runCli(['up', '--port-bridge', bridgePort, '--port-agent', agentPort, '--data', join(home, 'data2')], cliEnv);
  assert.equal(again.code, 6, show(again));
  assert.match(
    again.stderr,
    new RegExp(
      `^hostadm: cannot listen on 127\\.0\\.0\\.1:${bridgePort}: the port is in use by a hostadm bridge(?: \\(pid \\d+\\))?; stop it, or choose other ports with --port-bridge`,
      'm',
    ),
  );
  assert.doesNotMatch(again.stderr, /^\s+at /m);
  const agentAgain = await runCli(['agent', '--platform', 'sim', '--listen', `127.0.0.1:${agentPort}`, '--data', join(home, 'direct')], cliEnv);
  assert.equal(agentAgain.code, 6, show(agentAgain));
  assert.match(
    agentAgain.stderr,
    new RegExp(`^hostadm: cannot listen on 127\\.0\\.0\\.1:${agentPort}: the port is in use by a hostadm agent \\(host simhost(?:, pid \\d+)?\\)`, 'm'),
  );

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

test('hostadm up from the sources, cold compile cache: the running bridge and agent have not kept the type stripper', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'hostadm-up-stripper-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  // Node's own list of the built-in modules it loaded, written when `up` ends (after its restart in place, if any).
  const preload = join(home, 'loaded-builtins.cjs');
  const loaded = join(home, 'loaded-builtins.txt');
  writeFileSync(preload, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, process.moduleLoadList.join('\\n')));\n`);
  const stop = await startUp(t, home, {
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    NODE_COMPILE_CACHE: join(home, 'compile-cache'),
    NODE_OPTIONS: `--require ${preload}`,
  });
  // A call through the bridge, so whatever `up` loads to serve it counts too.
  const call = await runCli(['call', 'systemmanager', 'memorystats', '--profile', 'p'], { HOME: home, XDG_CONFIG_HOME: join(home, 'config') });
  assert.equal(call.code, 0, show(call));
  await stop();
  const modules = readFileSync(loaded, 'utf8').split('\n');
  assert.ok(modules.includes('NativeModule net'), 'the list was written by up itself');
  assert.ok(!modules.includes('NativeModule internal/deps/amaro/dist/index'), 'a module loaded after the restart needed the type stripper');
});
