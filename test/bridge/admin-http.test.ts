/**
 * The bridge's admin API (docs/bridge-protocol.md §2.8: GET /admin/keys, POST /admin/tokens,
 * POST /admin/revoke) and the operator commands in URL mode (`hostadm bridge token|keys list|keys
 * revoke --url`), which use only that API, so they work against a bridge on any runtime: everything
 * here but the comparisons with the data directory runs on both (HOSTADM_BRIDGE_RUNTIME).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { createBridgeApp } from '@hostadm/bridge/app.ts';
import type { Relay } from '@hostadm/bridge/relay/relay.ts';
import { ed25519Key, rsaKey } from '../helpers/keys.ts';
import { startTestBridge, until, type TestBridge } from './helpers.ts';
import { md5Of, TestPeer } from './peers.ts';

const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real CLI, with no HOSTADM_* variable from this process unless given. */
function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HOSTADM_')));
  const child = spawn(hostadm, args, { cwd: root, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const onWorkers = process.env.HOSTADM_BRIDGE_RUNTIME === 'workers';

const show = (r: Run) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** A peer that has answered the bridge's identify request (so its next call is not refused as too early). */
async function identified(t: TestContext, url: string, type: 'server' | 'client', md5Keys: string[] = []): Promise<TestPeer> {
  const peer = await TestPeer.connect(url, type, md5Keys);
  t.after(() => peer.close());
  await until(() => peer.bridgeRequests.some((r) => r.id === 'bridge_request_ident'), 'the identify request');
  return peer;
}

/** The bridge's admin secret (the Node bridge keeps it in <data>/admin-secret) and a caller of its API. */
function admin(bridge: TestBridge) {
  const secret = (bridge as { adminSecret?: string }).adminSecret ?? readFileSync(join(bridge.dataDir, 'admin-secret'), 'utf8').trim();
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown, auth = `Bearer ${secret}`) => {
    const res = await fetch(`${bridge.httpUrl}${path}`, {
      method,
      headers: { ...(auth ? { authorization: auth } : {}), 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: string } };
  };
  return { secret, call };
}

test('the admin routes need the admin secret: 401 without it or with a wrong one', async (t) => {
  const bridge = await startTestBridge(t);
  const { call } = admin(bridge);
  const routes: Array<['GET' | 'POST', string, unknown]> = [
    ['GET', '/admin/keys', undefined],
    ['POST', '/admin/tokens', { kind: 'agent' }],
    ['POST', '/admin/revoke', { key: 'k00000000000' }],
  ];
  for (const [method, path, body] of routes) {
    const none = await call(method, path, body, '');
    assert.equal(none.status, 401, `${path} without a secret`);
    assert.match(none.body.error!, /Unauthorized/);
    const wrong = await call(method, path, body, 'Bearer wrong-secret');
    assert.equal(wrong.status, 401, `${path} with a wrong secret`);
    assert.match(wrong.body.error!, /wrong admin secret/);
  }
  assert.equal((await call('GET', '/admin/keys')).status, 200);
});

test('an empty admin secret turns the admin API off (503), whatever is sent', async () => {
  const app = createBridgeApp({ relay: {} as Relay, adminSecret: '', runtime: { remoteAddress: () => '', upgrade: () => new Response() } });
  for (const auth of [undefined, 'Bearer ', 'Bearer x']) {
    const res = await app.request('/admin/keys', { headers: auth ? { authorization: auth } : {} });
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: string }).error, /ADMIN_SECRET/);
  }
});

test('POST /admin/tokens refuses bad bodies with 400 and a message naming the field', async (t) => {
  const bridge = await startTestBridge(t);
  const { call } = admin(bridge);
  const bad: Array<[unknown, RegExp]> = [
    ['not json', /expected a JSON body/],
    [{}, /kind/],
    [{ kind: 'robot' }, /kind: expected "agent" or "client"/],
    [{ kind: 'server' }, /kind/],
    [{ kind: 'agent', ttl_seconds: 0 }, /ttl_seconds: at least 1/],
    [{ kind: 'agent', ttl_seconds: 365 * 86400 + 1 }, /ttl_seconds: at most 31536000/],
    [{ kind: 'agent', ttl_seconds: 1.5 }, /ttl_seconds/],
    [{ kind: 'agent', ttl_seconds: '60' }, /ttl_seconds/],
    [{ kind: 'agent', nickname: 'web;rm -rf /' }, /nickname: 1-64 letters/],
    [{ kind: 'agent', nickname: '$(id)' }, /nickname/],
    [{ kind: 'agent', nickname: 'a`b`' }, /nickname/],
    [{ kind: 'agent', nickname: 'two words' }, /nickname/],
    [{ kind: 'agent', nickname: '' }, /nickname/],
    [{ kind: 'agent', nickname: 'n'.repeat(65) }, /nickname/],
    [{ kind: 'agent', created_by: 'me|you' }, /created_by/],
    [{ kind: 'agent', extra: 1 }, /unknown field\(s\): extra/],
  ];
  for (const [body, message] of bad) {
    const reply = await call('POST', '/admin/tokens', body);
    assert.equal(reply.status, 400, JSON.stringify(body));
    assert.match(reply.body.error!, message, JSON.stringify(body));
  }
  assert.equal((await call('POST', '/admin/tokens', { kind: 'agent', nickname: 'n'.repeat(64), ttl_seconds: 365 * 86400 })).status, 200);
});

test('a token from POST /admin/tokens enrolls once and the key shows in GET /admin/keys; revoke sets revoked_at', async (t) => {
  const bridge = await startTestBridge(t);
  const { call } = admin(bridge);

  const before = bridge.clock.now();
  const issued = await call('POST', '/admin/tokens', { kind: 'agent', nickname: 'web-2', ttl_seconds: 120 });
  assert.equal(issued.status, 200);
  const { token, expires_at, jti, kind, nickname } = issued.body as { token: string; expires_at: string; jti: string; kind: string; nickname: string };
  assert.deepEqual([kind, nickname], ['agent', 'web-2']);
  const claims = decodeJwt(token);
  assert.equal(claims.jti, jti);
  assert.equal(claims.created_by, 'admin-api');
  assert.equal(claims.exp! - claims.iat!, 120);
  assert.equal(Date.parse(expires_at), claims.exp! * 1000);
  assert.ok(Math.abs(Date.parse(expires_at) - (before + 120_000)) < 2000);
  // Defaults: an hour, no nickname.
  const plain = (await call('POST', '/admin/tokens', { kind: 'client' })).body as { token: string; nickname: null };
  assert.equal(plain.nickname, null);
  const plainClaims = decodeJwt(plain.token);
  assert.equal(plainClaims.exp! - plainClaims.iat!, 3600);
  assert.equal(plainClaims.nickname, undefined);

  const key = ed25519Key();
  const peer = await identified(t, bridge.url, 'server', [md5Of(rsaKey())]);
  // A client token does not enroll an agent; the agent token enrolls once.
  assert.deepEqual((await peer.enroll(plain.token, key)).args, { code: 401, message: 'Unauthorized' });
  assert.equal((await peer.enroll(token, key)).name, 'response');
  assert.deepEqual((await peer.enroll(token, ed25519Key())).args, { code: 401, message: 'Unauthorized' });
  assert.equal((await peer.signIn(key, true)).name, 'response');

  // (On Workers the key store is shared by every test's hub: find this test's key.)
  const listed = (await call('GET', '/admin/keys')).body.keys as Array<Record<string, unknown>>;
  const row = listed.find((k) => k.md5_key === md5Of(key))!;
  assert.ok(row, JSON.stringify(listed));
  assert.deepEqual(Object.keys(row), ['key_id', 'md5_key', 'kind', 'nickname', 'algorithm', 'created_by', 'created_at', 'last_seen_at', 'revoked_at']);
  assert.equal(row.md5_key, md5Of(key));
  assert.deepEqual([row.kind, row.nickname, row.algorithm, row.created_by, row.revoked_at], ['agent', 'web-2', 'ed25519', 'admin-api', null]);
  assert.match(String(row.created_at), /^\d{4}-\d\d-\d\dT.*Z$/);
  assert.match(String(row.last_seen_at), /^\d{4}-\d\d-\d\dT.*Z$/);

  const revoked = await call('POST', '/admin/revoke', { key: row.key_id });
  assert.equal(revoked.status, 200);
  assert.equal(revoked.body.disconnected, 1);
  assert.equal((await peer.closed).code, 4003);
  const after = ((await call('GET', '/admin/keys')).body.keys as Array<Record<string, unknown>>).find((k) => k.md5_key === md5Of(key))!;
  assert.match(String(after.revoked_at), /^\d{4}-\d\d-\d\dT.*Z$/);
  assert.equal(after.revoked_at, (revoked.body.revoked as { revoked_at: string }).revoked_at);

  // An expired token enrolls nothing.
  const short = (await call('POST', '/admin/tokens', { kind: 'agent', ttl_seconds: 1 })).body as { token: string };
  await bridge.clock.advance(5);
  const late = await identified(t, bridge.url, 'server');
  assert.deepEqual((await late.enroll(short.token, ed25519Key())).args, { code: 401, message: 'Unauthorized' });
});

/** A private directory with the secret in a file, as an operator away from the bridge keeps it. */
function secretFiles(t: TestContext, secret: string): { dir: string; secretFile: string; wrongFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-bridge-admin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'admin-secret'), `${secret}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'wrong-secret'), 'not-the-secret\n', { mode: 0o600 });
  return { dir, secretFile: join(dir, 'admin-secret'), wrongFile: join(dir, 'wrong-secret') };
}

test('hostadm bridge token|keys list|keys revoke --url: the same results through the admin API', async (t) => {
  const bridge = await startTestBridge(t);
  const { secret } = admin(bridge);
  const { secretFile } = secretFiles(t, secret);
  const url = bridge.httpUrl;

  const out = await run(['bridge', 'token', '--url', url, '--admin-secret-file', secretFile, '--kind', 'client', '--nickname', 'alice-laptop', '--ttl', '2h']);
  assert.equal(out.code, 0, show(out));
  const token = out.stdout.trim();
  const claims = decodeJwt(token);
  assert.deepEqual([claims.sub, claims.kind, claims.nickname, claims.exp! - claims.iat!], ['hostadm-join', 'client', 'alice-laptop', 7200]);
  assert.equal(claims.created_by, userInfo().username);

  const key = rsaKey();
  const peer = await identified(t, bridge.url, 'client', [md5Of(key)]);
  assert.equal((await peer.enroll(token, key)).name, 'response');
  assert.equal((await peer.signIn(key, true)).name, 'response');

  // The secret from the environment, the ws:// address as peers use it: the same JSON as --data prints.
  const [remote, table, local] = await Promise.all([
    run(['bridge', 'keys', 'list', '--url', bridge.url, '--json'], { HOSTADM_BRIDGE_ADMIN_SECRET: secret }),
    run(['bridge', 'keys', 'list', '--url', url], { HOSTADM_BRIDGE_ADMIN_SECRET: secret }),
    onWorkers ? null : run(['bridge', 'keys', 'list', '--data', bridge.dataDir, '--json']),
  ]);
  assert.equal(remote.code, 0, show(remote));
  if (local) assert.equal(remote.stdout, local.stdout);
  const row = (JSON.parse(remote.stdout) as Array<Record<string, unknown>>).find((k) => k.md5_key === md5Of(key))!;
  assert.deepEqual(Object.keys(row), ['key_id', 'md5_key', 'kind', 'algorithm', 'nickname', 'created_by', 'created_at', 'last_seen_at', 'revoked_at']);
  assert.deepEqual([row.kind, row.nickname, row.created_by, row.revoked_at], ['client', 'alice-laptop', userInfo().username, null]);
  assert.match(table.stdout, /alice-laptop/);
  assert.match(table.stdout, new RegExp(String(row.key_id)));

  const revoked = await run(['bridge', 'keys', 'revoke', md5Of(key), '--url', url, '--admin-secret-file', secretFile]);
  assert.equal(revoked.code, 0, show(revoked));
  assert.equal(revoked.stdout, `revoked ${row.key_id} (client alice-laptop)\nbridge at ${url} cut off 1 connection(s)\n`);
  assert.equal((await peer.closed).code, 4003);
  const again = JSON.parse((await run(['bridge', 'keys', 'list', '--url', url, '--json'], { HOSTADM_BRIDGE_ADMIN_SECRET: secret })).stdout) as Array<
    Record<string, unknown>
  >;
  assert.match(String(again.find((k) => k.key_id === row.key_id)!.revoked_at), /^\d{4}-/);
});

test('hostadm bridge --url: wrong secret 3, unreachable 6, bad arguments 2, unknown key 4', async (t) => {
  const bridge = await startTestBridge(t);
  const url = bridge.httpUrl;
  const { dir, wrongFile } = secretFiles(t, admin(bridge).secret);
  const env = { HOSTADM_BRIDGE_ADMIN_SECRET: admin(bridge).secret };
  // A port nothing listens on.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));

  const cases: Array<[string[], Record<string, string>, number, RegExp]> = [
    [
      ['bridge', 'keys', 'list', '--url', url, '--admin-secret-file', wrongFile],
      env,
      3,
      /401 Unauthorized: the bridge at .* refused the admin secret from .*wrong-secret/,
    ],
    [
      ['bridge', 'token', '--kind', 'agent', '--url', url],
      { HOSTADM_BRIDGE_ADMIN_SECRET: 'nope' },
      3,
      /refused the admin secret from HOSTADM_BRIDGE_ADMIN_SECRET/,
    ],
    [['bridge', 'keys', 'list', '--url', `http://127.0.0.1:${port}`], env, 6, /cannot reach the bridge at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/],
    [['bridge', 'keys', 'revoke', 'k00000000000', '--url', url], env, 4, /404: no key k00000000000/],
    [['bridge', 'keys', 'list', '--url', 'ftp://example.org'], env, 2, /--url "ftp:\/\/example\.org": expected an http\(s\) or ws\(s\) URL/],
    [['bridge', 'keys', 'list', '--url', 'not a url'], env, 2, /--url "not a url"/],
    [['bridge', 'token', '--kind', 'agent', '--nickname', 'web;reboot', '--url', url], env, 2, /--nickname "web;reboot": expected 1-64 letters/],
    [['bridge', 'token', '--kind', 'agent', '--nickname', '$(id)', '--data', join(dir, 'data')], {}, 2, /--nickname/],
    [['bridge', 'keys', 'list', '--admin-secret-file', wrongFile], {}, 2, /--admin-secret-file goes with --url/],
    [['bridge', 'keys', 'list', '--url', url, '--admin-secret-file', join(dir, 'missing')], {}, 2, /--admin-secret-file .*missing: ENOENT/],
    [
      ['bridge', 'keys', 'list', '--url', url, '--data', join(dir, 'nowhere')],
      {},
      2,
      /no admin secret for http:.*\n.*--admin-secret-file FILE or set HOSTADM_BRIDGE_ADMIN_SECRET/,
    ],
  ];
  const results = await Promise.all(cases.map(([args, extra]) => run(args, extra)));
  cases.forEach(([args, , code, message], i) => {
    const r = results[i]!;
    assert.equal(r.code, code, `${args.join(' ')}\n${show(r)}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
  });
  // With neither a secret file nor the variable, <data>/admin-secret is used (on a bridge's own machine).
  const fromData = await run(['bridge', 'keys', 'list', '--url', url, '--data', dir, '--json']);
  assert.equal(fromData.code, 0, show(fromData));
  assert.ok(Array.isArray(JSON.parse(fromData.stdout)));
});
