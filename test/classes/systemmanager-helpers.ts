/** Shared by the systemmanager tests: signing in where the platform has no password sign-in yet. */
import assert from 'node:assert/strict';
import { TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

/**
 * A client holding a session made directly in the agent's session store (what a key sign-in
 * would create), resumed over the WebSocket with `auth_token`.
 */
export async function clientWithSession(agent: TestAgent, user = 'root', level: 'full' | 'limited' = 'full'): Promise<TestClient> {
  const session = agent.services.sessions.create({
    user,
    level,
    groups: level === 'full' ? ['wheel'] : ['operator'],
    method: 'token',
    connectionId: '',
  });
  const client = await TestClient.connect(agent.url);
  const reply = await client.request('rpc', 'auth_token', { token: session.token });
  assert.equal(reply.name, 'response', JSON.stringify(reply));
  return client;
}

export function ok<T = Record<string, unknown>>(reply: Envelope): T {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args as T;
}

export function error(reply: Envelope, code: number, field?: string): { code: number; message: string; errors?: Array<{ field: string }> } {
  assert.equal(reply.name, 'error', `expected an error, got ${JSON.stringify(reply.args)}`);
  const args = reply.args as { code: number; message: string; errors?: Array<{ field: string }> };
  assert.equal(args.code, code, JSON.stringify(args));
  if (field !== undefined) {
    assert.ok(
      args.errors?.some((e) => e.field === field),
      `expected a field error on ${field}: ${JSON.stringify(args)}`,
    );
  }
  return args;
}

/** Values that must never reach a shell or an option parser unchanged. */
export const HOSTILE = [
  '; rm -rf /',
  '$(id)',
  '`id`',
  'a | cat /etc/shadow',
  'x && reboot',
  '-rf',
  '--help',
  'line\nbreak',
  'nul\u0000byte',
  'x'.repeat(100_000),
] as const;
