/**
 * @module Parked sockets (docs/bridge-protocol.md §2, "Parked sockets"): an idle peer's socket without
 * `ws`'s per-socket objects. Most of a bridge's sockets are agents that sit idle for hours, and `ws`
 * keeps ~1.3 KiB per socket (WebSocket, Receiver, Sender, the Receiver's stream state, their listener
 * tables and closures) that an idle socket does not use. Cloudflare's Durable Objects hibernate such
 * sockets (the Workers runtime of this bridge does); this is the same idea for one socket on Node.
 *
 * A signed-in socket with no frame in or out for `parkQuietSeconds`, whose `ws` is fully idle (open,
 * the Receiver between frames with no byte buffered, the Sender with no queue, nothing unsent on the
 * socket), is **parked**: `ws`'s listeners leave the `net.Socket` and four shared functions take their
 * place (no closure per socket; Node's own `end` listener, a no-op on a half-open socket, is taken off
 * too); the relay's Peer and its adapter keep the socket. Its first bytes
 * **wake** it: a new `ws` WebSocket adopts the socket as the server does after a handshake
 * (`setSocket`, same options) and its Receiver parses those bytes, so `maxPayload` and every other
 * check of `ws` apply to them; nothing is ever buffered while parked (each read wakes at once). The
 * two heartbeat frames are the exception, read and written raw so heartbeats keep parked sockets parked:
 * a masked empty pong (6 bytes: the answer to the relay's ping) and a masked empty ping (the agent's
 * heartbeat, answered with an empty pong when the relay allows it, as when awake). Anything the relay
 * sends to a parked socket but a ping wakes it first: the queue bound, write coalescing and the
 * close handshake are `ws`'s, as before.
 *
 * `ws` (pinned at 8.23) does not make these internals public: `probeWs` checks at startup that they
 * have the expected shape on a throwaway WebSocket; if not, nothing is ever parked and no frame is read
 * by frame-reader.ts (logged at debug).
 */
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import type { RelayMetrics } from '../../relay/metrics.ts';
import type { Peer } from '../../relay/peer.ts';
import type { Relay } from '../../relay/relay.ts';
import type { ReaderReceiver } from './frame-reader.ts';

/** The private state of `ws` parking reads (ws 8.23's Receiver, Sender and WebSocket fields): the frame reader's, and the fragments. */
interface ReceiverInternals extends ReaderReceiver {
  _fragments: unknown[];
}
interface SenderInternals {
  _state: number;
  _queue: unknown[];
  _bufferedBytes: number;
}
export interface WsInternals {
  readonly readyState: number;
  _receiver: ReceiverInternals | null;
  _sender: SenderInternals | null;
  _closeTimer: unknown;
  _closeFrameReceived: boolean;
  _closeFrameSent: boolean;
  _paused: boolean;
  setSocket(socket: Duplex, head: Buffer, options: Record<string, unknown>): void;
}

type SocketEvent = 'close' | 'data' | 'end' | 'error';
const EVENTS: readonly SocketEvent[] = ['close', 'data', 'end', 'error'];
/** A socket listener (`data` has one argument, the others none). */
type Listener = (this: Socket, chunk: Buffer) => void;

/** What `setSocket` puts on a socket: one listener per event, and the WebSocket under a symbol. */
export interface WsShape {
  readonly kWebSocket: symbol;
  readonly listeners: ReadonlyMap<SocketEvent, Listener>;
}

const isNumber = (v: unknown) => typeof v === 'number';

/**
 * `ws`'s internals as parking needs them, seen on a throwaway WebSocket over a stream of our own, or
 * why they are not (then nothing is parked).
 */
export function probeWs(): WsShape | string {
  try {
    const proto = WebSocket.prototype as unknown as Partial<WsInternals>;
    if (typeof proto.setSocket !== 'function') return 'WebSocket.prototype.setSocket is missing';
    const stream = new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() });
    const Ws = WebSocket as unknown as new (address: null, protocols: undefined, options: object) => WsInternals;
    const ws = new Ws(null, undefined, { autoPong: false });
    ws.setSocket(stream, Buffer.alloc(0), { maxPayload: 1024 });
    const slot = Object.getOwnPropertySymbols(stream).find((s) => (stream as unknown as Record<symbol, unknown>)[s] === ws);
    const listeners = new Map<SocketEvent, Listener>();
    for (const event of EVENTS) {
      const name = `socketOn${event[0]!.toUpperCase()}${event.slice(1)}`;
      const found = stream.listeners(event).filter((f) => f.name === name);
      if (found.length === 1) listeners.set(event, found[0] as Listener);
    }
    const r = ws._receiver;
    const s = ws._sender;
    const ok =
      slot !== undefined &&
      listeners.size === EVENTS.length &&
      ws.readyState === WebSocket.OPEN &&
      r !== null &&
      [r._state, r._bufferedBytes, r._fragmented, r._payloadLength, r._opcode, r._maxPayload].every(isNumber) &&
      Array.isArray(r._fragments) &&
      typeof r._loop === 'boolean' &&
      typeof r._errored === 'boolean' &&
      isNumber(r._writableState?.length) &&
      s !== null &&
      [s._state, s._bufferedBytes].every(isNumber) &&
      Array.isArray(s._queue) &&
      ws._closeTimer === null &&
      typeof ws._paused === 'boolean';
    stream.destroy();
    return ok ? { kWebSocket: slot, listeners } : "ws's internals are not those of ws 8.23 (receiver, sender or socket listeners)";
  } catch (err) {
    return `probing ws failed: ${String(err)}`;
  }
}

/** One connection as parking sees it (the Node transport's WsPeerSocket). */
export interface ParkingLink {
  /** The socket's WebSocket (a `ws` one, whose internals parking reads); null while parked. */
  ws: object | null;
  readonly socket: Socket;
  peer: Peer | undefined;
  /** When something was last sent to the peer (`Parking.now` then, a clock at most a sweep old). */
  sentAt: number;
  readonly transport: { readonly relay: Relay; readonly parking: Parking };
}

/** A server's empty ping and empty pong (RFC 6455 §5.5.2–3; unmasked: server to client). */
const PING = Buffer.from([0x89, 0x00]);
const PONG = Buffer.from([0x8a, 0x00]);

/** Probed once per process: `ws` is one module. The frame reader (frame-reader.ts) reads the same Receiver fields. */
export const SHAPE: WsShape | string = probeWs();
/** Where a parked socket keeps its link: the slot `ws` kept its WebSocket in (no new property on the socket). */
const slot: symbol = typeof SHAPE === 'string' ? Symbol('parked link') : SHAPE.kWebSocket;

const linkOf = (socket: Socket) => (socket as unknown as Record<symbol, ParkingLink>)[slot]!;

/**
 * A parked socket's first bytes: heartbeats (one read may bring several: the answer to the relay's
 * ping and the peer's own) are handled here; anything else wakes it.
 */
function parkedOnData(this: Socket, chunk: Buffer): void {
  const link = linkOf(this);
  if (!link.peer || !heartbeatsOnly(chunk)) return link.transport.parking.wake(link, chunk);
  const relay = link.transport.relay;
  for (let i = 0; i < chunk.length; i += EMPTY_CONTROL) {
    if (chunk[i] === 0x8a) relay.pong(link.peer);
    else if (relay.pinged(link.peer)) this.write(PONG);
  }
}

/** A client's frames are masked: an empty control frame is 2 header bytes and the 4-byte mask. */
const EMPTY_CONTROL = 6;

/** Whether `chunk` is nothing but a few empty pings and pongs from a client (masked, final). */
function heartbeatsOnly(chunk: Buffer): boolean {
  if (chunk.length === 0 || chunk.length % EMPTY_CONTROL !== 0 || chunk.length > 8 * EMPTY_CONTROL) return false;
  for (let i = 0; i < chunk.length; i += EMPTY_CONTROL) if (chunk[i + 1] !== 0x80 || (chunk[i] !== 0x89 && chunk[i] !== 0x8a)) return false;
  return true;
}

/** The peer half-closed without a close frame: closed as `ws` does (the socket's `close` follows). */
function parkedOnEnd(this: Socket): void {
  this.end();
}

/** The socket is destroyed by the error; its `close` follows. */
function parkedOnError(this: Socket): void {
  this.destroy();
}

function parkedOnClose(this: Socket): void {
  const link = linkOf(this);
  link.transport.parking.closedWhileParked(link);
}

/** Node's `end` listener on every net.Socket (net.js's `onReadableStreamEnd`), found at the first park. */
let nodeOnEnd: Listener | undefined;

const PARKED: ReadonlyArray<[SocketEvent, Listener]> = [
  ['close', parkedOnClose],
  ['data', parkedOnData],
  ['end', parkedOnEnd],
  ['error', parkedOnError],
];

export interface ParkingOptions {
  relay: Relay;
  /** Puts a new WebSocket of the transport's on `link.socket` (`setSocket`, the server's options). */
  adopt(link: ParkingLink): object;
  now: number;
}

/** The sockets of one transport that are awake, and the parking and waking of the quiet ones. */
export class Parking {
  /** The clock of the last `pass` (sends stamp it: no clock read per frame). */
  now: number;
  readonly shape: WsShape | null;
  /** Why nothing is parked ('' when parking is on). */
  readonly off: string;
  private readonly awake = new Set<ParkingLink>();
  private readonly quietMs: number;
  private readonly metrics: RelayMetrics;
  private readonly relay: Relay;
  private readonly adopt: (link: ParkingLink) => object;

  constructor(options: ParkingOptions, shape: WsShape | string = SHAPE) {
    this.relay = options.relay;
    this.metrics = options.relay.metrics;
    this.adopt = options.adopt;
    this.now = options.now;
    this.quietMs = options.relay.config.parkQuietSeconds * 1000;
    this.shape = typeof shape === 'string' ? null : shape;
    this.off = typeof shape === 'string' ? shape : this.quietMs > 0 ? '' : 'parkQuietSeconds is 0';
  }

  /** A socket was opened (or woke): it is parked once quiet. */
  track(link: ParkingLink): void {
    if (!this.off) this.awake.add(link);
  }

  /** Its WebSocket closed. */
  forget(link: ParkingLink): void {
    this.awake.delete(link);
  }

  /** Parks every awake socket quiet since `now - parkQuietSeconds`; returns how many. Runs with the sweep. */
  pass(now: number): number {
    this.now = now;
    let parked = 0;
    for (const link of this.awake) if (this.quiet(link, now) && this.park(link)) parked++;
    return parked;
  }

  /** Parks `link` if its peer is signed in and `ws` is fully idle; whether it did. */
  park(link: ParkingLink): boolean {
    const ws = link.ws as WsInternals | null;
    const socket = link.socket;
    const shape = this.shape;
    if (!shape || !ws || !link.peer || link.peer.state !== 'signed-in' || link.peer.closed || !idle(ws, socket, shape)) return false;
    for (const [event, listener] of shape.listeners) socket.removeListener(event, listener);
    // Node's own `end` listener does nothing on a half-open socket (the HTTP server's are): without it
    // the socket's `end` holds one function, not an array of two. Put back on wake, first as before.
    nodeOnEnd ??= socket.listeners('end').find((f) => f.name === 'onReadableStreamEnd') as Listener | undefined;
    if (socket.allowHalfOpen && nodeOnEnd) socket.removeListener('end', nodeOnEnd);
    for (const [event, listener] of PARKED) socket.on(event, listener);
    // The slot `ws` kept itself in holds the link: no new property on the socket, and no path to the old WebSocket.
    (socket as unknown as Record<symbol, unknown>)[slot] = link;
    (ws as unknown as { link?: unknown }).link = undefined;
    link.ws = null;
    this.awake.delete(link);
    this.metrics.parking.parked++;
    this.metrics.parking.parks++;
    return true;
  }

  /** A new WebSocket takes the parked socket; `chunk` (its first read, if any) goes to its Receiver. */
  wake(link: ParkingLink, chunk?: Buffer): void {
    const socket = link.socket;
    for (const [event, listener] of PARKED) socket.removeListener(event, listener);
    if (socket.allowHalfOpen && nodeOnEnd && !socket.listeners('end').includes(nodeOnEnd)) socket.on('end', nodeOnEnd);
    (socket as unknown as Record<symbol, unknown>)[slot] = undefined;
    this.metrics.parking.parked--;
    this.metrics.parking.wakes++;
    let ws: WsInternals;
    try {
      ws = this.adopt(link) as WsInternals;
    } catch (err) {
      // Not expected (the shape was probed); the socket cannot be served, so it goes, and the peer with it.
      this.relay.logger.warn({ err, peer: link.peer?.id }, 'could not wake a parked socket');
      socket.destroy();
      if (link.peer) this.relay.closed(link.peer);
      return;
    }
    this.awake.add(link);
    // What `ws`'s own data listener does with a read, in this same tick (the frames it holds are relayed now).
    if (chunk && !ws._receiver!.write(chunk)) socket.pause();
  }

  /** A parked socket closed (the peer left, or an error): the relay forgets its peer, once. */
  closedWhileParked(link: ParkingLink): void {
    this.metrics.parking.parked--;
    if (link.peer) this.relay.closed(link.peer);
  }

  /** The write of a heartbeat ping to a parked socket (raw, so it stays parked). */
  static ping(socket: Socket): void {
    if (socket.writable) socket.write(PING);
  }

  private quiet(link: ParkingLink, now: number): boolean {
    const peer = link.peer;
    return peer !== undefined && peer.pendingApi === 0 && peer.overSince === 0 && now - peer.lastSeen >= this.quietMs && now - link.sentAt >= this.quietMs;
  }
}

/** Whether `ws` holds nothing in flight on `socket`: the only state a parked socket can drop. */
function idle(ws: WsInternals, socket: Socket, shape: WsShape): boolean {
  const r = ws._receiver;
  const s = ws._sender;
  if (ws.readyState !== WebSocket.OPEN || ws._paused || ws._closeTimer !== null || ws._closeFrameReceived || ws._closeFrameSent) return false;
  if (r?._state !== 0 || r._bufferedBytes !== 0 || r._fragmented !== 0 || r._fragments.length !== 0 || r._loop || r._errored) return false;
  if (r._writableState.length !== 0 || r._writableState.ending) return false;
  if (s?._state !== 0 || s._queue.length !== 0 || s._bufferedBytes !== 0) return false;
  if (socket.destroyed || !socket.readable || !socket.writable || socket.writableLength !== 0 || socket.writableCorked !== 0) return false;
  if (socket.readableFlowing !== true || socket.readableLength !== 0) return false;
  if ((socket as unknown as Record<symbol, unknown>)[shape.kWebSocket] !== ws) return false;
  // Every listener of `ws` still there (a close in progress removes some), and no one else reading.
  for (const [event, listener] of shape.listeners) if (!socket.listeners(event).includes(listener)) return false;
  return socket.listenerCount('data') === 1;
}
