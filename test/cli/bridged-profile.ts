/**
 * A bridge, a sim agent joined to it as `simhost`, and a CLI profile `lab` that reaches it through the
 * bridge with a new RSA key registered at the host: what the tests of bridged commands start from.
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFor, type TestAgent, registerKey } from '../helpers/agent.ts';
import type { TestKey } from '../helpers/keys.ts';
import { startTestBridge, type TestBridge } from '../bridge/helpers.ts';
import { runCli, show } from './cli-support.ts';

export interface BridgedProfile {
  bridge: TestBridge;
  agent: TestAgent;
  /** The private XDG_CONFIG_HOME of every command. */
  config: string;
  env: Record<string, string>;
}

export async function bridgedProfile(t: TestContext, name: string): Promise<BridgedProfile> {
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await agent.bridgeLink?.ready();
  const config = mkdtempSync(join(tmpdir(), `hostadm-${name}-`));
  t.after(() => rmSync(config, { recursive: true, force: true }));
  const env = { XDG_CONFIG_HOME: config, NO_COLOR: '1' };

  assert.equal((await runCli(['keys', 'new', '--name', 'laptop'], env)).code, 0);
  const keyPath = join(config, 'hostadm', 'keys', 'laptop.key');
  const privateKey = createPrivateKey(readFileSync(keyPath, 'utf8'));
  const spkiPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  const key: TestKey = { privateKey, pubKeyB64: Buffer.from(spkiPem).toString('base64'), algorithm: 'rsa' };
  await registerKey(t, agent, key);
  const added = await runCli(['profile', 'add', 'lab', '--bridge', bridge.url, '--host', 'simhost', '--key', keyPath], env);
  assert.equal(added.code, 0, show(added));
  return { bridge, agent, config, env };
}
