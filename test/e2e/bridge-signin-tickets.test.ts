/**
 * The SDK's bridge sessions with sign-in tickets (docs/bridge-protocol.md §2.3), against a real bridge
 * on either runtime: the first session signs in with the key and keeps the ticket it is given, the
 * next ones sign in with the ticket (no RSA), and a ticket the bridge refuses is reported and replaced
 * by a key sign-in on the same connection, never failing the session by itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, type TestBridge } from '../bridge/helpers.ts';
import { BridgeSession, ConnectionError, memoryBridgeTicketStore, NodeWebSocket, type BridgeTicketStore } from '../../client/sdk/src/node.ts';

function keyPems(key: TestKey) {
  return {
    privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
  };
}

async function counts(bridge: TestBridge): Promise<{ byKey: number; byTicket: number; issued: number; failures: number }> {
  const m = await bridge.metrics();
  return { byKey: m.signins - m.signins_by_ticket, byTicket: m.signins_by_ticket, issued: m.signin_tickets_issued, failures: m.signin_failures };
}

test('SDK sessions sign in with the ticket the first key sign-in left, and fall back to the key when it is refused', async (t) => {
  const bridge = await startTestBridge(t);
  const key = keyPems(rsaKey());
  const tickets: BridgeTicketStore = memoryBridgeTicketStore();
  const refusals: string[] = [];
  const open = async (extra: { joinToken?: string } = {}) => {
    const session = await BridgeSession.open(
      { bridgeUrl: bridge.url, key, signInTickets: tickets, onSignInTicketRefused: (m) => refusals.push(m), webSocket: NodeWebSocket, ...extra },
      { timeoutMs: 10_000 },
    );
    assert.equal(session.state, 'ready');
    session.close({ code: 1000, reason: 'done' });
  };

  await open({ joinToken: await bridge.token('client') });
  assert.deepEqual(await counts(bridge), { byKey: 1, byTicket: 0, issued: 1, failures: 0 });
  const first = tickets.load();
  assert.ok(first, 'the key sign-in left a ticket');
  assert.equal(first.bridge, bridge.url, 'bound to this bridge');

  await open();
  await open();
  assert.deepEqual(await counts(bridge), { byKey: 1, byTicket: 2, issued: 1, failures: 0 }, 'no key proof while the ticket lasts');
  assert.equal(tickets.load(), first, 'a ticket serves many sign-ins');

  // The bridge's clock passes the ticket's 8 hours while the client's does not: refused, then the key.
  await bridge.clock.advance(8 * 3600 + 120);
  await open();
  assert.deepEqual(await counts(bridge), { byKey: 2, byTicket: 2, issued: 2, failures: 1 });
  assert.equal(refusals.length, 1);
  assert.match(refusals[0]!, /the bridge refused the sign-in ticket \(401 Unauthorized\); signing in with the key/);
  const second = tickets.load();
  assert.ok(second && second.ticket !== first.ticket, 'the key sign-in left a new ticket');

  // A ticket the client knows is expired is not presented at all (no failure counted).
  tickets.save({ ...second, expiresAt: Date.now() - 1 });
  await open();
  assert.deepEqual(await counts(bridge), { byKey: 3, byTicket: 2, issued: 3, failures: 1 });
  assert.equal(refusals.length, 1);

  // Kept for another bridge: not presented here (and kept for that one).
  const elsewhere = { ...tickets.load()!, bridge: 'ws://127.0.0.1:1/relay' };
  tickets.save(elsewhere);
  await open();
  assert.deepEqual(await counts(bridge), { byKey: 4, byTicket: 2, issued: 4, failures: 1 });
});

test('a revoked key: its ticket is refused, forgotten, and the key sign-in fails as it should', async (t) => {
  const bridge = await startTestBridge(t);
  const key = keyPems(rsaKey());
  const tickets = memoryBridgeTicketStore();
  const refusals: string[] = [];
  const options = { bridgeUrl: bridge.url, key, signInTickets: tickets, onSignInTicketRefused: (m: string) => refusals.push(m), webSocket: NodeWebSocket };
  const session = await BridgeSession.open({ ...options, joinToken: await bridge.token('client') }, { timeoutMs: 10_000 });
  session.close({ code: 1000, reason: 'done' });
  const md5 = tickets.load()!.md5Key;

  const res = await fetch(`${bridge.httpUrl}/admin/revoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bridge.adminSecret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: md5 }),
  });
  assert.equal(res.status, 200);
  await assert.rejects(BridgeSession.open(options, { timeoutMs: 10_000 }), (err: unknown) => {
    assert.ok(err instanceof ConnectionError);
    assert.match(err.message, /the bridge refused the key .*401/);
    return true;
  });
  assert.equal(refusals.length, 1, 'the refused ticket was reported');
  assert.equal(tickets.load(), undefined, 'and forgotten');
  assert.deepEqual(await counts(bridge), { byKey: 1, byTicket: 0, issued: 1, failures: 2 });
});
