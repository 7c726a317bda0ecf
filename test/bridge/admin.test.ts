/**
 * Key administration as an operator does it: the real `hostadm bridge ...` CLI as a subprocess
 * (token, keys list, keys revoke, the bridge itself), revocation cutting a connected peer off at
 * once (4003), revocations made by another process picked up by the periodic re-read, and the
 * admin endpoint's authentication.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get as httpsGet } from 'node:https';
import { decodeJwt } from 'jose';
import WebSocket from 'ws';
import { SqliteKeyStore } from '@hostadm/bridge';
import { ed25519Key, rsaKey } from '../helpers/keys.ts';
import { loopbackCertificate } from '../helpers/tls.ts';
import { startTestBridge, until, nodeOnly } from './helpers.ts';
import { md5Of, signedInPeer, TestPeer } from './peers.ts';

const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(hostadm, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-bridge-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('hostadm bridge keys revoke cuts a connected peer off at once (4003); its sign-in fails afterwards', {
  skip: nodeOnly('the CLI finds the bridge through its data directory'),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const agentKey = ed25519Key();
  const clientKey = rsaKey();
  const { peer: agent } = await signedInPeer(bridge, 'server', agentKey, { md5Keys: [md5Of(clientKey)], nickname: 'web-1' });
  const { peer: client } = await signedInPeer(bridge, 'client', clientKey);
  t.after(() => client.close());
  await client.nextAnnouncement(0, (a) => a.available_connections.length === 1);
  const [key] = (await bridge.keys()).filter((k) => k.md5Key === md5Of(agentKey));

  // By key id; the CLI finds the running bridge through <data>/bridge.url.
  const since = client.received.length;
  const result = await run(['bridge', 'keys', 'revoke', key!.id, '--data', bridge.dataDir]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, new RegExp(`revoked ${key!.id} \\(agent web-1\\)`));
  assert.match(result.stdout, /cut off 1 connection/);
  assert.equal((await agent.closed).code, 4003);
  await client.nextAnnouncement(since, (a) => a.available_connections.length === 0);
  assert.equal((await bridge.metrics()).revocation_cutoffs, 1);

  const again = await TestPeer.connect(bridge.url, 'server');
  t.after(() => again.close());
  assert.deepEqual((await again.signIn(agentKey, true)).args, { code: 401, message: 'Unauthorized' });
  assert.deepEqual((await again.signIn(agentKey)).args, { code: 401, message: 'Unauthorized' });
  // A revoked key cannot be enrolled again.
  assert.equal(((await again.enroll(await bridge.token('agent'), agentKey)).args as { code: number }).code, 409);

  // By md5_key, twice: the second finds it already revoked and still succeeds.
  const byMd5 = await run(['bridge', 'keys', 'revoke', md5Of(clientKey), '--data', bridge.dataDir]);
  assert.equal(byMd5.code, 0, byMd5.stderr);
  assert.equal((await client.closed).code, 4003);
  const unknown = await run(['bridge', 'keys', 'revoke', 'k00000000000', '--data', bridge.dataDir]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no key k00000000000/);
});

test('a revocation written by another process is picked up by the periodic re-read', {
  skip: nodeOnly('another process writes the SQLite file; on Workers every revocation goes through the hub'),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const key = ed25519Key();
  const { peer } = await signedInPeer(bridge, 'server', key);
  // Another process (here: a second handle on the same database) revokes without telling the bridge.
  const other = new SqliteKeyStore(bridge.dataDir);
  await other.revoke(md5Of(key), bridge.clock.now());
  other.close();
  await bridge.sweep();
  assert.equal((await bridge.metrics()).connections.agent, 1, 'not before the re-read interval');
  await bridge.clock.advance(5);
  await bridge.sweep();
  assert.equal((await peer.closed).code, 4003);
});

test('POST /admin/revoke needs the admin secret', async (t) => {
  const bridge = await startTestBridge(t);
  const url = `${bridge.httpUrl}/admin/revoke`;
  const body = JSON.stringify({ key: 'k00000000000' });
  assert.equal((await fetch(url, { method: 'POST', body })).status, 401);
  assert.equal((await fetch(url, { method: 'POST', body, headers: { authorization: 'Bearer wrong' } })).status, 401);
  const headers = { authorization: `Bearer ${bridge.adminSecret}`, 'content-type': 'application/json' };
  assert.equal((await fetch(url, { method: 'POST', body, headers })).status, 404);
  assert.equal((await fetch(url, { method: 'POST', body: 'nope', headers })).status, 400);
});

test('hostadm bridge token prints a JWT that enrolls once; keys list --json shows the key', {
  skip: nodeOnly("the CLI signs with the data directory's join secret"),
}, async (t) => {
  const bridge = await startTestBridge(t);
  const out = await run(['bridge', 'token', '--data', bridge.dataDir, '--kind', 'client', '--nickname', 'alice-laptop', '--ttl', '2h']);
  assert.equal(out.code, 0, out.stderr);
  const token = out.stdout.trim();
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  const claims = decodeJwt(token);
  assert.equal(claims.sub, 'hostadm-join');
  assert.equal(claims.kind, 'client');
  assert.equal(claims.nickname, 'alice-laptop');
  assert.equal(typeof claims.jti, 'string');
  assert.equal(claims.exp! - claims.iat!, 7200);

  const key = rsaKey();
  const peer = await TestPeer.connect(bridge.url, 'client');
  t.after(() => peer.close());
  assert.equal((await peer.enroll(token, key)).name, 'response');
  assert.deepEqual((await peer.enroll(token, rsaKey())).args, { code: 401, message: 'Unauthorized' });
  assert.equal((await peer.signIn(key)).name, 'response');

  const listed = await run(['bridge', 'keys', 'list', '--data', bridge.dataDir, '--json']);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
  assert.equal(rows.length, 1);
  assert.deepEqual(Object.keys(rows[0]!).sort(), [
    'algorithm',
    'created_at',
    'created_by',
    'key_id',
    'kind',
    'last_seen_at',
    'md5_key',
    'nickname',
    'revoked_at',
  ]);
  assert.equal(rows[0]!.md5_key, md5Of(key));
  assert.equal(rows[0]!.kind, 'client');
  assert.equal(rows[0]!.algorithm, 'rsa');
  assert.equal(rows[0]!.nickname, 'alice-laptop');
  assert.equal(rows[0]!.revoked_at, null);
  assert.match(String(rows[0]!.created_at), /^\d{4}-\d\d-\d\dT/);
  assert.match(String(rows[0]!.last_seen_at), /^\d{4}-\d\d-\d\dT/);

  const table = await run(['bridge', 'keys', 'list', '--data', bridge.dataDir]);
  assert.match(table.stdout, /alice-laptop/);
  const bad = await run(['bridge', 'token', '--data', bridge.dataDir, '--kind', 'robot']);
  assert.notEqual(bad.code, 0);
});

test('hostadm bridge runs as a process: listening line, secrets 0600, healthz, bridge.url removed at exit', {
  skip: nodeOnly('the Node process and its data directory'),
}, async (t) => {
  const dir = tempDir(t);
  const child = spawn(hostadm, ['bridge', '--listen', '127.0.0.1:0', '--data', dir, '--log-level', 'warn'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await until(() => /listening on ws:\/\/127\.0\.0\.1:\d+\/relay/.test(stdout), 'the listening line', 30_000);
  const url = /listening on (ws:\/\/\S+)/.exec(stdout)![1]!;
  for (const secret of ['join-secret', 'admin-secret']) assert.equal(statSync(join(dir, secret)).mode & 0o777, 0o600, secret);
  const http = url.replace(/^ws/, 'http').replace(/\/relay$/, '');
  assert.equal(readFileSync(join(dir, 'bridge.url'), 'utf8').trim(), http);
  assert.deepEqual(await (await fetch(`${http}/healthz`)).json(), { ok: true });
  const peer = await TestPeer.connect(url, 'server');
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal((await peer.closed).code, 1001);
  assert.throws(() => statSync(join(dir, 'bridge.url')));
});

test('TLS: wss and https on one port with --tls-cert/--tls-key', { skip: nodeOnly("TLS is terminated by Cloudflare's edge on Workers") }, async (t) => {
  const dir = tempDir(t);
  const { certFile, keyFile, certPem } = loopbackCertificate(dir);
  const bridge = await startTestBridge(t, { tls: { certFile, keyFile } });
  assert.match(bridge.url, /^wss:\/\/127\.0\.0\.1:\d+\/relay$/);
  const health = await new Promise<string>((resolve, reject) => {
    httpsGet(`${bridge.httpUrl}/healthz`, { ca: certPem }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
  assert.deepEqual(JSON.parse(health), { ok: true });
  const ws = new WebSocket(bridge.url, { ca: certPem });
  t.after(() => ws.terminate());
  const firstTwo = await new Promise<string[]>((resolve, reject) => {
    const frames: string[] = [];
    ws.on('message', (d: Buffer) => frames.push(d.toString()) === 2 && resolve(frames));
    ws.once('error', reject);
  });
  assert.equal(JSON.parse(firstTwo[0]!).args.name, 'bridge_greeting');
  assert.equal(JSON.parse(firstTwo[1]!).id, 'bridge_request_ident');
});
