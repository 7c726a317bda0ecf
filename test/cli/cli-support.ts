/**
 * Running the real `hostadm` binary as a subprocess (spawn, never spawnSync: the agent under test
 * runs in this process and must keep answering) against an in-process agent, with a private
 * XDG_CONFIG_HOME and the connection in the environment.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, SIM_PASSWORD, type TestAgent } from '../helpers/agent.ts';
import type { AgentOptions } from '@hostadm/agent/agent.ts';

export { SIM_PASSWORD };

const root = new URL('../..', import.meta.url).pathname;
export const HOSTADM = join(root, 'node_modules/.bin/hostadm');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without anything that would steer hostadm. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HOSTADM_') && k !== 'XDG_CONFIG_HOME') env[k] = v;
  return env;
}

/** `command`: instead of the hostadm binary, a program and its first arguments (`args` follow). */
export function runCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: { cwd?: string; command?: readonly string[] } = {},
): Promise<CliResult> {
  const full = baseEnv();
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete full[k];
    else full[k] = v;
  }
  const [program = HOSTADM, ...first] = options.command ?? [];
  const child = spawn(program, [...first, ...args], { cwd: options.cwd ?? root, env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface CliSetup {
  agent: TestAgent;
  /** The XDG_CONFIG_HOME of this test. */
  config: string;
  /** URL, admin user and password, private config directory. */
  env: Record<string, string>;
  run(args: readonly string[], env?: Record<string, string | undefined>): Promise<CliResult>;
}

export async function cliSetup(t: TestContext, overrides: Partial<AgentOptions> = {}): Promise<CliSetup> {
  const agent = await startTestAgent(overrides);
  const config = mkdtempSync(join(tmpdir(), 'hostadm-cli-config-'));
  t.after(async () => {
    await agent.dispose();
    rmSync(config, { recursive: true, force: true });
  });
  const env = { XDG_CONFIG_HOME: config, HOSTADM_URL: agent.url, HOSTADM_USER: 'admin', HOSTADM_PASSWORD: SIM_PASSWORD };
  return { agent, config, env, run: (args, extra = {}) => runCli(args, { ...env, ...extra }) };
}

/** Parses stdout as one JSON document, with the output in the message when it is not. */
export function json<T = unknown>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

export const show = (r: CliResult) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** Polls `probe` every 100 ms until it returns a value, failing the test after 30 s. */
export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `hostadm up` (profile `p`, data in `home/data`) in its own process, once its banner says it is
 * ready; stopped when the test ends, or earlier by the function returned.
 */
export async function startUp(t: TestContext, home: string, env: Record<string, string>): Promise<() => Promise<void>> {
  const up = spawn(HOSTADM, ['up', '--port-bridge', '0', '--port-agent', '0', '--data', join(home, 'data'), '--profile', 'p'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let banner = '';
  up.stdout.setEncoding('utf8').on('data', (c: string) => (banner += c));
  up.stderr.setEncoding('utf8').on('data', (c: string) => (banner += c));
  const stop = async () => {
    if (up.exitCode === null && up.signalCode === null) {
      up.kill('SIGTERM');
      await new Promise((r) => up.once('close', r));
    }
  };
  t.after(stop);
  await until('hostadm up', () => {
    if (up.exitCode !== null) assert.fail(`hostadm up exited:\n${banner}`);
    return banner.includes('Ctrl-C stops') ? true : undefined;
  });
  return stop;
}
