/**
 * @module The Node side of `/relay`: `ws` in `noServer` mode behind the shared Hono app. The HTTP
 * server's `upgrade` event runs the app (so the blacklist check and routing are the same code as on
 * Workers); the app's `/relay` route calls `upgrade` below, which completes the handshake and hands
 * the socket to the relay. `maxPayload` makes `ws` refuse an oversized frame from its header, before
 * buffering it.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Context, Hono } from 'hono';
import type { BridgeRuntime } from '../../app.ts';
import type { Relay } from '../../relay/relay.ts';
import type { PeerSocket } from '../../relay/ports.ts';
import type { Peer } from '../../relay/peer.ts';
import type { RoomName } from '../../relay/rooms.ts';

/** `c.env` on Node: the request, plus the raw socket and head when the request is an upgrade. */
export interface NodeEnv {
  incoming: IncomingMessage;
  outgoing?: ServerResponse;
  socket?: Duplex;
  head?: Buffer;
  upgraded?: boolean;
  /** The error listener guarding the raw socket until `ws` takes it over. */
  onSocketError?: () => void;
}

const TEXT = { binary: false } as const;
const BINARY = { binary: true } as const;

/** The parts of `ws` the fast path touches (stable in ws 8, but not public API; checked before use). */
interface WsInternals {
  _socket?: Duplex;
  _sender?: { _state?: number };
}

/** Below this, a relayed frame is written as one buffer (a copy is cheaper than more writes). */
const JOIN_BELOW = 8 * 1024;

/**
 * One buffer holding the header of an unmasked, final text (or binary) frame of `length` bytes
 * (RFC 6455 §5.2), then `head`, with `extra` bytes left for the caller.
 */
function frameStart(length: number, head: Uint8Array, extra: number, binary: boolean): Buffer {
  const headerLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const b = Buffer.allocUnsafe(headerLength + head.length + extra);
  b[0] = binary ? 0x82 : 0x81;
  if (length < 126) b[1] = length;
  else if (length < 65536) {
    b[1] = 126;
    b.writeUInt16BE(length, 2);
  } else {
    b[1] = 127;
    b.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    b.writeUInt32BE(length >>> 0, 6);
  }
  b.set(head, headerLength);
  return b;
}

/** The PeerSocket port over a `ws` socket: frames go out as text (or binary when they came so), bytes as they are. */
class WsPeerSocket implements PeerSocket {
  private readonly ws: WebSocket;

  constructor(ws: WebSocket) {
    this.ws = ws;
  }

  send(data: string | Uint8Array, binary = false): void {
    this.ws.send(data, binary ? BINARY : TEXT);
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  ping(): void {
    this.ws.ping();
  }

  /**
   * Writes a relayed frame straight to the socket: small frames as one buffer (frame header, sender
   * id, body), larger ones as two writes joined by one writev (frame header + sender id, then the
   * received body, not copied). Only when `ws` is idle (open, its sender holding no queue: no
   * compression or Blob in progress); otherwise `send` keeps the order.
   */
  sendParts(head: Uint8Array, frame: Uint8Array, from: number, binary = false): boolean {
    const internals = this.ws as unknown as WsInternals;
    const socket = internals._socket;
    if (this.ws.readyState !== this.ws.OPEN || !socket || internals._sender?._state !== 0) return false;
    const body = frame.length - from;
    const length = head.length + body;
    if (length < JOIN_BELOW) {
      const out = frameStart(length, head, body, binary);
      out.set(frame.subarray(from), out.length - body);
      socket.write(out);
      return true;
    }
    socket.cork();
    socket.write(frameStart(length, head, 0, binary));
    socket.write(frame.subarray(from));
    socket.uncork();
    return true;
  }
}

const RELAY = Symbol('relay');
const PEER = Symbol('peer');
type AttachedWs = WebSocket & { [RELAY]: Relay; [PEER]: Peer };

function onMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
  const ws = this as AttachedWs;
  ws[RELAY].receive(ws[PEER], data as Buffer, isBinary);
}

function onPong(this: WebSocket): void {
  const ws = this as AttachedWs;
  ws[RELAY].pong(ws[PEER]);
}

function onClose(this: WebSocket): void {
  const ws = this as AttachedWs;
  ws[RELAY].closed(ws[PEER]);
}

function onError(this: WebSocket, err: Error & { code?: string }): void {
  const ws = this as AttachedWs;
  if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') ws[RELAY].oversize(ws[PEER]);
  else ws[RELAY].logger.debug({ err, peer: ws[PEER].id }, 'websocket error');
}

/** The Node runtime of the app's `/relay` route: completes upgrades with `ws` and feeds the relay. */
export class NodeRelayTransport implements BridgeRuntime<NodeEnv> {
  readonly wss: WebSocketServer;
  private readonly relay: Relay;

  constructor(relay: Relay) {
    this.relay = relay;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: relay.config.maxFrameBytes, perMessageDeflate: false });
  }

  remoteAddress(c: Context<{ Bindings: NodeEnv }>): string {
    return c.env.incoming.socket.remoteAddress ?? '';
  }

  upgrade(c: Context<{ Bindings: NodeEnv }>, address: string, room: RoomName): Response {
    const { incoming, socket, head } = c.env;
    if (!socket || !head) return c.text('WebSocket upgrade needs HTTP/1.1\n', 400);
    c.env.upgraded = true;
    if (c.env.onSocketError) socket.off('error', c.env.onSocketError);
    this.wss.handleUpgrade(incoming, socket, head, (ws) => this.attach(ws, address, room));
    return new Response(null, { status: 200 });
  }

  /** The HTTP server's `upgrade` listener: runs the app, and answers the socket itself when the app refused. */
  upgradeListener(app: Hono<{ Bindings: NodeEnv }>): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return (req, socket, head) => {
      const onSocketError = () => socket.destroy();
      socket.on('error', onSocketError);
      const env: NodeEnv = { incoming: req, socket, head, onSocketError };
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers.set(name, value);
        else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      }
      const request = new Request(new URL(req.url ?? '/', 'http://bridge.invalid'), { headers });
      void Promise.resolve(app.fetch(request, env))
        .then(async (res) => {
          if (env.upgraded) return;
          const body = await res.text();
          const status = res.status;
          socket.end(
            `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: ${res.headers.get('content-type') ?? 'text/plain'}\r\n` +
              `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
        })
        .catch(() => {
          if (!env.upgraded) socket.end('HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        });
    };
  }

  private attach(ws: WebSocket, address: string, room: RoomName): void {
    const peer = this.relay.open(new WsPeerSocket(ws), address, room);
    // Shared listeners (no closures per connection): the socket carries its relay and peer.
    const attached = ws as AttachedWs;
    attached[RELAY] = this.relay;
    attached[PEER] = peer;
    ws.on('message', onMessage);
    ws.on('pong', onPong);
    ws.on('close', onClose);
    ws.on('error', onError);
  }

  /** Closes what the relay has not closed already; waits up to `graceMs` for close handshakes. */
  async close(graceMs = 1000): Promise<void> {
    const deadline = Date.now() + graceMs;
    while (this.wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
