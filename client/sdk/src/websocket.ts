/**
 * The direct transport: one WebSocket to an agent. Works with any WHATWG-style WebSocket
 * constructor: the browser's, a Worker's, Node's global one, or the `ws` package (the Node entry
 * passes `ws`).
 */
import { ConnectionError } from './errors.ts';
import type { CloseInfo, Transport, TransportFactory } from './transport.ts';

/** The part of a WebSocket the transport uses (browsers, Workers, undici and `ws` all have it). */
export interface WebSocketLike {
  readonly readyState: number;
  /** Browsers deliver binary messages as Blobs unless this is `arraybuffer` (the bridge session sets it). */
  binaryType?: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: (event: unknown) => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: 'error', listener: (event: { message?: string; error?: unknown }) => void): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

const OPEN = 1;

/** The global WebSocket (browsers, Workers, Node 22+), when there is one. */
export function globalWebSocket(): WebSocketConstructor | undefined {
  const ctor = (globalThis as { WebSocket?: unknown }).WebSocket;
  return typeof ctor === 'function' ? (ctor as WebSocketConstructor) : undefined;
}

export interface WebSocketTransportOptions {
  /** `ws://` or `wss://` address of the agent. */
  url: string;
  /** The WebSocket constructor; default `globalThis.WebSocket`. */
  webSocket?: WebSocketConstructor;
}

export function webSocketTransport(options: WebSocketTransportOptions): TransportFactory {
  const url = options.url;
  if (!/^wss?:\/\//i.test(url)) throw new ConnectionError(`not a WebSocket URL: ${url} (expected ws://host:port or wss://host:port)`);
  return {
    description: url,
    open(handlers, { signal, timeoutMs }) {
      const Ctor = options.webSocket ?? globalWebSocket();
      if (!Ctor) {
        return Promise.reject(new ConnectionError("no WebSocket implementation: pass `webSocket` (in Node: the `ws` package, or use the SDK's Node entry)"));
      }
      return new Promise<Transport>((resolve, reject) => {
        let settled = false;
        let lastError: string | undefined;
        let socket: WebSocketLike;
        try {
          socket = new Ctor(url);
        } catch (cause) {
          reject(new ConnectionError(`cannot connect to ${url}: ${messageOf(cause)}`, { cause }));
          return;
        }
        const fail = (err: ConnectionError) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          try {
            socket.close();
          } catch {
            // already closing
          }
          reject(err);
        };
        const timer = setTimeout(() => fail(new ConnectionError(`cannot connect to ${url}: no answer within ${timeoutMs} ms`)), timeoutMs);
        const onAbort = () => fail(new ConnectionError(`connecting to ${url} was cancelled`, { cause: signal?.reason }));
        signal?.addEventListener('abort', onAbort, { once: true });

        let closed = false;
        const transport: Transport = {
          send: (text) => {
            if (socket.readyState !== OPEN) throw new ConnectionError(`the connection to ${url} is not open`);
            socket.send(text);
          },
          close: (code, reason) => socket.close(code ?? 1000, reason),
        };
        socket.addEventListener('open', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(transport);
        });
        socket.addEventListener('message', (event) => {
          if (typeof event.data === 'string') handlers.onMessage(event.data);
          else if (event.data instanceof ArrayBuffer) handlers.onMessage(new TextDecoder().decode(event.data));
          else if (ArrayBuffer.isView(event.data)) handlers.onMessage(new TextDecoder().decode(event.data as Uint8Array));
        });
        socket.addEventListener('error', (event) => {
          lastError = event.message || (event.error instanceof Error ? event.error.message : undefined) || 'WebSocket error';
        });
        socket.addEventListener('close', (event) => {
          if (!settled) {
            fail(new ConnectionError(`cannot connect to ${url}: ${lastError ?? `closed with code ${event.code}`}`, { closeCode: event.code }));
            return;
          }
          if (closed) return;
          closed = true;
          const info: CloseInfo = { code: event.code, reason: event.reason };
          if (lastError !== undefined) info.error = lastError;
          handlers.onClose(info);
        });
      });
    },
  };
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
