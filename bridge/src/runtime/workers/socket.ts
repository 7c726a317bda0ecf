/**
 * @module The PeerSocket port over a hibernatable Durable Object WebSocket. What Workers lack,
 * and what the relay does about it (docs/bridge-protocol.md §2.9):
 * - no `bufferedAmount`: the runtime queues and applies back-pressure itself, so the relay's
 *   queue-full drops and the stuck-queue close (1013) never trigger here (always 0);
 * - no `ping`: workerd answers protocol pings from peers itself (without waking the object), so
 *   peers detect a dead bridge with their own heartbeats, and the relay's silent-peer close is off.
 */
import type { PeerSocket } from '../../relay/ports.ts';

const decoder = new TextDecoder();

export class DurableObjectPeerSocket implements PeerSocket {
  readonly ws: WebSocket;
  readonly bufferedAmount = 0;

  /** Called when the relay closes the socket, before the close completes (the hub drops its saved state). */
  private readonly onRelayClose: (() => void) | null;

  constructor(ws: WebSocket, onRelayClose?: () => void) {
    this.ws = ws;
    this.onRelayClose = onRelayClose ?? null;
  }

  /** A text frame (frames arrive here as strings; text bytes are decoded), or `binary` bytes as they are. */
  send(data: string | Uint8Array, binary = false): void {
    try {
      this.ws.send(typeof data === 'string' ? data : binary ? data : decoder.decode(data));
    } catch {
      // Closing or closed: the close handler tells the relay.
    }
  }

  close(code: number, reason: string): void {
    this.onRelayClose?.();
    try {
      this.ws.close(code, reason);
    } catch {
      // Already closed.
    }
  }
}
