/**
 * Shared steps of the `auth_ssl` tests (auth-ssl.test.ts: signing in; auth-ssl-keys.test.ts: key
 * registration and management): password sessions, registering a key with proof, both sign-in stages
 * and the reply checks.
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { clientFor, type Envelope, type TestAgent, type TestClient } from '../helpers/agent.ts';
import { originalProof, signatureProof, type TestKey } from '../helpers/keys.ts';

export function unauthorized(id: string) {
  return { id, name: 'error', namespace: 'rpc', args: { code: 401, message: 'Unauthorized' } };
}

/** A connection signed in with a password, and its token (what a proof signs). */
export async function passwordSession(t: TestContext, agent: TestAgent, user: string): Promise<{ client: TestClient; token: string }> {
  const client = await clientFor(t, agent);
  const token = await client.login(user);
  return { client, token };
}

export type Form = 'original' | 'signature';

export function proofFor(key: TestKey, message: string, form: Form): string {
  return form === 'original' ? originalProof(key, message) : signatureProof(key, 'register-proof', message);
}

/** Registers `key` on a signed-in connection, proving possession by signing the session token. */
export async function register(
  session: { client: TestClient; token: string },
  key: TestKey,
  options: { form?: Form; nickname?: string; email?: string; namespace?: string; action?: string } = {},
): Promise<Envelope> {
  const args: Record<string, unknown> = { pub_key: key.pubKeyB64, proof: proofFor(key, session.token, options.form ?? 'signature') };
  if (options.nickname !== undefined) args.nickname = options.nickname;
  if (options.email !== undefined) args.email = options.email;
  return session.client.request(options.namespace ?? 'admin', 'settings', { action: options.action ?? 'register_ssl_cert', ...args });
}

export async function registerOk(session: { client: TestClient; token: string }, key: TestKey, options: Parameters<typeof register>[2] = {}) {
  const reply = await register(session, key, options);
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  assert.deepEqual(reply.args, {});
}

/** Stage 1: the test string for this connection. */
export async function stage1(client: TestClient): Promise<string> {
  const reply = await client.request('rpc', 'auth_ssl', '');
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const args = reply.args as { test_string: string };
  assert.deepEqual(Object.keys(args), ['test_string']);
  assert.match(args.test_string, /^[A-Za-z0-9]+$/);
  return args.test_string;
}

export function stage2Args(key: TestKey, testString: string, form: Form): Record<string, string> {
  return form === 'original' ? { encrypted_string: originalProof(key, testString) } : { signature: signatureProof(key, 'agent-signin', testString) };
}

/** Both stages on `client`; returns the stage 2 reply. */
export async function sslSignIn(client: TestClient, key: TestKey, form: Form, id?: string): Promise<Envelope> {
  const testString = await stage1(client);
  return client.request('rpc', 'auth_ssl', stage2Args(key, testString, form), id);
}

export function assertTokenReply(reply: Envelope): string {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  const [token, seconds] = reply.args as [string, number];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  return token;
}

export async function listCerts(client: TestClient): Promise<Record<string, Record<string, unknown>>> {
  const reply = await client.call('settings', 'list_ssl_certs');
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return reply.args as Record<string, Record<string, unknown>>;
}

export function md5OfKey(key: TestKey): string {
  return createHash('md5').update(Buffer.from(key.pubKeyB64, 'base64').toString('utf8')).digest('base64');
}

export function assertBadRequestNaming(reply: Envelope, field: string): void {
  assert.equal(reply.name, 'error');
  const args = reply.args as { code: number; errors?: Array<{ field: string }> };
  assert.equal(args.code, 400);
  assert.ok(
    args.errors?.some((e) => e.field === field),
    `400 should name ${field}: ${JSON.stringify(args)}`,
  );
}

export function assertCode(reply: Envelope, code: number): void {
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  assert.equal((reply.args as { code: number }).code, code, JSON.stringify(reply.args));
}
