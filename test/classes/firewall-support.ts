/** Shared by the firewall tests: calls to `admin/firewall` that must succeed, or fail with a code. */
import assert from 'node:assert/strict';
import type { TestClient } from '../helpers/agent.ts';

/** The reply args of a successful firewall call. */
export async function fw(client: TestClient, action: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const reply = await client.call('firewall', action, args);
  assert.equal(reply.name, 'response', `${action}: ${JSON.stringify(reply.args)}`);
  return reply.args;
}

/** The error args of a firewall call that must fail with `code`. */
export async function fwError(client: TestClient, action: string, args: Record<string, unknown>, code: number): Promise<{ code: number; message: string }> {
  const reply = await client.call('firewall', action, args);
  assert.equal(reply.name, 'error', `${action}: expected a ${code}, got ${JSON.stringify(reply.args)}`);
  const err = reply.args as { code: number; message: string };
  assert.equal(err.code, code, JSON.stringify(err));
  return err;
}

export const SUCCESS = { result: 'success' };
