/**
 * The agent's bridge link as a state machine, seen from a bridge of the test's own: a reply is taken
 * only in the state that sent its request, and the key list goes only to the bridge's own
 * `bridge_request_list_keys`, never to another `rpc/settings` request (one from anything that can
 * reach the link would otherwise learn which client keys the host accepts).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer, type WebSocket } from 'ws';
import { BridgeLink } from '@hostadm/agent/bridge-link/link.ts';
import { startTestAgent } from '../helpers/agent.ts';
import { until } from '../bridge/helpers.ts';

interface Sent {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

/** A bridge that signs the agent in and records every envelope it sends; `socket` is the agent's connection. */
function fakeBridge(_t: TestContext) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 }); // the agent dials its host room, /relay/host/<fingerprint>
  const close = () =>
    new Promise<void>((resolve) => {
      for (const client of server.clients) client.terminate();
      server.close(() => resolve());
    });
  const received: Sent[] = [];
  let socket: WebSocket | null = null;
  const url = new Promise<string>((resolve) => server.once('listening', () => resolve(`ws://127.0.0.1:${(server.address() as { port: number }).port}`)));
  server.on('connection', (ws: WebSocket) => {
    socket = ws;
    ws.on('message', (data) => received.push(JSON.parse(data.toString()) as Sent));
    ws.send(JSON.stringify({ id: 'bridge_request_ident', name: 'identify', namespace: 'rpc', args: '' }));
  });
  const send = (env: Sent) => socket!.send(JSON.stringify(env));
  return { url, received, send, close };
}

test('the bridge link takes a reply only in the state that asked, and sends its key list only to the bridge_request_list_keys request', async (t) => {
  const agent = await startTestAgent();
  const bridge = fakeBridge(t);
  const link = new BridgeLink({ url: await bridge.url, pipeline: agent.pipeline, dataDir: agent.dataDir, minDelayMs: 10, maxDelayMs: 50 });
  link.start();
  // The link first: it watches the agent's key store, which closes with the agent.
  t.after(async () => {
    await link.stop();
    await agent.dispose();
    await bridge.close();
  });

  await until(() => bridge.received.some((e) => e.id === 'agent-auth-1'), 'the agent asks for a test string');
  assert.equal(link.status, 'signing-in');
  assert.equal((bridge.received[0]!.args as { type?: string }).type, 'server', 'identify answered as a server');

  // A sign-in "accepted" before the key was even proven: not the reply this state waits for.
  bridge.send({ id: 'agent-auth-2', name: 'response', namespace: 'rpc', args: ['A'.repeat(40), 600] });
  // The key list asked under another id, before sign-in: nothing.
  bridge.send({ id: 'probe-1', name: 'settings', namespace: 'rpc', args: { action: 'list_ssl_checksums' } });
  bridge.send({ id: 'agent-auth-1', name: 'response', namespace: 'rpc', args: { test_string: 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6' } });
  await until(() => bridge.received.some((e) => e.id === 'agent-auth-2'), 'the agent proves its key');
  assert.equal(link.status, 'proving', 'the early "signed in" reply was ignored');

  bridge.send({ id: 'agent-auth-2', name: 'response', namespace: 'rpc', args: ['A'.repeat(40), 600] });
  await until(() => link.status === 'ready', 'signed in');
  // Signed in: a settings request under any id but the bridge's own still gets nothing.
  bridge.send({ id: 'probe-2', name: 'settings', namespace: 'rpc', args: { action: 'list_ssl_checksums' } });
  bridge.send({ id: 'bridge_request_list_keys', name: 'settings', namespace: 'rpc', args: { action: 'list_ssl_checksums' } });
  await until(() => bridge.received.some((e) => e.id === 'bridge_request_list_keys'), 'the key list');

  const answered = bridge.received.filter((e) => e.name === 'response').map((e) => e.id);
  assert.deepEqual(answered, ['bridge_request_ident', 'bridge_request_list_keys'], "only the bridge's own two requests were answered");
  const list = bridge.received.find((e) => e.id === 'bridge_request_list_keys')!;
  assert.deepEqual(Object.keys(list.args as object).sort(), ['md5_keys', 'password_signin']);
});
