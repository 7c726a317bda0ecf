/**
 * The SDK's WebSocket in Node: `ws`, with the client's opening handshake (RFC 6455 §4.1) done here
 * over node:net (`ws://`) or node:tls (`wss://`) instead of through node:http. ws's own client sends
 * its upgrade request with `http.request` and reads the 101 with Node's HTTP parser: loading node:http
 * and that machinery cost a cold `hostadm call` ~5 ms of its ~60 ms of CPU (client/cli/README.md,
 * "Start-up"); the call needs one request out and one response head back. Everything after the
 * handshake is ws's own code: the upgraded socket goes to ws's `setSocket`, as ws's server does after
 * its handshake, with the flag that makes a WebSocket a client (it masks what it sends, and its
 * receiver wants unmasked frames). So framing, masking, the close handshake, ping/pong and maxPayload
 * are ws's, and the object the SDK gets is a ws WebSocket (same events, `send` callbacks, `terminate`).
 *
 * ws (pinned at 8.23) does not make those internals public: `rawHandshakeOff` checks them once, on a
 * throwaway WebSocket over a stream of our own; if they differ, or for a URL this module leaves alone
 * (credentials, not ws/wss), connections go to ws's normal client as before (node:http then loads,
 * through the CLI's stand-in for it: cli/src/main.cts, scripts/bundle-cli.ts).
 *
 * No Node library does this part without node:http: Node's global WebSocket (undici) costs ~40 ms to
 * load and says little about why a connection failed; websocket-driver parses with Node's HTTP parser.
 */
import { createHash, randomBytes } from 'node:crypto';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import WebSocket from 'ws';
import { sweepMessage } from '@hostadm/shared/node/read-sweep.ts';
import type { WebSocketConstructor, WebSocketLike } from './websocket.ts';

/** The longest response head read (status line and headers): Node's own HTTP parser's default limit. */
export const MAX_RESPONSE_HEAD = 16 * 1024;
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** What ws's client sets in its constructor (`initAsClient`'s defaults) and its server passes instead. */
const CLIENT_OPTIONS = { autoPong: true, maxPendingAutoPongs: 60, closeTimeout: 30_000 };
/** ws's client defaults for the receiver (`initAsClient`), as its own client hands them to `setSocket`. */
const SOCKET_OPTIONS = {
  allowSynchronousEvents: true,
  maxBufferedChunks: 256 * 1024,
  maxFragments: 16 * 1024,
  maxPayload: 100 * 1024 * 1024,
  skipUTF8Validation: false,
};
const CLOSED_EARLY = 'WebSocket was closed before the connection was established';
/** What setSocket gets as the bytes behind the 101 (#settle unshifts them itself). */
const NO_BYTES = Buffer.alloc(0);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Control characters, which no status line or header value may hold (tab aside). */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** The fields of ws 8.23's WebSocket this module sets or calls (`probeWs` checks them first). */
interface WsInternals {
  _isServer: boolean;
  _url: string;
  _readyState: number;
  _errorEmitted: boolean;
  _bufferedAmount: number;
  _redirects: number;
  _receiver: { write(chunk: Buffer): boolean } | null;
  setSocket(socket: Writable, head: Buffer, options: typeof SOCKET_OPTIONS): void;
  emitClose(): void;
}

/** ws's constructor as its server calls it: no address, no connection, options of its own. */
const AdoptingWebSocket = WebSocket as unknown as new (address: null, protocols: undefined, options: typeof CLIENT_OPTIONS) => WebSocket & WsInternals;

/** The socket after a 101 that passed every check, and the bytes that came behind the response head. */
interface Upgraded {
  socket: Socket;
  head: Buffer;
}

/**
 * A ws WebSocket that connects and upgrades by itself, then is ws's client from `open` on. Until then
 * `close`/`terminate` abort the handshake (error, then close 1006, as ws's client does).
 */
class HandshakingWebSocket extends AdoptingWebSocket {
  #abort: (() => void) | null;

  constructor(url: URL) {
    super(null, undefined, CLIENT_OPTIONS);
    // Client, not server: ws masks what it sends and its receiver refuses masked frames (RFC 6455 §5.1).
    this._isServer = false;
    this._url = url.href;
    this._bufferedAmount = 0;
    this._redirects = 0;
    this.#abort = upgrade(url, (outcome) => this.#settle(outcome));
  }

  override close(code?: number, data?: string | Buffer): void {
    if (this.readyState === WebSocket.CONNECTING) this.#abortHandshake();
    else super.close(code, data);
  }

  override terminate(): void {
    if (this.readyState === WebSocket.CONNECTING) this.#abortHandshake();
    else super.terminate();
  }

  /** CLOSING at once (a later close or send is ws's, on a WebSocket without a socket); error and close follow. */
  #abortHandshake(): void {
    this._readyState = WebSocket.CLOSING;
    this.#abort?.();
  }

  #settle(outcome: Error | Upgraded): void {
    this.#abort = null;
    if (!(outcome instanceof Error)) {
      // The bytes behind the 101 go back into the socket once ws listens, not before (as setSocket would
      // put them): an unshift into a flowing socket that has a 'data' listener (an observer's, from a
      // diagnostics_channel subscriber) is emitted to that listener at once, and ws would never see it.
      // An 'open' listener may already have terminated the socket: then the bytes go nowhere.
      this.setSocket(outcome.socket, NO_BYTES, SOCKET_OPTIONS);
      if (outcome.head.length > 0 && !outcome.socket.destroyed) outcome.socket.unshift(outcome.head);
      return;
    }
    // ws's emitErrorAndClose: there is no socket, so the close is 1006 with no reason.
    this._readyState = WebSocket.CLOSING;
    this._errorEmitted = true;
    this.emit('error', outcome);
    this.emitClose();
  }
}

/**
 * Connects to `url` and sends the upgrade request; `done` gets the upgraded socket, or the reason
 * there is none (the socket is destroyed then). Returns the abort: `done` gets that error on the next
 * tick, as ws's client reports an aborted handshake.
 */
function upgrade(url: URL, done: (outcome: Error | Upgraded) => void): () => void {
  const secure = url.protocol === 'wss:';
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = Number(url.port) || (secure ? 443 : 80);
  // node:tls only for wss:// (a ws:// call never loads it). Certificates are checked as ws's client
  // checks them (tls.connect's defaults: the host name, or the IP address when the host is one); SNI
  // names the host unless it is an IP address, as ws's tlsConnect does.
  const socket: Socket = secure ? process.getBuiltinModule('node:tls').connect({ host, port, servername: isIP(host) ? '' : host }) : connectTcp({ host, port });
  const key = randomBytes(16).toString('base64');
  const accept = createHash('sha1')
    .update(key + GUID)
    .digest('base64');
  // No Sec-WebSocket-Extensions or -Protocol: hostadm's servers agree to neither, so none is offered.
  socket.write(
    `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );

  let received: Buffer = Buffer.alloc(0);
  let settled = false;
  const finish = (outcome: Error | Upgraded, later = false) => {
    if (settled) return;
    settled = true;
    socket.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', onError);
    if (outcome instanceof Error) {
      // Whatever the socket says while it is torn down has been said: it must not throw as unhandled.
      socket.on('error', () => {});
      socket.destroy();
    }
    if (later) process.nextTick(done, outcome);
    else done(outcome);
  };
  const onData = (chunk: Buffer) => {
    const from = Math.max(0, received.length - 3);
    received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
    const end = received.indexOf('\r\n\r\n', from, 'latin1');
    if (end === -1 ? received.length > MAX_RESPONSE_HEAD : end + 4 > MAX_RESPONSE_HEAD) {
      finish(new Error(`Server response head is longer than ${MAX_RESPONSE_HEAD} bytes`));
    } else if (end !== -1) {
      const problem = responseProblem(received.toString('latin1', 0, end), accept);
      finish(problem === undefined ? { socket, head: received.subarray(end + 4) } : new Error(problem));
    }
  };
  const onEnd = () => finish(new Error('Server closed the connection during the opening handshake'));
  const onError = (err: Error) => finish(err);
  socket.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', onError);
  return () => finish(new Error(CLOSED_EARLY), true);
}

/**
 * What is wrong with a response head (status line and header lines, without the blank line) as the
 * answer to our upgrade request, or undefined when nothing is. Messages are ws's where ws has one.
 */
function responseProblem(head: string, accept: string): string | undefined {
  const lines = head.split('\r\n');
  const statusLine = lines[0] ?? '';
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine)?.[1];
  if (status === undefined || CONTROL.test(statusLine)) return `Invalid HTTP status line: ${JSON.stringify(statusLine.slice(0, 80))}`;
  if (status !== '101') return `Unexpected server response: ${status}`;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (colon < 1 || !TOKEN.test(name) || CONTROL.test(value)) return `Invalid HTTP header line: ${JSON.stringify(line.slice(0, 80))}`;
    const lower = name.toLowerCase();
    const earlier = headers.get(lower);
    // Repeated headers are one comma-separated list (RFC 9110 §5.3), as Node's HTTP parser joins them.
    headers.set(lower, earlier === undefined ? value : `${earlier}, ${value}`);
  }
  if (headers.get('upgrade')?.toLowerCase() !== 'websocket') return 'Invalid Upgrade header';
  const connection = headers.get('connection')?.split(',') ?? [];
  if (!connection.some((token) => token.trim().toLowerCase() === 'upgrade')) return 'Invalid Connection header';
  if (headers.get('sec-websocket-accept') !== accept) return 'Invalid Sec-WebSocket-Accept header';
  if (headers.has('sec-websocket-extensions')) return 'Server sent a Sec-WebSocket-Extensions header but no extension was requested';
  if (headers.has('sec-websocket-protocol')) return 'Server sent a subprotocol but none was requested';
  return undefined;
}

/**
 * ws's internals as this module uses them, tried on a throwaway WebSocket over a stream of our own:
 * '' when a WebSocket adopted with `_isServer` false masks what it sends and takes an unmasked frame,
 * or what differs. Kept small (it runs before a call connects): the stream only takes writes, which
 * is all a WebSocket that is never closed asks of it, and the WebSocket is left to the collector.
 */
function probeWs(): string {
  try {
    const proto = WebSocket.prototype as unknown as Partial<WsInternals>;
    if (typeof proto.setSocket !== 'function' || typeof proto.emitClose !== 'function') return 'WebSocket.prototype.setSocket or emitClose is missing';
    const written: Buffer[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, next) {
        written.push(chunk);
        next();
      },
    });
    const ws = new AdoptingWebSocket(null, undefined, CLIENT_OPTIONS);
    if (ws._isServer !== true || typeof ws._errorEmitted !== 'boolean' || ws._readyState !== WebSocket.CONNECTING) return 'WebSocket fields differ';
    ws._isServer = false;
    let taken = '';
    ws.on('message', (data) => {
      taken += String(data);
    });
    ws.on('error', () => {});
    ws.setSocket(stream, Buffer.alloc(0), SOCKET_OPTIONS);
    ws._receiver?.write(Buffer.from([0x81, 0x01, 0x79])); // a server's unmasked text frame, "y"
    ws.send('x');
    const frame = Buffer.concat(written);
    // FIN + text, MASK + length 1, a 4-byte key, then "x" masked with the key's first byte.
    if (frame.length !== 7 || frame[0] !== 0x81 || frame[1] !== 0x81 || ((frame[6] ?? 0) ^ (frame[2] ?? 0)) !== 0x78) return 'a client frame was not masked';
    if (taken !== 'y') return 'an unmasked server frame was not taken';
    return '';
  } catch (err) {
    return `probing ws threw: ${err instanceof Error ? err.message : String(err)}`;
  }
}

let probed: string | undefined;
/** Why connections go to ws's own client ('' when this module does their handshake): probed once. */
export function rawHandshakeOff(): string {
  probed ??= probeWs();
  return probed;
}

/** Whether this module does `url`'s handshake; anything else goes to ws as is (its errors included). */
function ownHandshake(url: string): URL | null {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (parsed === null || (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:')) return null;
  // Credentials become ws's Basic authorization and a fragment its SyntaxError: both stay ws's.
  if (parsed.username || parsed.password || parsed.hash) return null;
  return rawHandshakeOff() === '' ? parsed : null;
}

/**
 * Called with `new` by the SDK (a constructor may return another object): a handshaking ws WebSocket,
 * or ws's own client (its default options, as the SDK always used) when this module leaves the URL
 * to it. A subclass's `super(url)` gets the same object.
 */
function NodeWebSocketFor(url: string): WebSocketLike {
  const own = ownHandshake(url);
  const socket = own === null ? new WebSocket(url) : new HandshakingWebSocket(own);
  // A bulk transfer's dead buffers get the scavenges V8 does not ask for (shared/src/node/read-sweep.ts).
  socket.on('message', sweepMessage);
  return socket as unknown as WebSocketLike;
}

/** The SDK's WebSocket constructor in Node. */
export const NodeWebSocket = NodeWebSocketFor as unknown as WebSocketConstructor;
