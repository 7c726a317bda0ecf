/**
 * The agent's bridge link and the bridge's greeting (docs/bridge-protocol.md §2.3), on either runtime:
 * the agent signs in with one `auth_ssl` (its host key's proof over the greeting's test string, naming
 * its md5_key), at the first connection and at each reconnection; against a bridge that sends no
 * greeting it asks for a test string first, as before. What the agent sends is read on a relaying
 * WebSocket proxy between it and the bridge.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { agentFor } from '../helpers/agent.ts';
import { startTestBridge, until, type TestBridge } from '../bridge/helpers.ts';

interface RecordingProxy {
  /** The bridge's relay URL through the proxy. */
  url: string;
  /** The args of each `auth_ssl` the agent sent, by connection (in order). */
  authSsl: unknown[][];
  /** Drops every connection, as a network outage would. */
  cut(): void;
}

/**
 * A WebSocket proxy on loopback that relays every frame both ways and records the agent's `auth_ssl`
 * calls; `withoutGreeting` drops the bridge's greeting, so the agent sees a bridge from before it.
 */
async function recordingProxy(t: TestContext, bridge: TestBridge, withoutGreeting = false): Promise<RecordingProxy> {
  const target = new URL(bridge.url);
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const authSsl: unknown[][] = [];
  const open = new Set<WebSocket>();
  server.on('connection', (downstream, req) => {
    const calls: unknown[] = [];
    authSsl.push(calls);
    const upstream = new WebSocket(`ws://${target.host}${req.url ?? '/'}`);
    const waiting: Array<[WebSocket.RawData, boolean]> = [];
    open.add(downstream).add(upstream);
    upstream.on('open', () => {
      for (const [data, binary] of waiting.splice(0)) upstream.send(data, { binary });
    });
    downstream.on('message', (data, binary) => {
      if (!binary && data.toString().startsWith('{')) {
        const env = JSON.parse(data.toString()) as { name?: string; args?: unknown };
        if (env.name === 'auth_ssl') calls.push(env.args);
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
      else waiting.push([data, binary]);
    });
    upstream.on('message', (data, binary) => {
      if (withoutGreeting && !binary && data.toString().includes('"bridge_greeting"')) return;
      if (downstream.readyState === WebSocket.OPEN) downstream.send(data, { binary });
    });
    const end = () => {
      downstream.terminate();
      upstream.terminate();
    };
    downstream.on('close', end);
    upstream.on('close', end);
    upstream.on('error', end);
  });
  t.after(async () => {
    for (const ws of open) ws.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}${target.pathname}`,
    authSsl,
    cut: () => {
      for (const ws of open) ws.terminate();
      open.clear();
    },
  };
}

const isStage1 = (args: unknown) => typeof args === 'string' || (typeof args === 'object' && args !== null && 'action' in args);

test('the agent signs in with one auth_ssl over the greeting, at its first connection and when it reconnects', async (t) => {
  const bridge = await startTestBridge(t);
  const proxy = await recordingProxy(t, bridge);
  const agent = await agentFor(t, { bridge: { url: proxy.url, joinToken: await bridge.token('agent', { nickname: 'greeted' }), nickname: 'greeted' } });
  await agent.bridgeLink!.ready();
  assert.equal(proxy.authSsl.length, 1);
  const [first] = proxy.authSsl[0]!;
  assert.equal(proxy.authSsl[0]!.length, 1, JSON.stringify(proxy.authSsl[0]));
  assert.ok(!isStage1(first));
  assert.match((first as { md5_key: string }).md5_key, /^[A-Za-z0-9+/]{22}==$/, 'naming its host key');
  assert.equal((await bridge.keys())[0]?.md5Key, (first as { md5_key: string }).md5_key, 'the md5_key the bridge registered');

  proxy.cut();
  await until(async () => (await bridge.metrics()).signins === 2, 'the agent signed in again');
  assert.equal(proxy.authSsl.length, 2);
  assert.equal(proxy.authSsl.at(-1)!.length, 1, JSON.stringify(proxy.authSsl.at(-1)));
  const m = await bridge.metrics();
  assert.equal(m.signins, 2);
  assert.equal(m.signin_failures, 0);
});

test('against a bridge that sends no greeting the agent asks for a test string first, as before', async (t) => {
  const bridge = await startTestBridge(t);
  const proxy = await recordingProxy(t, bridge, true);
  const agent = await agentFor(t, { bridge: { url: proxy.url, joinToken: await bridge.token('agent', { nickname: 'older' }), nickname: 'older' } });
  await agent.bridgeLink!.ready();
  assert.deepEqual(
    proxy.authSsl[0]!.map((args) => (isStage1(args) ? 'stage 1' : Object.keys(args as object).join(','))),
    ['stage 1', 'signature'],
  );
  // On Workers another object's counters reach /metrics a little later.
  await until(async () => (await bridge.metrics()).signins === 1, 'the sign-in counted');
  assert.equal((await bridge.metrics()).signin_failures, 0);
});
