/**
 * Requests in a transport's early flight (TransportHandlers.onEarlySend: a resumed bridge channel right
 * after its proof RC), with a scripted transport: what the caller queued is handed over in the very
 * call, in order, before `open` resolves; replies that come then settle them; an opening that fails
 * after that fails them with its own error instead of leaving them waiting (first opening and a
 * reconnect attempt alike), and the next connection serves later requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectionError } from './errors.ts';
import { HostadmClient } from './client/hostadm-client.ts';
import type { Transport, TransportFactory, TransportHandlers } from './transport.ts';

interface Opening {
  handlers: TransportHandlers;
  sent: string[];
  transport: Transport;
  succeed(): void;
  fail(message: string): void;
}

/** A factory whose every `open` the test drives by hand. */
function scripted(): { factory: TransportFactory; openings: Opening[]; next(): Promise<Opening> } {
  const openings: Opening[] = [];
  const waiters: Array<() => void> = [];
  const factory: TransportFactory = {
    description: 'scripted',
    open(handlers) {
      return new Promise<Transport>((resolve, reject) => {
        const sent: string[] = [];
        const transport: Transport = {
          send: (text) => void sent.push(text),
          close: () => handlers.onClose({ code: 1000, reason: 'closed' }),
        };
        Object.assign(transport, { session: { token: 't'.repeat(40), ttlSeconds: 300 } });
        openings.push({ handlers, sent, transport, succeed: () => resolve(transport), fail: (m) => reject(new ConnectionError(m)) });
        for (const wake of waiters.splice(0)) wake();
      });
    },
  };
  const next = async () => {
    const count = openings.length;
    while (openings.length === count) await new Promise<void>((resolve) => waiters.push(resolve));
    return openings.at(-1)!;
  };
  return { factory, openings, next };
}

const reply = (text: string, args: unknown) => JSON.stringify({ id: (JSON.parse(text) as { id: string }).id, name: 'response', namespace: 'rpc', args });

test('requests queued while opening leave in the early flight, in order, and their replies settle them before the opening ends', async () => {
  const { factory, next } = scripted();
  const client = new HostadmClient({ transport: factory, reconnect: false, keepAlive: false });
  const opened = next();
  const opening = client.open();
  const first = client.request('rpc', 'query', {});
  const second = client.request('rpc', 'identify', {});
  const o = await opened;
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(o.sent, [], 'nothing is sent before the transport says it can carry it');
  o.handlers.onEarlySend?.(o.transport);
  assert.deepEqual(
    o.sent.map((s) => (JSON.parse(s) as { name: string }).name),
    ['query', 'identify'],
    'handed over in that very call, in order',
  );
  o.handlers.onMessage(reply(o.sent[0]!, { 'admin/users': 'read' }));
  o.handlers.onMessage(reply(o.sent[1]!, { type: 'server' }));
  assert.deepEqual(await first, { 'admin/users': 'read' });
  assert.deepEqual(await second, { type: 'server' });
  o.succeed();
  await opening;
  assert.equal(client.session?.method, 'key', 'the session the transport brought');
  await client.close();
});

test('an opening that fails after the early flight fails its requests with its error (first opening)', async () => {
  const { factory, next } = scripted();
  const client = new HostadmClient({ transport: factory, reconnect: false, keepAlive: false });
  const opened = next();
  const opening = client.open();
  const call = client.request('rpc', 'query', {});
  const o = await opened;
  o.handlers.onEarlySend?.(o.transport);
  assert.equal(o.sent.length, 1);
  o.fail('host refused the key proof: 401 Unauthorized');
  await assert.rejects(opening, /refused the key proof/);
  await assert.rejects(call, /refused the key proof/);
});

test('a reconnect attempt that fails after its early flight fails those requests; the next attempt serves later ones', async () => {
  const { factory, next } = scripted();
  const client = new HostadmClient({ transport: factory, reconnect: { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 3 }, keepAlive: false });
  let opened = next();
  const opening = client.open();
  (await opened).succeed();
  await opening;
  const first = await opened;
  opened = next();
  first.handlers.onClose({ code: 1006, reason: 'dropped' });
  const during = client.request('rpc', 'query', {}, { timeoutMs: 5000 });
  const attempt = await opened;
  attempt.handlers.onEarlySend?.(attempt.transport);
  assert.equal(attempt.sent.length, 1, 'sent in the attempt’s early flight');
  opened = next();
  attempt.fail('the channel to the host failed');
  await assert.rejects(during, /the channel to the host failed/);
  const again = await opened;
  const later = client.request('rpc', 'query', {}, { timeoutMs: 5000 });
  again.succeed();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(again.sent.length, 1, 'a later request goes on the next connection');
  again.handlers.onMessage(reply(again.sent[0]!, { ok: true }));
  assert.deepEqual(await later, { ok: true });
  await client.close();
});
