/**
 * The SDK and the bridge's greeting (docs/bridge-protocol.md §2.3), on either runtime: a session that
 * holds a sign-in ticket signs in with one `auth_ssl` (stage 2 over the greeting's test string), a key
 * sign-in too (naming its md5_key); against a bridge that sends no greeting (an older one, posed by
 * `signinGreeting: false`) the SDK signs in through stage 1 as before, nothing waited for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, type TestBridge } from '../bridge/helpers.ts';
import { BridgeSession, memoryBridgeTicketStore, NodeWebSocket, type BridgeTicketStore } from '../../client/sdk/src/node.ts';
import type { WebSocketConstructor, WebSocketLike } from '../../client/sdk/src/websocket.ts';

function keyPems(key: TestKey) {
  return {
    privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
  };
}

/** Node's WebSocket, keeping the args of every `auth_ssl` call the session sends. */
function recordingAuthSsl(calls: unknown[]): WebSocketConstructor {
  return class {
    constructor(url: string) {
      const ws: WebSocketLike = new NodeWebSocket(url);
      const send = ws.send.bind(ws);
      ws.send = (data) => {
        if (typeof data === 'string' && data.startsWith('{')) {
          const env = JSON.parse(data) as { name?: string; args?: unknown };
          if (env.name === 'auth_ssl') calls.push(env.args);
        }
        send(data);
      };
      // A constructor may return another object: the session gets the recording socket.
      // biome-ignore lint/correctness/noConstructorReturn: the point of this wrapper
      return ws;
    }
  } as unknown as WebSocketConstructor;
}

/** Opens a session (enrolling when given a token), returns the `auth_ssl` calls it made, and closes it. */
async function signIn(bridge: TestBridge, key: ReturnType<typeof keyPems>, tickets: BridgeTicketStore, joinToken?: string): Promise<unknown[]> {
  const calls: unknown[] = [];
  const session = await BridgeSession.open(
    { bridgeUrl: bridge.url, key, signInTickets: tickets, webSocket: recordingAuthSsl(calls), ...(joinToken ? { joinToken } : {}) },
    { timeoutMs: 10_000 },
  );
  assert.equal(session.state, 'ready');
  session.close({ code: 1000, reason: 'done' });
  return calls;
}

const isStage1 = (args: unknown) => typeof args === 'string' || (typeof args === 'object' && args !== null && 'action' in args);

test('with the greeting: a key sign-in and then a ticket sign-in each take one auth_ssl, no stage 1', async (t) => {
  const bridge = await startTestBridge(t);
  const key = keyPems(rsaKey());
  const tickets = memoryBridgeTicketStore();

  const byKey = await signIn(bridge, key, tickets, await bridge.token('client'));
  assert.equal(byKey.length, 1, JSON.stringify(byKey));
  const proof = byKey[0] as { signature?: string; md5_key?: string; want_ticket?: boolean };
  assert.ok(proof.signature && proof.want_ticket, 'a key proof asking for a ticket');
  assert.equal(proof.md5_key, tickets.load()?.md5Key, 'naming the key, so the bridge checks that key alone');

  const byTicket = await signIn(bridge, key, tickets);
  assert.equal(byTicket.length, 1, JSON.stringify(byTicket));
  assert.ok('ticket' in (byTicket[0] as object), 'the ticket');
  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signins_by_ticket, m.signin_failures], [2, 1, 0]);
});

test('a refused ticket over the greeting: the key sign-in follows on the same connection through stage 1', async (t) => {
  const bridge = await startTestBridge(t);
  const key = keyPems(rsaKey());
  const tickets = memoryBridgeTicketStore();
  await signIn(bridge, key, tickets, await bridge.token('client'));
  await bridge.clock.advance(8 * 3600 + 120);
  const calls = await signIn(bridge, key, tickets);
  assert.deepEqual(
    calls.map((args) => (isStage1(args) ? 'stage 1' : 'ticket' in (args as object) ? 'ticket' : 'key')),
    ['ticket', 'stage 1', 'key'],
    'the greeting is spent by the ticket: the key asks for a fresh test string',
  );
  assert.equal((calls[2] as { md5_key?: string }).md5_key, undefined, 'after a pinned stage 1 the proof needs no md5_key');
  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signins_by_ticket, m.signin_failures], [2, 0, 1]);
});

test('a bridge that sends no greeting: the SDK signs in through stage 1, with the key and then with the ticket', async (t) => {
  const bridge = await startTestBridge(t, { config: { signinGreeting: false } });
  const key = keyPems(rsaKey());
  const tickets = memoryBridgeTicketStore();
  const byKey = await signIn(bridge, key, tickets, await bridge.token('client'));
  assert.deepEqual(
    byKey.map((args) => isStage1(args)),
    [true, false],
  );
  assert.equal((byKey[1] as { md5_key?: string }).md5_key, undefined, 'stage 2 as before the greeting');
  const byTicket = await signIn(bridge, key, tickets);
  assert.deepEqual(
    byTicket.map((args) => isStage1(args)),
    [true, false],
  );
  const m = await bridge.metrics();
  assert.deepEqual([m.signins, m.signins_by_ticket, m.signin_failures], [2, 1, 0]);
});
