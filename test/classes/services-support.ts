/**
 * Shared by the services tests: signing in on platforms without password sign-in (a registered key
 * and the two-stage auth_ssl, as a real client does), and reading services back through the agent.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { parsePublicKey } from '@hostadm/agent/server/keys.ts';
import { TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import { ed25519Key, signatureProof } from '../helpers/keys.ts';

export interface ServiceRecord {
  description: string;
  is_enabled: string;
  is_running: string;
  name: string;
  path: string;
  tag: string;
}

/** A connection signed in as `user` with a key registered for it directly in the agent. */
export async function keySession(t: TestContext, agent: TestAgent, user = 'root'): Promise<TestClient> {
  const key = ed25519Key();
  agent.services.keys.register(user, key.pubKeyB64, parsePublicKey(key.pubKeyB64), { nickname: 'services-test' });
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  const stage1 = await client.request('rpc', 'auth_ssl', '');
  const { test_string } = stage1.args as { test_string: string };
  const stage2 = await client.request('rpc', 'auth_ssl', { signature: signatureProof(key, 'agent-signin', test_string) });
  assert.equal(stage2.name, 'response', JSON.stringify(stage2.args));
  return client;
}

export async function listServices(client: TestClient): Promise<Record<string, ServiceRecord>> {
  const reply = await client.call('services', 'list_services');
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return (reply.args as { services: Record<string, ServiceRecord> }).services;
}

/** Asserts an error envelope with `code`, returning its args for further checks. */
export function expectError(reply: Envelope, code: number): { code: number; message: string; errors?: Array<{ field: string; message: string }> } {
  assert.equal(reply.name, 'error', `expected a ${code}, got ${JSON.stringify(reply.args)}`);
  const args = reply.args as { code: number; message: string; errors?: Array<{ field: string; message: string }> };
  assert.equal(args.code, code, JSON.stringify(args));
  return args;
}

/** The reply args of a successful call. */
export async function ok(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const reply = await client.call('services', action, args);
  assert.equal(reply.name, 'response', `${action}: ${JSON.stringify(reply.args)}`);
  return reply.args;
}

/** Compares argv lists with the snapshot, one argv a line (as JSON, so argument boundaries show). */
export function snapshotArgv(t: TestContext, calls: string[][] | Record<string, string[][]>): void {
  const lines = (list: string[][], indent: string) => list.map((argv) => `${indent}${JSON.stringify(argv)}`).join('\n');
  const render = (value: unknown): string => {
    const v = value as string[][] | Record<string, string[][]>;
    if (Array.isArray(v)) return `\n${lines(v, '')}\n`;
    return `\n${Object.entries(v)
      .map(([action, list]) => `${action}:\n${lines(list, '  ')}`)
      .join('\n')}\n`;
  };
  t.assert.snapshot(calls, { serializers: [render] });
}
