/**
 * Bounded work before sign-in on the bridge (issue 12 item 3, bridge side), on both runtimes: a big or
 * deeply nested frame from a peer that has not signed in is refused unparsed, one address holds a
 * bounded number of sockets, and /metrics is the operator's. Each failed before the change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createBridgeApp } from '@hostadm/bridge/app.ts';
import type { Relay } from '@hostadm/bridge/relay/relay.ts';
import { startTestBridge, BRIDGE_RUNTIME, until } from './helpers.ts';
import { TestPeer } from './peers.ts';

test('a 3 MB nested frame before sign-in closes the peer (1009) unparsed; the bridge serves the next peer', async (t) => {
  const bridge = await startTestBridge(t);
  const attacker = await TestPeer.connect(bridge.url, 'server');
  t.after(() => attacker.close());
  attacker.ws.send(`{"id":"x","name":"identify","namespace":"rpc","args":${'['.repeat(3_000_000)}`);
  assert.equal((await attacker.closed).code, 1009);

  const good = await TestPeer.connect(bridge.url, 'client');
  t.after(() => good.close());
  const reply = await good.request('identify', {});
  assert.equal(reply.name, 'response');
  assert.equal((await bridge.metrics()).drops['too-large'], 1);
});

test('a small frame nested 1,000 deep is refused before JSON.parse with a 400 naming the limit, and a peer not signed in is closed', async (t) => {
  const bridge = await startTestBridge(t);
  const peer = await TestPeer.connect(bridge.url, 'server');
  t.after(() => peer.close());
  peer.ws.send(`{"id":"deep","name":"auth_ssl","namespace":"rpc","args":${'['.repeat(1000)}${']'.repeat(1000)}}`);
  const isError = (m: (typeof peer.received)[number]) => 'env' in m && m.env.name === 'error';
  await until(() => peer.received.some(isError), 'the 400 for the deep frame');
  const error = peer.received.find(isError)!;
  assert.ok('env' in error);
  assert.equal((error.env.args as { code: number }).code, 400);
  assert.match((error.env.args as { message: string }).message, /nested deeper than 16 levels/);
  assert.equal((await peer.closed).code, 1008);
});

test('one address may hold a bounded number of sockets; the next upgrade is refused with 429 and counted', async (t) => {
  const bridge = await startTestBridge(t, { config: { maxConnectionsPerAddress: 3 } });
  const held = await Promise.all([1, 2, 3].map(() => TestPeer.connect(bridge.url, 'client')));
  t.after(() => held.forEach((p) => p.close()));
  await assert.rejects(TestPeer.connect(bridge.url, 'client'), /upgrade refused: HTTP 429/);
  assert.equal((await bridge.metrics()).refused_too_many_connections, 1);
  held[0]!.close();
  await held[0]!.closed;
  let again: TestPeer | null = null;
  for (let i = 0; i < 100 && !again; i++) {
    again = await TestPeer.connect(bridge.url, 'client').catch(async () => {
      await new Promise((r) => setTimeout(r, 20));
      return null;
    });
  }
  assert.ok(again, 'a closed socket frees its slot');
  t.after(() => again?.close());
});

test('/metrics: loopback callers, or the admin secret; a remote caller without it gets 401', async (t) => {
  const bridge = await startTestBridge(t);
  assert.equal((await fetch(`${bridge.httpUrl}/metrics`)).status, 200, 'loopback');
  if (BRIDGE_RUNTIME === 'workers') {
    // The test hub takes the caller's address from this header (test hooks only); Node sees the socket.
    const remote = { 'x-hostadm-test-address': '203.0.113.9' };
    assert.equal((await fetch(`${bridge.httpUrl}/metrics`, { headers: remote })).status, 401);
    assert.equal((await fetch(`${bridge.httpUrl}/metrics`, { headers: { ...remote, authorization: 'Bearer wrong' } })).status, 401);
    assert.equal((await fetch(`${bridge.httpUrl}/metrics`, { headers: { ...remote, authorization: `Bearer ${bridge.adminSecret}` } })).status, 200);
  } else {
    assert.equal((await fetch(`${bridge.httpUrl}/metrics`, { headers: { authorization: `Bearer ${bridge.adminSecret}` } })).status, 200);
  }
});

test('/metrics in the shared app: a non-loopback caller needs the admin secret (in-process, any runtime)', async () => {
  const relay = { snapshot: () => ({ ok: 1 }), store: {} } as unknown as Relay;
  const appFor = (address: string) =>
    createBridgeApp<object>({
      relay,
      adminSecret: 'a'.repeat(40),
      runtime: { remoteAddress: () => address, upgrade: () => new Response(null, { status: 500 }) },
    });
  assert.equal((await appFor('203.0.113.9').request('/metrics')).status, 401);
  assert.equal((await appFor('203.0.113.9').request('/metrics', { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.equal((await appFor('203.0.113.9').request('/metrics', { headers: { authorization: `Bearer ${'a'.repeat(40)}` } })).status, 200);
  assert.equal((await appFor('127.0.0.1').request('/metrics')).status, 200);
  assert.equal((await appFor('::1').request('/metrics')).status, 200);
});
