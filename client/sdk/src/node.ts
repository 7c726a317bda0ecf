/**
 * The SDK's Node entry: the core, with the `ws` package as the WebSocket (it reports connection
 * errors with their cause and needs no flags). Everything else is the same as `index.ts`.
 */
import WebSocket from 'ws';
import { connect as coreConnect, type ConnectOptions, type HostadmClient } from './index.ts';
import type { WebSocketConstructor } from './websocket.ts';

export * from './index.ts';

/** `ws` as the SDK's WebSocket constructor. */
export const NodeWebSocket = WebSocket as unknown as WebSocketConstructor;

export function connect(options: ConnectOptions): Promise<HostadmClient> {
  return coreConnect({ webSocket: NodeWebSocket, ...options });
}
