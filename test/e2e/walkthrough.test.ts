/**
 * docs/quickstart.md, run as written: the commands of its `walkthrough:*` blocks, each through the real
 * `hostadm` binary in its own process: a bridge, a sim host that only dials out to it, and a client
 * that knows nothing but the bridge's URL and a join token. Placeholders are replaced only where a test
 * must: free ports for 12160/12150 and the bridge's real address for `bridge.example.net:12160`. On the
 * Workers runtime the bridge is the local workerd and the tokens come from its admin API, as the doc
 * says for the edge.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BRIDGE_RUNTIME, nodeOnly, startTestBridge } from '../bridge/helpers.ts';
import { HOSTADM, runCli, show, type CliResult } from '../cli/cli-support.ts';

const root = new URL('../..', import.meta.url).pathname;
const DOC_BRIDGE = 'ws://bridge.example.net:12160';

interface Step {
  env: Record<string, string>;
  argv: string[];
  background: boolean;
  stdoutTo?: string;
}

/** The commands of one `<!-- walkthrough:NAME -->` block of docs/quickstart.md. */
function walkthrough(name: string): Step[] {
  const doc = readFileSync(join(root, 'docs/quickstart.md'), 'utf8');
  const block = new RegExp(`<!-- walkthrough:${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(doc);
  assert.ok(block, `docs/quickstart.md has a walkthrough:${name} block`);
  return block[1]!
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      let words = line.split(/\s+/).map((w) => w.replace(/^'(.*)'$/, '$1'));
      const env: Record<string, string> = {};
      while (/^[A-Z_]+=/.test(words[0] ?? '')) {
        const [k, ...v] = words.shift()!.split('=');
        env[k!] = v.join('=');
      }
      const background = words.at(-1) === '&';
      if (background) words = words.slice(0, -1);
      let stdoutTo: string | undefined;
      const redirect = words.indexOf('>');
      if (redirect >= 0) {
        stdoutTo = words[redirect + 1];
        words = words.slice(0, redirect);
      }
      assert.deepEqual(words.slice(0, 2), ['npx', 'hostadm'], `every walk-through line runs hostadm: ${line}`);
      return { env, argv: words.slice(2), background, ...(stdoutTo ? { stdoutTo } : {}) };
    });
}

/** A long-running command; resolves once its stdout matches `ready`. */
async function startBackground(
  t: TestContext,
  cwd: string,
  argv: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray; output: () => string }> {
  const child = spawn(HOSTADM, argv, { cwd, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = ready.exec(out);
    if (match) return { child, match, output: () => out + err };
    if (Date.now() > deadline || child.exitCode !== null) assert.fail(`hostadm ${argv.join(' ')} did not start:\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOSTADM_') && k !== 'XDG_CONFIG_HOME') env[k] = v;
  return env;
}

async function runStep(step: Step, cwd: string, env: Record<string, string>): Promise<CliResult> {
  const result = await runCli(step.argv, { ...env, ...step.env }, { cwd });
  if (step.stdoutTo) writeFileSync(join(cwd, step.stdoutTo), result.stdout);
  return result;
}

const replaceAll = (argv: string[], from: string, to: string) => argv.map((a) => a.split(from).join(to));

interface Machines {
  /** Where each machine keeps its files (tokens are copied between them, as a person would). */
  bridgeDir: string;
  hostDir: string;
  clientDir: string;
  clientEnv: Record<string, string>;
  bridgeUrl: string;
  hostKey: string;
  agentOutput: () => string;
}

/** Steps 1 and 2 of the walk-through: a bridge, its tokens, and the host dialing out to it. */
async function bridgeAndHost(t: TestContext, hostFlags: string[] = []): Promise<Machines> {
  const top = mkdtempSync(join(tmpdir(), 'hostadm-walk-'));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const [bridgeDir, hostDir, clientDir] = ['bridge', 'host', 'client'].map((d) => join(top, d));
  for (const d of [bridgeDir!, hostDir!, clientDir!]) mkdirSync(d);
  const [serve, ...tokens] = walkthrough('bridge');
  let bridgeUrl: string;
  if (BRIDGE_RUNTIME === 'node') {
    const argv = replaceAll(serve!.argv, '0.0.0.0:12160', '127.0.0.1:0');
    const { match } = await startBackground(t, bridgeDir!, argv, serve!.env, /listening on (ws:\/\/\S+)/);
    bridgeUrl = match[1]!;
    for (const step of tokens) {
      const r = await runStep(step, bridgeDir!, {});
      assert.equal(r.code, 0, show(r));
    }
  } else {
    // The edge: the local workerd, and tokens through its admin API as the doc shows.
    const bridge = await startTestBridge(t);
    bridgeUrl = bridge.url;
    for (const step of tokens) {
      const argv = step.argv.flatMap((a, i, all) => (a === '--data' ? ['--url', bridge.httpUrl] : all[i - 1] === '--data' ? [] : [a]));
      const r = await runStep({ ...step, argv }, bridgeDir!, { HOSTADM_BRIDGE_ADMIN_SECRET: bridge.adminSecret });
      assert.equal(r.code, 0, show(r));
    }
  }
  // Tokens travel to the host and the client.
  writeFileSync(join(hostDir!, 'agent.token'), readFileSync(join(bridgeDir!, 'agent.token')));
  writeFileSync(join(clientDir!, 'client.token'), readFileSync(join(bridgeDir!, 'client.token')));

  const [agentStep] = walkthrough('host');
  let agentArgv = replaceAll(replaceAll(agentStep!.argv, '127.0.0.1:12150', '127.0.0.1:0'), DOC_BRIDGE, bridgeUrl);
  agentArgv = [...agentArgv, ...hostFlags];
  const agent = await startBackground(t, hostDir!, agentArgv, agentStep!.env, /Host key: (SHA256:\S+)/);
  const clientEnv = { HOME: clientDir!, XDG_CONFIG_HOME: join(clientDir!, 'config') };
  return { bridgeDir: bridgeDir!, hostDir: hostDir!, clientDir: clientDir!, clientEnv, bridgeUrl, hostKey: agent.match[1]!, agentOutput: agent.output };
}

test('docs/quickstart.md as written: bridge, a host behind NAT, a client with only the bridge URL and a token', { timeout: 180_000 }, async (t) => {
  const m = await bridgeAndHost(t);
  const [keysNew, hosts, login, ps, call] = walkthrough('client').map((s) => ({ ...s, argv: replaceAll(s.argv, DOC_BRIDGE, m.bridgeUrl) }));

  const made = await runStep(keysNew!, m.clientDir, m.clientEnv);
  assert.equal(made.code, 0, show(made));

  // Enrolls the key with the token and lists web1, which does not know the key yet.
  const listed = await runStep(hosts!, m.clientDir, m.clientEnv);
  assert.equal(listed.code, 0, show(listed));
  assert.match(listed.stdout, new RegExp(`web1\\s+${m.hostKey.replace(/[+]/g, '\\+')}\\s+password sign-in\\s+\\d{4}-\\d\\d-\\d\\dT\\S+\\s+no`), show(listed));

  // Not interactive: the answers are given ahead, as the doc says for scripts.
  const loggedIn = await runStep(login!, m.clientDir, { ...m.clientEnv, HOSTADM_ACCEPT_HOST_KEY: m.hostKey, HOSTADM_PASSWORD: 'hostadm' });
  assert.equal(loggedIn.code, 0, show(loggedIn));
  assert.match(loggedIn.stdout, /registered the key/, show(loggedIn));
  assert.match(loggedIn.stdout, /profile web1 saved \(the default\)/, show(loggedIn));

  // From now on the key alone: no password in the environment.
  const procs = await runStep(ps!, m.clientDir, m.clientEnv);
  assert.equal(procs.code, 0, show(procs));
  assert.match(procs.stdout, /PID/);
  const memory = await runStep(call!, m.clientDir, m.clientEnv);
  assert.equal(memory.code, 0, show(memory));
  assert.match(memory.stdout, /memorystats/);

  // The host now lists the key: access by key, and the host key is pinned.
  const again = await runStep(
    { ...hosts!, argv: hosts!.argv.filter((a, i, all) => a !== '--join-file' && all[i - 1] !== '--join-file') },
    m.clientDir,
    m.clientEnv,
  );
  assert.equal(again.code, 0, show(again));
  assert.match(again.stdout, /web1\s+SHA256:\S+\s+key\s+\S+\s+yes/, show(again));

  // The agent's own log says it served the client through the bridge, never directly.
  assert.doesNotMatch(m.agentOutput(), /"transport":"websocket"/);
});

test('a wrong password inside the channel is refused (exit 3) and registers nothing', { timeout: 120_000 }, async (t) => {
  const m = await bridgeAndHost(t);
  const steps = walkthrough('client').map((s) => ({ ...s, argv: replaceAll(s.argv, DOC_BRIDGE, m.bridgeUrl) }));
  assert.equal((await runStep(steps[0]!, m.clientDir, m.clientEnv)).code, 0);
  const bad = await runStep(steps[2]!, m.clientDir, {
    ...m.clientEnv,
    HOSTADM_JOIN_TOKEN: readFileSync(join(m.clientDir, 'client.token'), 'utf8').trim(),
    HOSTADM_ACCEPT_HOST_KEY: m.hostKey,
    HOSTADM_PASSWORD: 'wrong',
  });
  assert.equal(bad.code, 3, show(bad));
  // Without a password there is no way in: the key is still unknown to the host.
  const ps = await runCli(['ps', '--bridge', m.bridgeUrl, '--host', 'web1'], m.clientEnv, { cwd: m.clientDir });
  assert.equal(ps.code, 3, show(ps));
  assert.match(ps.stderr, /does not know this key yet/, show(ps));
  assert.match(ps.stderr, /hostadm agent keys authorize \S+==/, show(ps));
});

test('without passwords: the host administrator authorizes the key by its md5, and the first login proves and registers it', {
  timeout: 120_000,
  skip: nodeOnly('the agent keys command runs on the host; one runtime is enough'),
}, async (t) => {
  const m = await bridgeAndHost(t, ['--no-password-auth']);
  const steps = walkthrough('client').map((s) => ({ ...s, argv: replaceAll(s.argv, DOC_BRIDGE, m.bridgeUrl) }));
  const made = await runStep(steps[0]!, m.clientDir, m.clientEnv);
  const md5 = /md5_key\s+(\S+==)/.exec(made.stdout)?.[1];
  assert.ok(md5, show(made));
  // Enrolled, but web1 accepts neither the key nor a password: it is not offered.
  const none = await runStep(steps[1]!, m.clientDir, m.clientEnv);
  assert.equal(none.code, 0, show(none));
  assert.match(none.stdout, /no host at .* accepts the key/, show(none));

  const authorized = await runCli(['agent', 'keys', 'authorize', md5, '--user', 'admin', '--data', './agent-data'], {}, { cwd: m.hostDir });
  assert.equal(authorized.code, 0, show(authorized));
  assert.match(authorized.stdout, /authorized md5_key .* for admin until/);
  const pending = await runCli(['agent', 'keys', 'pending', '--data', './agent-data', '--json'], {}, { cwd: m.hostDir });
  assert.equal((JSON.parse(pending.stdout) as Array<{ md5_key: string }>)[0]?.md5_key, md5, show(pending));

  // The running agent tells the bridge within about two seconds.
  let login: CliResult | undefined;
  for (let i = 0; i < 40; i++) {
    login = await runStep(steps[2]!, m.clientDir, { ...m.clientEnv, HOSTADM_ACCEPT_HOST_KEY: m.hostKey });
    if (login.code === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(login!.code, 0, show(login!));
  assert.match(login!.stdout, /signed in with the key/);
  const ps = await runStep(steps[3]!, m.clientDir, m.clientEnv);
  assert.equal(ps.code, 0, show(ps));
  const spent = await runCli(['agent', 'keys', 'pending', '--data', './agent-data'], {}, { cwd: m.hostDir });
  assert.match(spent.stdout, /no pending authorizations/);
  // Neither a file nor an md5: refused, nothing written.
  const junk = await runCli(['agent', 'keys', 'authorize', 'x;rm -rf /', '--user', 'admin', '--data', './agent-data'], {}, { cwd: m.hostDir });
  assert.equal(junk.code, 2, show(junk));
});
