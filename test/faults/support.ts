/**
 * What the fault suite shares: a bridge and a sim agent as the user runs them (the `hostadm` binary,
 * separate processes, the agent reaching the bridge outbound only), a client key enrolled at the
 * bridge and registered on the agent, and SDK clients through the bridge.
 */
import type { TestContext } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { TestClient } from '../helpers/agent.ts';
import { bridgeTransport, connect, NodeWebSocket, type HostadmClient } from '../../client/sdk/src/node.ts';

const root = new URL('../..', import.meta.url).pathname;
export const HOSTADM = join(root, 'node_modules/.bin/hostadm');
export const PASSWORD = 'fault-suite-pw';

export interface Proc {
  child: ChildProcess;
  /** What it printed so far (stdout and stderr). */
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `hostadm <args>` and resolves once its output matches `ready` (with the match). */
export function startProcess(t: TestContext, args: string[], ready: RegExp): Promise<{ proc: Proc; match: RegExpExecArray }> {
  const child = spawn(HOSTADM, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const proc: Proc = { child, output: () => out, exited };
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (match) resolve({ proc, match });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`hostadm ${args[0]} exited (${code}) before it was ready:\n${out}`)));
  });
}

export function scratchDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `hostadm-faults-${prefix}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Resident memory of a process, in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/\d+/.exec(line ?? '')?.[0] ?? 0) * 1024;
}

export async function startBridgeProcess(t: TestContext, dataDir: string, port = 0, extra: string[] = []): Promise<{ proc: Proc; url: string; port: number }> {
  const { proc, match } = await startProcess(
    t,
    ['bridge', '--listen', `127.0.0.1:${port}`, '--data', dataDir, '--log-level', 'warn', ...extra],
    /listening on (ws:\/\/127\.0\.0\.1:(\d+)\/relay)/,
  );
  return { proc, url: match[1]!, port: Number(match[2]) };
}

export async function bridgeToken(dataDir: string, kind: 'agent' | 'client', nickname?: string): Promise<string> {
  const child = spawn(HOSTADM, ['bridge', 'token', '--data', dataDir, '--kind', kind, ...(nickname ? ['--nickname', nickname] : [])], { cwd: root });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((resolve) => child.once('close', resolve));
  const token = /\S+\.\S+\.\S+/.exec(out)?.[0];
  if (!token) throw new Error(`no token in: ${out}`);
  return token;
}

export async function startAgentProcess(
  t: TestContext,
  opts: { dataDir: string; bridgeUrl: string; joinToken?: string; nickname: string; extra?: string[] },
): Promise<{ proc: Proc; url: string }> {
  writeFileSync(join(opts.dataDir, '..', `${opts.nickname}-password`), `${PASSWORD}\n`, { mode: 0o600 });
  const args = [
    'agent',
    '--platform',
    'sim',
    '--listen',
    '127.0.0.1:0',
    '--data',
    opts.dataDir,
    '--sim-password-file',
    join(opts.dataDir, '..', `${opts.nickname}-password`),
    '--bridge',
    opts.bridgeUrl,
    '--nickname',
    opts.nickname,
    '--log-level',
    'warn',
    ...(opts.extra ?? []),
  ];
  if (opts.joinToken) {
    const file = join(opts.dataDir, '..', `${opts.nickname}-join`);
    writeFileSync(file, `${opts.joinToken}\n`, { mode: 0o600 });
    args.push('--join-file', file);
  }
  const { proc, match } = await startProcess(t, args, /listening on (ws:\/\/127\.0\.0\.1:\d+)/);
  return { proc, url: match[1]! };
}

export const keyPems = (key: TestKey) => ({
  privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
});

/** A client key registered on the agent for `admin` (directly, on loopback), and the agent's host key. */
export async function registerClientKey(agentUrl: string): Promise<{ key: TestKey; hostKey: string }> {
  const key = rsaKey();
  const admin = await TestClient.connect(agentUrl);
  const token = await admin.login('admin', PASSWORD);
  const registered = await admin.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof: signatureProof(key, 'register-proof', token) });
  if (registered.name !== 'response') throw new Error(`register failed: ${JSON.stringify(registered.args)}`);
  const identity = (await admin.request('rpc', 'identify', {})).args as { host_key: string };
  admin.close();
  return { key, hostKey: identity.host_key };
}

export function bridgedClient(opts: {
  bridgeUrl: string;
  nickname: string;
  key: TestKey;
  hostKey: string;
  joinToken?: string;
  reconnect?: boolean;
}): Promise<HostadmClient> {
  return connect({
    transport: bridgeTransport({
      bridgeUrl: opts.bridgeUrl,
      host: { name: opts.nickname },
      key: keyPems(opts.key),
      pinnedHostKey: opts.hostKey,
      ...(opts.joinToken ? { joinToken: opts.joinToken } : {}),
      webSocket: NodeWebSocket,
    }),
    reconnect: opts.reconnect ? { initialDelayMs: 100, maxDelayMs: 1000 } : false,
    connectTimeoutMs: 120_000,
    requestTimeoutMs: 120_000,
  });
}

/**
 * `bridgedClient` once the host is back at the bridge: until then each attempt is told at once that the
 * host is not online (the SDK never waits silently), and the next one follows 100 ms later, as a user would.
 */
export async function bridgedClientWhenOnline(opts: Parameters<typeof bridgedClient>[0], attempts = 300): Promise<HostadmClient> {
  for (let i = 0; ; i++) {
    try {
      return await bridgedClient(opts);
    } catch (e) {
      if (!(e instanceof Error && e.message.includes(`${opts.nickname} is not online`)) || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
