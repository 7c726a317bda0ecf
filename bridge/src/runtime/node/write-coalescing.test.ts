/**
 * Write coalescing on a real loopback `ws` pair: what one tick sends to a peer leaves in one write,
 * in order; a socket closed or destroyed while held is released without error and nothing stays held.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { writeCoalescer } from './write-coalescing.ts';
import { WsPeerSocket } from './websocket.ts';

/** A server-side socket wrapped as the relay sees it, its client end, and a count of the writes it makes. */
async function pair(t: TestContext) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  const accepted = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`, { perMessageDeflate: false });
  // The server's close waits for its connections: they end first.
  t.after(async () => {
    client.terminate();
    for (const ws of wss.clients) ws.terminate();
    await new Promise((r) => wss.close(r));
  });
  const received: string[] = [];
  client.on('message', (data) => received.push(String(data)));
  const closed = new Promise<number>((resolve) => client.once('close', resolve));
  await new Promise((r) => client.once('open', r));
  const server = await accepted;
  const raw = (server as unknown as { _socket: Socket & { _write: Function; _writev: Function } })._socket;
  const writes = { count: 0 };
  for (const method of ['_write', '_writev'] as const) {
    const original = raw[method].bind(raw);
    raw[method] = (...args: unknown[]) => {
      writes.count++;
      return original(...args);
    };
  }
  // A socket of a plain server, outside any transport: only the clock parking stamps sends with is read.
  const transport = { parking: { now: 0 } } as unknown as ConstructorParameters<typeof WsPeerSocket>[2];
  return { peer: new WsPeerSocket(server as never, raw, transport), server, coalescer: writeCoalescer, received, closed, writes };
}

const tick = () => new Promise((r) => setImmediate(r));

test('the frames sent to a peer in one tick leave in one write, in order, by both paths', async (t) => {
  const { peer, coalescer, received, writes } = await pair(t);
  const head = Buffer.from('client-1');
  const expected: string[] = [];
  for (let i = 0; i < 50; i++) {
    const body = i % 10 === 9 ? `\n${i}:${'z'.repeat(10_000)}` : `\n${i}`;
    if (i % 2) peer.send(`client-1${body}`);
    else assert.equal(peer.sendParts(head, Buffer.from(`dest${body}`), 4), true);
    expected.push(`client-1${body}`);
  }
  assert.equal(coalescer.holding, 1, 'held until the end of the tick');
  assert.equal(writes.count, 0, 'nothing written yet');
  await tick();
  assert.equal(coalescer.holding, 0);
  assert.equal(writes.count, 1, 'one write for the whole tick');
  while (received.length < expected.length) await tick();
  assert.deepEqual(received, expected);
});

test('a peer closed while held gets the frames, then the close frame; one destroyed while held is released without error', async (t) => {
  const closing = await pair(t);
  closing.peer.send('client-1\none');
  closing.peer.send('client-1\ntwo');
  closing.peer.close(4009, 'replaced');
  assert.equal(await closing.closed, 4009);
  assert.deepEqual(closing.received, ['client-1\none', 'client-1\ntwo']);
  assert.equal(closing.coalescer.holding, 0);

  const destroyed = await pair(t);
  destroyed.peer.send('client-1\nlost');
  destroyed.server.terminate();
  destroyed.peer.send('client-1\nafter'); // ws drops it: the socket is closing
  await tick();
  assert.equal(destroyed.coalescer.holding, 0);
  assert.equal(await destroyed.closed, 1006);
  assert.equal(destroyed.server.readyState, WebSocket.CLOSED);
});
