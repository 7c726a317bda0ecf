/**
 * Parking on a real loopback `ws` pair, without the relay (a recording stand-in): what a parked socket
 * holds (no listener of `ws`, no WebSocket), what wakes it and what does not, and what is refused.
 * The relay's view (relayed frames, limits, heartbeats, closes) is test/bridge/parking.test.ts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { relayConfig } from '../../relay/config.ts';
import { RelayMetrics } from '../../relay/metrics.ts';
import type { Peer } from '../../relay/peer.ts';
import type { Relay } from '../../relay/relay.ts';
import { Parking, probeWs, type ParkingLink, type WsInternals } from './parking.ts';
import { loopbackCertificatePems } from '../../../../test/helpers/tls.ts';

const OPTIONS = { autoPong: false, maxPayload: 1024 };

/** A parked-to-be server socket (over TLS when `tls`), its client, and a relay stand-in recording what parking tells it. */
async function pair(t: TestContext, options: { shape?: string; tls?: boolean } = {}) {
  const tls = options.tls ? loopbackCertificatePems() : null;
  const https = tls ? createHttpsServer({ cert: tls.certPem, key: tls.keyPem }) : null;
  const common = { perMessageDeflate: false, clientTracking: false, ...OPTIONS };
  const wss = https ? new WebSocketServer({ server: https, ...common }) : new WebSocketServer({ host: '127.0.0.1', port: 0, ...common });
  const listening = https ? https.listen(0, '127.0.0.1') : wss;
  await new Promise((r) => listening.once('listening', r));
  const accepted = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const port = ((https ?? wss).address() as { port: number }).port;
  const client = new WebSocket(`${tls ? 'wss' : 'ws'}://127.0.0.1:${port}`, { perMessageDeflate: false, ...(tls ? { ca: tls.certPem } : {}) });
  await new Promise((r) => client.once('open', r));
  const server = await accepted;
  const socket = (server as unknown as { _socket: Socket })._socket;
  t.after(async () => {
    client.terminate();
    socket.destroy();
    await new Promise((r) => wss.close(r));
    if (https) await new Promise((r) => https.close(r));
  });
  const calls = { pong: 0, pinged: 0, closed: 0 };
  const received: string[] = [];
  const relay = {
    metrics: new RelayMetrics(0),
    config: relayConfig(),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    pong: () => void calls.pong++,
    pinged: () => ++calls.pinged > 0,
    closed: () => void calls.closed++,
  } as unknown as Relay;
  const peer = { state: 'signed-in', closed: false, pendingApi: 0, overSince: 0, lastSeen: 0 } as Peer;
  const listen = (ws: WebSocket) => ws.on('message', (data) => received.push(String(data)));
  listen(server);
  const adopt = (link: ParkingLink) => {
    const ws = new (WebSocket as unknown as new (a: null, p: undefined, o: object) => WebSocket)(null, undefined, OPTIONS);
    (ws as unknown as WsInternals).setSocket(link.socket, Buffer.alloc(0), { maxPayload: OPTIONS.maxPayload });
    listen(ws);
    link.ws = ws;
    return ws;
  };
  const parking = new Parking({ relay, adopt, now: 0 }, options.shape);
  const link: ParkingLink = { ws: server, socket, peer, sentAt: 0, transport: { relay, parking } };
  parking.track(link);
  return { client, server, socket, link, parking, relay, calls, received };
}

/** The socket's listeners that are `ws`'s, parking's, or net.Socket's own `end` one (TLS's stay throughout). */
const listenerNames = (socket: Socket) =>
  Object.fromEntries(
    (['close', 'data', 'end', 'error'] as const).map((e) => [
      e,
      socket
        .listeners(e)
        .map((f) => f.name)
        .filter((n) => /^(socketOn|parkedOn|onReadableStreamEnd$)/.test(n)),
    ]),
  );
const holds = (socket: Socket, value: unknown) => Object.getOwnPropertySymbols(socket).some((s) => (socket as unknown as Record<symbol, unknown>)[s] === value);
const settle = () => new Promise((r) => setTimeout(r, 30));

test('ws 8.23 has the internals parking needs (else the bridge would silently never park)', () => {
  const shape = probeWs();
  assert.notEqual(typeof shape, 'string', String(shape));
});

for (const tls of [false, true]) {
  test(`a parked socket holds none of ws: four shared listeners, no WebSocket; its first bytes wake a new one that parses a split frame${tls ? ' (TLS)' : ''}`, async (t) => {
    const { client, server, socket, link, parking, relay, received } = await pair(t, { tls });
    assert.equal(parking.pass(10_000), 1);
    assert.deepEqual(listenerNames(socket), {
      close: ['parkedOnClose'],
      data: ['parkedOnData'],
      // Node's own `end` listener is a no-op on a half-open socket (HTTP's are; TLS's here are not): off while parked.
      end: socket.allowHalfOpen ? ['parkedOnEnd'] : ['onReadableStreamEnd', 'parkedOnEnd'],
      error: ['parkedOnError'],
    });
    assert.equal(holds(socket, server), false, 'nothing on the socket leads to the old WebSocket');
    assert.equal(link.ws, null);
    assert.deepEqual(relay.metrics.parking, { parked: 1, parks: 1, wakes: 0 });

    // A masked text frame of 300 bytes, its first 3 bytes (part of the header) alone.
    const payload = Buffer.from('p'.repeat(300));
    const mask = randomBytes(4);
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
    const frame = Buffer.concat([Buffer.from([0x81, 0x80 | 126, 0x01, 0x2c]), mask, masked]);
    const raw = (client as unknown as { _socket: Socket })._socket;
    raw.write(frame.subarray(0, 3));
    await settle();
    assert.notEqual(link.ws, null, 'woken by its first bytes');
    raw.write(frame.subarray(3));
    await settle();
    assert.deepEqual(received, ['p'.repeat(300)]);
    assert.deepEqual(listenerNames(socket), {
      close: ['socketOnClose'],
      data: ['socketOnData'],
      end: ['onReadableStreamEnd', 'socketOnEnd'],
      error: ['socketOnError'],
    });
    assert.ok(holds(socket, link.ws));
    assert.deepEqual(relay.metrics.parking, { parked: 0, parks: 1, wakes: 1 });
  });
}

test("heartbeats pass a parked socket without waking it: the relay's ping written raw, the client's ping answered raw", async (t) => {
  const { client, socket, link, parking, relay, calls } = await pair(t);
  parking.pass(10_000);
  const pinged = new Promise((resolve) => client.once('ping', resolve));
  Parking.ping(socket);
  await pinged;
  const pong = new Promise<Buffer>((resolve) => client.once('pong', resolve));
  client.ping();
  assert.equal((await pong).length, 0);
  await settle();
  assert.deepEqual(calls, { pong: 1, pinged: 1, closed: 0 });
  assert.equal(link.ws, null, 'still parked');
  assert.equal(relay.metrics.parking.wakes, 0);
});

test('a socket is not parked mid-frame, nor a peer not signed in, nor before its quiet period; a parked one that closes is reported once', async (t) => {
  const { client, link, parking, relay, calls, received } = await pair(t);
  const raw = (client as unknown as { _socket: Socket })._socket;
  // Half a frame: the Receiver holds a header and waits for the rest.
  raw.write(Buffer.from([0x81, 0x82]));
  await settle();
  assert.equal(parking.pass(10_000), 0, 'the Receiver is inside a frame');
  const mask = randomBytes(4);
  raw.write(Buffer.concat([mask, Buffer.from([0x6f ^ mask[0]!, 0x6b ^ mask[1]!])]));
  await settle();
  assert.deepEqual(received, ['ok']);
  (link.peer as { state: string }).state = 'identified';
  assert.equal(parking.pass(10_000), 0, 'not signed in');
  (link.peer as { state: string }).state = 'signed-in';
  link.sentAt = 8_000;
  assert.equal(parking.pass(10_000), 0, 'sent to 2 s ago');
  assert.equal(parking.pass(13_000), 1);

  client.terminate();
  await settle();
  assert.equal(calls.closed, 1);
  assert.equal(relay.metrics.parking.parked, 0);
});

test('with ws internals not as expected, parking is off and says why', async (t) => {
  const { parking, link } = await pair(t, { shape: 'ws is not the expected version' });
  assert.equal(parking.off, 'ws is not the expected version');
  assert.equal(parking.pass(10_000), 0);
  assert.equal(parking.park(link), false);
  assert.notEqual(link.ws, null);
});
