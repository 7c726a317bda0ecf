/**
 * @module The Node side of `/relay`: `ws` in `noServer` mode behind the shared Hono app. The HTTP
 * server's `upgrade` event runs the app (so the blacklist check and routing are the same code as on
 * Workers); the app's `/relay` route calls `upgrade` below, which completes the handshake and hands
 * the socket to the relay. `maxPayload` makes `ws` refuse an oversized frame from its header, before
 * buffering it.
 *
 * Idle connections are most of a bridge's sockets, so nothing here is allocated per socket beyond
 * what `ws` needs (docs/bridge-protocol.md §2.11): no listeners (RelayWebSocket's `emit` calls the
 * relay), no client set (`clientTracking: false`: it would add a closure and a listener array per
 * socket; the transport tracks only closing sockets, the relay the open ones), no pong closure
 * (`autoPong: false`: the relay answers pings itself, and not to a peer whose send queue is over the
 * bound, as `ws` stops answering a peer that does not read). And once idle, not even what `ws` needs:
 * a quiet signed-in socket is parked without its WebSocket until its next byte (parking.ts).
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Server as WsServer, WebSocket, WebSocketServer } from 'ws';
import type { Context, Hono } from 'hono';
import type { BridgeRuntime } from '../../app.ts';
import type { Relay } from '../../relay/relay.ts';
import type { PeerSocket } from '../../relay/ports.ts';
import type { Peer } from '../../relay/peer.ts';
import type { RoomName } from '../../relay/rooms.ts';
import { writeCoalescer } from './write-coalescing.ts';
import { Parking, SHAPE, type ParkingLink, type WsInternals } from './parking.ts';
import { installReader, type ReaderReceiver } from './frame-reader.ts';

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
const EMPTY = Buffer.alloc(0);
const BINARY = { binary: true } as const;

/** Below this, a relayed frame is written as one buffer (a copy is cheaper than more writes). */
const JOIN_BELOW = 8 * 1024;

/** The header of an unmasked, final text (or binary) frame of `length` bytes (RFC 6455 §5.2), written at `at`; its size. */
function writeFrameHeader(b: Buffer, at: number, length: number, binary: boolean): number {
  b[at] = binary ? 0x82 : 0x81;
  if (length < 126) {
    b[at + 1] = length;
    return 2;
  }
  if (length < 65536) {
    b[at + 1] = 126;
    b[at + 2] = length >>> 8;
    b[at + 3] = length & 0xff;
    return 4;
  }
  b[at + 1] = 127;
  b.writeUInt32BE(Math.floor(length / 2 ** 32), at + 2);
  b.writeUInt32BE(length >>> 0, at + 6);
  return 10;
}

const headerSize = (length: number) => (length < 126 ? 2 : length < 65536 ? 4 : 10);

/**
 * The PeerSocket port over a `ws` socket: frames go out as text (or binary when they came so), bytes
 * as they are. Everything sent is held until the end of the tick (write-coalescing.ts), so the frames
 * one read brings for this peer leave in one write. The one object per connection that lasts: its
 * WebSocket is dropped while the socket is parked (parking.ts), and anything but a ping wakes it.
 */
export class WsPeerSocket implements PeerSocket, ParkingLink {
  ws: RelayWebSocket | null;
  readonly socket: Socket;
  peer: Peer | undefined = undefined;
  sentAt: number;
  readonly transport: NodeRelayTransport;

  constructor(ws: RelayWebSocket, socket: Socket, transport: NodeRelayTransport) {
    this.ws = ws;
    this.socket = socket;
    this.transport = transport;
    this.sentAt = transport.parking.now;
  }

  send(data: string | Uint8Array, binary = false): void {
    const ws = this.ws ?? this.woken();
    // Parked on a socket the peer half-closed: dropped, as `ws` drops what is sent after a close.
    if (!ws) return;
    this.sentAt = this.transport.parking.now;
    if (ws.readyState === ws.OPEN) {
      writeCoalescer.hold(this.socket);
      writeCoalescer.flush(this.socket);
    }
    ws.send(data, binary ? BINARY : TEXT);
  }

  get bufferedAmount(): number {
    return (this.ws ? this.ws.bufferedAmount : this.socket.writableLength) + writeCoalescer.pending(this.socket);
  }

  /** `ws` closes (the RelayWebSocket's `close` hands over what is batched first). */
  close(code: number, reason: string): void {
    const ws = this.ws ?? this.woken();
    if (ws) ws.close(code, reason);
    else this.socket.destroy();
  }

  /** A parked socket's ping is written raw: heartbeats keep it parked. */
  ping(): void {
    writeCoalescer.flush(this.socket);
    if (this.ws) this.ws.ping();
    else Parking.ping(this.socket);
  }

  /**
   * Frames a relayed message for the socket (held for the tick: see `send`): small ones into the
   * tick's one buffer for this socket (frame header, sender id, body), larger ones as two writes (frame
   * header + sender id, then the received body, not copied). Only when `ws` is idle (open, its sender
   * holding no queue: no compression or Blob in progress); otherwise `send` keeps the order.
   */
  sendParts(head: Uint8Array, frame: Uint8Array, from: number, binary = false): boolean {
    const ws = this.ws ?? this.woken();
    if (!ws || ws.readyState !== ws.OPEN || (ws as unknown as WsInternals)._sender?._state !== 0) return false;
    const socket = this.socket;
    this.sentAt = this.transport.parking.now;
    const body = frame.length - from;
    const length = head.length + body;
    const headerLength = headerSize(length);
    if (length < JOIN_BELOW) {
      const batch = writeCoalescer.reserve(socket, headerLength + length);
      const out = batch.buf;
      const at = batch.length;
      writeFrameHeader(out, at, length, binary);
      out.set(head, at + headerLength);
      out.set(from === 0 ? frame : frame.subarray(from), at + headerLength + head.length);
      batch.length = at + headerLength + length;
      return true;
    }
    writeCoalescer.hold(socket);
    writeCoalescer.flush(socket);
    const start = Buffer.allocUnsafe(headerLength + head.length);
    writeFrameHeader(start, 0, length, binary);
    start.set(head, headerLength);
    socket.write(start);
    socket.write(frame.subarray(from));
    return true;
  }

  /** The WebSocket of a parked socket, woken to send; null when the socket can no longer be written. */
  private woken(): RelayWebSocket | null {
    if (!this.socket.writable) return null;
    this.transport.parking.wake(this);
    return this.ws;
  }
}

/**
 * `ws`'s WebSocket with its events handed to the relay by `emit` itself, not through listeners:
 * five listeners would put a listener table (~260 bytes) on every socket; an override costs nothing
 * per socket. Set on attach; before that (never, on a server socket) events go the usual way. Every
 * event `ws` emits on a server socket has at most two arguments.
 */
class RelayWebSocket extends WebSocket {
  /** Its connection; taken away when the socket is parked (a dropped WebSocket reaches nothing). */
  link: WsPeerSocket | undefined = undefined;

  /** Either side's close (`ws` calls this when the peer's close frame arrives): tracked until the socket is gone. */
  override close(code?: number, reason?: string | Buffer): void {
    const link = this.link;
    if (link) {
      link.transport.closing.add(this);
      // The frames batched for this tick go before the close frame.
      writeCoalescer.flush(link.socket);
    }
    super.close(code, reason);
  }

  override emit(event: string | symbol, a?: unknown, b?: unknown): boolean {
    const link = this.link;
    const peer = link?.peer;
    if (!link || !peer) return super.emit(event, a, b);
    const transport = link.transport;
    const relay = transport.relay;
    switch (event) {
      case 'message':
        relay.receive(peer, a as Buffer, b as boolean);
        return true;
      case 'ping':
        if (this.readyState === this.OPEN && relay.pinged(peer)) {
          writeCoalescer.flush(link.socket);
          this.pong(a as Buffer);
        }
        return true;
      case 'pong':
        relay.pong(peer);
        return true;
      case 'close':
        transport.closing.delete(this);
        transport.parking.forget(link);
        relay.closed(peer);
        return true;
      case 'error': {
        const err = a as Error & { code?: string };
        // Over maxPayload, or a length no payload can have (over 2^53 - 1): both too large.
        if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' || err.code === 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH') relay.oversize(peer);
        else relay.logger.debug({ err, peer: peer.id }, 'websocket error');
        return true;
      }
      default:
        return super.emit(event, a, b);
    }
  }
}

/** The Node runtime of the app's `/relay` route: completes upgrades with `ws` and feeds the relay. */
export class NodeRelayTransport implements BridgeRuntime<NodeEnv> {
  readonly wss: WsServer<typeof RelayWebSocket>;
  readonly relay: Relay;
  /**
   * Sockets closing (by either side) and not closed yet: what `close` waits for and then terminates.
   * Open sockets are the relay's peers (`relay.shutdown()` closes them all), so none is tracked here.
   */
  readonly closing = new Set<RelayWebSocket>();
  /** Idle sockets without their WebSocket (parking.ts); `parking.pass` runs with the relay's sweep. */
  readonly parking: Parking;

  constructor(relay: Relay) {
    this.relay = relay;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: relay.config.maxFrameBytes,
      perMessageDeflate: false,
      clientTracking: false,
      autoPong: false,
      WebSocket: RelayWebSocket,
    });
    this.parking = new Parking({ relay, adopt: (link) => this.adopt(link as WsPeerSocket), now: relay.clock.now() });
    if (this.parking.off) relay.logger.debug({ reason: this.parking.off }, 'idle sockets are not parked');
  }

  remoteAddress(c: Context<{ Bindings: NodeEnv }>): string {
    return c.env.incoming.socket.remoteAddress ?? '';
  }

  upgrade(c: Context<{ Bindings: NodeEnv }>, address: string, room: RoomName): Response {
    const { incoming, socket, head } = c.env;
    if (!socket || !head) return c.text('WebSocket upgrade needs HTTP/1.1\n', 400);
    c.env.upgraded = true;
    if (c.env.onSocketError) socket.off('error', c.env.onSocketError);
    this.wss.handleUpgrade(incoming, socket, head, (ws) => this.attach(ws, socket as Socket, address, room));
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

  private attach(ws: RelayWebSocket, socket: Socket, address: string, room: RoomName): void {
    const link = new WsPeerSocket(ws, socket, this);
    ws.link = link;
    this.read(ws);
    link.peer = this.relay.open(link, address, room);
    this.parking.track(link);
  }

  /** A parked socket wakes: a new WebSocket takes it as the server's handshake would (`completeUpgrade`). */
  private adopt(link: WsPeerSocket): RelayWebSocket {
    const o = this.wss.options;
    // The server's own call (`new this.options.WebSocket(null, undefined, this.options)`), which ws's types omit.
    const ws = new (RelayWebSocket as unknown as new (address: null, protocols: undefined, options: object) => RelayWebSocket)(null, undefined, o);
    (ws as unknown as WsInternals).setSocket(link.socket, EMPTY, {
      allowSynchronousEvents: o.allowSynchronousEvents,
      maxBufferedChunks: o.maxBufferedChunks,
      maxFragments: (o as { maxFragments?: number }).maxFragments,
      maxPayload: o.maxPayload,
      skipUTF8Validation: o.skipUTF8Validation,
    });
    ws.link = link;
    link.ws = ws;
    this.read(ws);
    return ws;
  }

  /** A signed-in peer's plain frames are read by frame-reader.ts, the rest by `ws` (off where the probe of `ws` failed). */
  private read(ws: RelayWebSocket): void {
    const receiver = (ws as unknown as WsInternals)._receiver;
    if (typeof SHAPE !== 'string' && receiver) installReader(receiver as unknown as ReaderReceiver, SHAPE.kWebSocket);
  }

  /**
   * After `relay.shutdown()`: waits up to `graceMs` for the close handshakes, then terminates what is
   * left, and any socket that arrived meanwhile (a peer reconnecting at once: shut down too, so tracked).
   */
  async close(graceMs = 1000): Promise<void> {
    const deadline = Date.now() + graceMs;
    while (this.closing.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    this.relay.shutdown();
    for (const ws of this.closing) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
