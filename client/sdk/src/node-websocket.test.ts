/**
 * The Node WebSocket's own opening handshake (node-websocket.ts), through the SDK's transport as the
 * CLI uses it: against ws's server it behaves as ws's client (masked frames, ping, close, the same
 * limits); against hostile servers played over loopback with plain `net.createServer` each refusal
 * says what was wrong, as clearly as ws's client did, and leaves no socket open; wss:// checks the
 * certificate and names the host as ws's client does.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import tls from 'node:tls';
import WebSocket, { WebSocketServer } from 'ws';
import { loopbackCertificatePems } from '../../../test/helpers/tls.ts';
import { readSweep } from '@hostadm/shared/node/read-sweep.ts';
import { MAX_RESPONSE_HEAD, NodeWebSocket, rawHandshakeOff } from './node-websocket.ts';
import type { CloseInfo, Transport } from './transport.ts';
import { webSocketTransport } from './websocket.ts';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const acceptFor = (key: string) =>
  createHash('sha1')
    .update(key + GUID)
    .digest('base64');

async function listening(t: TestContext, server: Server, host = '127.0.0.1'): Promise<number> {
  server.listen(0, host);
  await once(server, 'listening');
  t.after(() => server.close());
  return (server.address() as AddressInfo).port;
}

/** ws's own server on loopback (or on `server`), its clients cut off when the test ends, passed or not. */
async function wsServer(t: TestContext, options: { server?: HttpsServer } = {}): Promise<WebSocketServer> {
  const wss = options.server ? new WebSocketServer({ server: options.server }) : new WebSocketServer({ host: '127.0.0.1', port: 0 });
  t.after(() => {
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
  if (!options.server) await once(wss, 'listening');
  return wss;
}

/** A loopback server that reads each request head and answers it with `answer`; what it saw. */
async function rawServer(t: TestContext, answer: (socket: Socket, request: string, key: string) => void) {
  const seen = { requests: [] as string[], closed: 0, sockets: [] as Socket[] };
  const server = createServer((socket) => {
    seen.sockets.push(socket);
    socket.on('close', () => seen.closed++).on('error', () => {});
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      const request = head.slice(0, end);
      seen.requests.push(request);
      answer(socket, request, /^sec-websocket-key: (.*)$/im.exec(request)?.[1] ?? '');
    };
    socket.on('data', onData);
  });
  t.after(() => {
    for (const socket of seen.sockets) socket.destroy();
  });
  const port = await listening(t, server);
  return { url: `ws://127.0.0.1:${port}/relay?room=r`, seen };
}

/** The head of a correct answer to `key`, with `extra` header lines. */
const switching = (key: string, ...extra: string[]) =>
  ['HTTP/1.1 101 Switching Protocols', 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Accept: ${acceptFor(key)}`, ...extra, '', ''].join('\r\n');

/** Opens `url` through the SDK's direct transport; what it received, and how it closed. */
function open(url: string, limits: { timeoutMs?: number; signal?: AbortSignal } = {}) {
  const messages: string[] = [];
  const closes: CloseInfo[] = [];
  const opened: Promise<Transport> = webSocketTransport({ url, webSocket: NodeWebSocket }).open(
    { onMessage: (text) => messages.push(text), onClose: (info) => closes.push(info) },
    { timeoutMs: limits.timeoutMs ?? 5000, ...(limits.signal ? { signal: limits.signal } : {}) },
  );
  return { opened, messages, closes };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 250 && !condition(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(condition(), what);
}

test("ws's internals have the shape this module relies on (a ws upgrade that changes them fails here, not silently at run time)", () => {
  assert.equal(rawHandshakeOff(), '');
});

test("against ws's server: one request as ws's client sends it, frames both ways, a ping answered, the close handshake", async (t) => {
  const wss = await wsServer(t);
  const headers: Record<string, string | string[] | undefined>[] = [];
  const pongs: string[] = [];
  const serverCloses: Array<[number, string]> = [];
  wss.on('connection', (socket, request) => {
    headers.push(request.headers);
    socket.on('message', (data) => socket.send(`echo ${String(data)}`));
    socket.on('pong', (data) => pongs.push(String(data)));
    socket.on('close', (code, reason) => serverCloses.push([code, String(reason)]));
    socket.ping('are you there');
  });
  const port = (wss.address() as AddressInfo).port;
  const { opened, messages, closes } = open(`ws://127.0.0.1:${port}/relay?room=r`);
  const transport = await opened;
  transport.send('hello'); // ws's server closes with 1002 on an unmasked frame: the echo says it was masked
  await until(() => messages.length === 1 && pongs.length === 1, 'the echo and the pong');
  assert.deepEqual(messages, ['echo hello']);
  assert.deepEqual(pongs, ['are you there']);
  const [request] = headers;
  assert.equal(request?.host, `127.0.0.1:${port}`);
  assert.equal(request?.['sec-websocket-version'], '13');
  assert.equal(Buffer.from(String(request?.['sec-websocket-key']), 'base64').length, 16);
  assert.equal(request?.['sec-websocket-extensions'], undefined, 'no permessage-deflate offered');
  assert.equal(request?.['sec-websocket-protocol'], undefined);
  transport.close(1000, 'done');
  await until(() => closes.length === 1, 'the close');
  assert.deepEqual(closes, [{ code: 1000, reason: 'done' }]);
  assert.deepEqual(serverCloses, [[1000, 'done']]);
});

test('each message received is told to the read sweep (the scavenges a bulk transfer needs: shared/src/node/read-sweep.ts)', async (t) => {
  const wss = await wsServer(t);
  const text = 'a'.repeat(100_000);
  wss.on('connection', (socket) => {
    for (let i = 0; i < 3; i++) socket.send(text);
  });
  const before = readSweep.bytes;
  const { opened, messages } = open(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/relay`);
  const transport = await opened;
  await until(() => messages.length === 3, 'three messages');
  assert.equal(readSweep.bytes - before, 300_000);
  transport.close(1000, 'done');
});

test("the same WebSocket options and receiver limits as ws's own client", async (t) => {
  const wss = await wsServer(t);
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`;
  const settings = async (socket: WebSocket) => {
    await once(socket, 'open');
    const ws = socket as unknown as Record<string, unknown> & { _receiver: Record<string, unknown> };
    const picked = (from: Record<string, unknown>, names: string[]) => Object.fromEntries(names.map((n) => [n, from[n]]));
    const result = {
      ws: picked(ws, ['_isServer', '_autoPong', '_maxPendingAutoPongs', '_closeTimeout', 'extensions', 'protocol', 'url']),
      receiver: picked(ws._receiver, ['_isServer', '_maxPayload', '_maxBufferedChunks', '_maxFragments', '_allowSynchronousEvents', '_skipUTF8Validation']),
    };
    socket.terminate();
    return result;
  };
  assert.deepEqual(await settings(new NodeWebSocket(url) as unknown as WebSocket), await settings(new WebSocket(url)));
});

test('bytes that come behind the 101 are the first message, however the response is cut into reads', async (t) => {
  const { url } = await rawServer(t, (socket, _request, key) => {
    socket.setNoDelay(true);
    const bytes = Buffer.concat([Buffer.from(switching(key), 'latin1'), Buffer.from([0x81, 0x05]), Buffer.from('early')]);
    const cuts = [12, bytes.length - 9, bytes.length - 4]; // inside the status line, inside "\r\n\r\n", inside the frame
    let from = 0;
    const next = () => {
      const to = cuts.shift() ?? bytes.length;
      socket.write(bytes.subarray(from, to));
      from = to;
      if (from < bytes.length) setTimeout(next, 10);
      else socket.write(Buffer.concat([Buffer.from([0x81, 0x05]), Buffer.from('later')]));
    };
    next();
  });
  const { opened, messages } = open(url);
  await opened;
  await until(() => messages.length === 2, 'both messages');
  assert.deepEqual(messages, ['early', 'later']);
});

test("another 'data' listener on the socket (an observer such as an APM agent's) takes no bytes from behind the 101", async (t) => {
  // diagnostics_channel hands every new client socket to its subscribers, who may listen to 'data';
  // the bytes behind the 101 must still reach the WebSocket, and the observer sees them too.
  const observed: Buffer[] = [];
  const observe = ({ socket }: { socket: Socket }) => socket.on('data', (chunk: Buffer) => observed.push(chunk));
  diagnostics.subscribe('net.client.socket', observe as (message: unknown) => void);
  t.after(() => diagnostics.unsubscribe('net.client.socket', observe as (message: unknown) => void));
  const { url } = await rawServer(t, (socket, _request, key) => {
    socket.write(Buffer.concat([Buffer.from(switching(key), 'latin1'), Buffer.from([0x81, 0x05]), Buffer.from('early')]));
    setTimeout(() => socket.write(Buffer.concat([Buffer.from([0x81, 0x05]), Buffer.from('later')])), 10);
  });
  const { opened, messages } = open(url);
  await opened;
  await until(() => messages.length === 2, 'both messages');
  assert.deepEqual(messages, ['early', 'later']);
  assert.ok(Buffer.concat(observed).includes('early'), 'the observer saw the first frame too');
});

test('refusals say what was wrong, and the client closes its socket each time', async (t) => {
  const cases: Array<[string, (socket: Socket, key: string) => void, RegExp]> = [
    ['401', (s) => s.write('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n'), /: Unexpected server response: 401$/],
    ['404', (s) => s.write('HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found'), /: Unexpected server response: 404$/],
    ['a wrong accept key', (s) => s.write(switching('not the key')), /: Invalid Sec-WebSocket-Accept header$/],
    ['no Connection: upgrade', (s, key) => s.write(switching(key).replace('Connection: Upgrade', 'Connection: keep-alive')), /: Invalid Connection header$/],
    ['another Upgrade', (s, key) => s.write(switching(key).replace('Upgrade: websocket', 'Upgrade: h2c')), /: Invalid Upgrade header$/],
    ['an extension not offered', (s, key) => s.write(switching(key, 'Sec-WebSocket-Extensions: permessage-deflate')), /but no extension was requested$/],
    ['a subprotocol not offered', (s, key) => s.write(switching(key, 'Sec-WebSocket-Protocol: chat')), /: Server sent a subprotocol but none was requested$/],
    ['not HTTP', (s) => s.write('SSH-2.0-OpenSSH_9.6\r\n\r\n'), /: Invalid HTTP status line: "SSH-2\.0-OpenSSH_9\.6"$/],
    ['a header line without a colon', (s, key) => s.write(switching(key, 'garbage')), /: Invalid HTTP header line: "garbage"$/],
    [
      'a close in the middle of the head',
      (s) => s.end('HTTP/1.1 101 Switching Protocols\r\nUpgr'),
      /: Server closed the connection during the opening handshake$/,
    ],
    [
      'an endless head',
      (s) => s.write(`HTTP/1.1 101 Switching Protocols\r\nX-Pad: ${'a'.repeat(MAX_RESPONSE_HEAD)}`),
      /: Server response head is longer than 16384 bytes$/,
    ],
  ];
  for (const [what, answer, expected] of cases) {
    const { url, seen } = await rawServer(t, (socket, _request, key) => answer(socket, key));
    const { opened } = open(url);
    const err = await opened.then(
      () => assert.fail(`${what}: opened`),
      (e: unknown) => e as Error & { closeCode?: number },
    );
    assert.match(err.message, expected, what);
    assert.ok(err.message.startsWith(`cannot connect to ${url}: `), err.message);
    assert.equal(err.closeCode, 1006, what);
    await until(() => seen.closed === 1, `${what}: the client closed its socket`);
  }
});

test('nothing listening: the error of the connect, as before', async (t) => {
  const server = createServer();
  const port = await listening(t, server);
  server.close();
  await once(server, 'close');
  const { opened } = open(`ws://127.0.0.1:${port}/`);
  await assert.rejects(opened, new RegExp(`: cannot connect to ws://127\\.0\\.0\\.1:${port}/: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
});

test('a server that never answers: the timeout and the abort end the handshake and close the socket', async (t) => {
  const { url, seen } = await rawServer(t, () => {});
  await assert.rejects(open(url, { timeoutMs: 100 }).opened, /no answer within 100 ms$/);
  await until(() => seen.closed === 1, 'the socket closed after the timeout');
  const abort = new AbortController();
  const aborted = open(url, { signal: abort.signal }).opened;
  await until(() => seen.requests.length === 2, 'the second request');
  abort.abort();
  await assert.rejects(aborted, /was cancelled$/);
  await until(() => seen.closed === 2, 'the socket closed after the abort');
});

test("ws's limits hold after the handshake: a frame over maxPayload ends the connection with a masked 1009", async (t) => {
  const closeFrames: Buffer[] = [];
  const { url } = await rawServer(t, (socket, _request, key) => {
    socket.on('data', (chunk: Buffer) => closeFrames.push(chunk));
    // A text frame announcing 2^27 bytes (ws's client default maxPayload is 100 MiB); none follow.
    socket.write(Buffer.concat([Buffer.from(switching(key), 'latin1'), Buffer.from([0x81, 127, 0, 0, 0, 0, 0x08, 0, 0, 0])]));
  });
  const { opened, closes } = open(url);
  await opened;
  await until(() => closes.length === 1, 'the close');
  assert.match(closes[0]?.error ?? '', /Max payload size exceeded/);
  await until(() => closeFrames.length > 0, 'the close frame');
  const frame = Buffer.concat(closeFrames);
  assert.equal(frame[0], 0x88, 'a close frame');
  assert.equal((frame[1] ?? 0) & 0x80, 0x80, 'masked');
  const mask = frame.subarray(2, 6);
  const code = ((frame[6] ?? 0) ^ (mask[0] ?? 0)) * 256 + ((frame[7] ?? 0) ^ (mask[1] ?? 0));
  assert.equal(code, 1009);
});

test('wss://: the certificate is checked (untrusted refused, trusted accepted) and SNI names a host, never an IP address', async (t) => {
  if (typeof tls.setDefaultCACertificates !== 'function') return t.skip('needs tls.setDefaultCACertificates (Node 22.19, 24.5)');
  const { certPem, keyPem } = loopbackCertificatePems();
  const serverNames: string[] = [];
  let handshakes = 0;
  const https = createHttpsServer({
    cert: certPem,
    key: keyPem,
    // Called only when the client sends SNI; the default context answers.
    SNICallback: (name, done) => {
      serverNames.push(name);
      done(null);
    },
  });
  https.on('connection', () => handshakes++);
  const wss = await wsServer(t, { server: https });
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo ${String(data)}`)));
  // On 127.0.0.1, which the certificate names; localhost reaches it too (as it resolves here, or the
  // connect tries 127.0.0.1 after ::1).
  const port = await listening(t, https);

  await assert.rejects(open(`wss://127.0.0.1:${port}/`).opened, /: self-signed certificate/);
  const defaults = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...defaults, certPem]);
  t.after(() => tls.setDefaultCACertificates(defaults));
  const { opened, messages } = open(`wss://127.0.0.1:${port}/`);
  const transport = await opened;
  transport.send('over tls');
  await until(() => messages.length === 1, 'the echo');
  assert.deepEqual(messages, ['echo over tls']);
  transport.close(1000, 'done');
  assert.deepEqual(serverNames, [], 'no SNI for an IP address');
  // The certificate names 127.0.0.1 alone: localhost is sent as SNI and refused by the host name check.
  await assert.rejects(open(`wss://localhost:${port}/`).opened, /Hostname\/IP does not match certificate's altnames/);
  assert.deepEqual(serverNames, ['localhost']);
  assert.equal(handshakes, 3);
});
