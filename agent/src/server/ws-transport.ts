/**
 * The WebSocket transport: one request envelope per frame, replies matched by `id`, requests on a
 * connection handled concurrently. Sign-in requests are ordered: a request sent after an auth
 * request waits for it, so a pipelined client never races its own sign-in.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { jsonNestingExceeds } from '@hostadm/shared/protocol/json-depth.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { Heartbeat } from '@hostadm/shared/net/heartbeat.ts';
import type { Connection } from './context.ts';
import type { Pipeline } from './pipeline.ts';
import { isAuthOperation } from './auth-ops.ts';
import { inFlightRefusal } from './in-flight.ts';
import { tlsClientKeyOf } from './tls-client-key.ts';

/** Close codes we send (RFC 6455 range plus application codes). */
export const CLOSE = { normal: 1000, policy: 1008, tooBig: 1009, tryAgainLater: 1013, idle: 4000, unauthenticated: 4001 } as const;

/**
 * How long requests that arrived before a client's close frame may take to be answered before the
 * agent returns the close. The original's own test client sends its sign-in, a request and its close
 * frame at once and prints the replies; answering the close at once would leave it with nothing.
 */
export const PEER_CLOSE_GRACE_MS = 5_000;

const HEARTBEAT_MS = 30_000;

export class WebSocketTransport {
  private readonly wss: WebSocketServer;
  private readonly pipeline: Pipeline;
  /** Open sockets per remote address, counted from the upgrade request to the socket's close. */
  private readonly perAddress = new Map<string, number>();

  constructor(pipeline: Pipeline) {
    this.pipeline = pipeline;
    // maxPayload makes ws refuse an oversized frame from its header, before buffering the payload.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: pipeline.services.config.maxFrameBytes });
    this.wss.on('connection', (ws: WebSocket, req: IncomingMessage) => this.accept(ws, req));
  }

  /** Called from the HTTP server's `upgrade` event. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const address = req.socket.remoteAddress ?? '';
    const { blacklist, config } = this.pipeline.services;
    const open = this.perAddress.get(address) ?? 0;
    if (blacklist.isBlocked(address) || open >= config.maxConnectionsPerAddress) {
      socket.end('HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.perAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req));
  }

  private accept(ws: WebSocket, req: IncomingMessage): void {
    const { services } = this.pipeline;
    const { config, logger } = services;
    const connection: Connection = {
      id: randomUUID(),
      transport: 'websocket',
      address: req.socket.remoteAddress ?? '',
      tlsClientKey: tlsClientKeyOf(req.socket),
      token: null,
      push: (envelope) => {
        if (ws.readyState !== ws.OPEN) return;
        // A peer that does not read would make us buffer without limit: past the cap it is closed.
        if (ws.bufferedAmount > config.maxSendBufferBytes) {
          logger.warn({ connection: connection.id, address: connection.address, buffered: ws.bufferedAmount }, 'peer is not reading; closing');
          ws.close(CLOSE.tryAgainLater, 'send buffer full: the client is not reading');
          // The close frame waits behind the unread data; do not wait for the peer to read it.
          setTimeout(() => ws.terminate(), 1000).unref();
          return;
        }
        ws.send(JSON.stringify(envelope));
      },
      close: (code, reason) => ws.close(code, reason),
    };
    // Dead peers (no pong or frame within a period) are dropped so their sessions' sockets do not linger.
    const heartbeat = new Heartbeat(ws, HEARTBEAT_MS);
    ws.on('pong', () => heartbeat.seen());
    let inFlight = 0;
    let drained: (() => void) | null = null;
    answerBeforeClosing(ws, () => (inFlight === 0 ? null : new Promise<void>((resolve) => (drained = resolve))));
    logger.debug({ connection: connection.id, address: connection.address }, 'websocket connected');

    let authBarrier: Promise<unknown> = Promise.resolve();
    let idleTimer = setTimeout(() => ws.close(CLOSE.idle, 'idle timeout'), config.idleCloseSeconds * 1000);
    const unauthTimer = setTimeout(() => {
      if (!this.pipeline.currentSession(connection)) ws.close(CLOSE.unauthenticated, 'not authenticated');
    }, config.unauthenticatedCloseSeconds * 1000);

    ws.on('message', (data: RawData) => {
      heartbeat.seen();
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => ws.close(CLOSE.idle, 'idle timeout'), config.idleCloseSeconds * 1000);
      const frame = parseJson(rawToString(data));
      if (inFlight >= config.maxInFlightPerConnection) {
        connection.push?.(inFlightRefusal(frame, config.maxInFlightPerConnection));
        return;
      }
      inFlight++;
      const isAuth = peekIsAuth(frame);
      const run = authBarrier.then(() => this.pipeline.handle(connection, frame));
      if (isAuth) authBarrier = run.catch(() => undefined);
      run
        .then((reply) => {
          connection.push?.(reply);
          if (connection.closeAfterReply) ws.close(connection.closeAfterReply.code, connection.closeAfterReply.reason);
        })
        .catch((err: unknown) => logger.error({ err }, 'unexpected failure handling a frame'))
        .finally(() => {
          if (--inFlight === 0) drained?.();
        });
    });

    ws.on('close', () => {
      heartbeat.stop();
      clearTimeout(idleTimer);
      clearTimeout(unauthTimer);
      services.events.drop(connection.id);
      services.sslChallenges.forget(connection.id);
      logger.debug({ connection: connection.id }, 'websocket closed');
    });
    ws.on('error', (err) => logger.warn({ err, connection: connection.id }, 'websocket error'));
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.close(1001, 'agent shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

function rawToString(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

/** The parsed frame, or the raw text when it is not JSON (the pipeline answers that with 400). */
function parseJson(text: string): unknown {
  // Too deep to parse here: the pipeline refuses the raw text with a 400 saying so.
  if (jsonNestingExceeds(text, LIMITS.maxJsonDepth)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * When the peer's close frame arrives, `ws` answers it at once, and replies to the requests that
 * came before it could no longer be sent. Its answer goes through the socket's own `close()`, so
 * that call is held here until `pending()` (the requests still being handled) settles, at most
 * PEER_CLOSE_GRACE_MS. Closes the agent starts itself are not delayed.
 */
function answerBeforeClosing(ws: WebSocket, pending: () => Promise<void> | null): void {
  const closeNow = ws.close.bind(ws);
  let holding = false;
  ws.close = (code?: number, reason?: string | Buffer) => {
    const work = peerSentClose(ws) && !holding ? pending() : null;
    if (!work) return closeNow(code, reason);
    holding = true;
    const grace = new Promise<void>((resolve) => setTimeout(resolve, PEER_CLOSE_GRACE_MS).unref());
    void Promise.race([work, grace]).then(() => closeNow(code, reason));
  };
}

/** Whether the peer's close frame has been received (`ws` keeps this in a field it does not type). */
function peerSentClose(ws: WebSocket): boolean {
  return (ws as unknown as { _closeFrameReceived?: boolean })._closeFrameReceived === true;
}

function peekIsAuth(frame: unknown): boolean {
  return (
    !!frame &&
    typeof frame === 'object' &&
    'namespace' in frame &&
    frame.namespace === 'rpc' &&
    'name' in frame &&
    typeof frame.name === 'string' &&
    isAuthOperation(frame.name)
  );
}
