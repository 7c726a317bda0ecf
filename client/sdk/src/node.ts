/**
 * The SDK's Node entry: the core, with `ws` as the WebSocket (it reports connection errors with their
 * cause and needs no flags), its opening handshake done without node:http (node-websocket.ts says
 * why). Everything else is the same as `index.ts`.
 */
import { connect as coreConnect, type ConnectOptions, type HostadmClient } from './index.ts';
import { NodeWebSocket } from './node-websocket.ts';

export * from './index.ts';
export { NodeWebSocket };

export function connect(options: ConnectOptions): Promise<HostadmClient> {
  return coreConnect({ webSocket: NodeWebSocket, ...options });
}
