/**
 * The test as the bridge: a WebSocket server of its own that the agent's real BridgeLink dials and signs
 * in to, after which the test relays (or forges, drops, replays) every client frame itself.
 */
import type { TestContext } from 'node:test';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { BridgeLink } from '@hostadm/agent/bridge-link/link.ts';
import type { ChannelVersion } from '@hostadm/shared/crypto/index.ts';
import type { TestAgent } from './agent.ts';

export interface Envelope {
  id: string;
  name: string;
  namespace: string;
  args: unknown;
}

export type Relayed = { to: string; text: string } | { to: string; bytes: Buffer };

/** The bridge's side: every relay frame the agent sent, by destination, and a way to send one. */
export interface HostileBridge {
  frames: Relayed[];
  /** Resolves with the next frame for `to` that matches (from `since` on in `frames`). */
  next(to: string, match?: (f: Relayed) => boolean, since?: number): Promise<Relayed>;
  sendText(to: string, body: string): void;
  sendBinary(frame: Uint8Array): void;
}

export async function hostileBridge(t: TestContext, agent: TestAgent, options: { channelVersions?: readonly ChannelVersion[] } = {}): Promise<HostileBridge> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const ws of server.clients) ws.terminate();
        server.close(() => resolve());
      }),
  );
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const frames: Relayed[] = [];
  const waiters: Array<() => void> = [];
  let socket: WebSocket | null = null;
  const ready = new Promise<void>((resolve) => {
    server.on('connection', (ws: WebSocket) => {
      socket = ws;
      ws.on('message', (data: RawData, isBinary: boolean) => {
        const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
        const nl = bytes.indexOf(0x0a);
        if (isBinary) frames.push({ to: bytes.subarray(0, nl).toString(), bytes: bytes.subarray(nl + 1) });
        else if (bytes[0] !== 0x7b) frames.push({ to: bytes.subarray(0, nl).toString(), text: bytes.subarray(nl + 1).toString() });
        else {
          const env = JSON.parse(bytes.toString()) as Envelope;
          if (env.id === 'agent-auth-1')
            ws.send(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { test_string: 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g' } }));
          if (env.id === 'agent-auth-2') ws.send(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: {} }));
        }
        for (const wake of waiters.splice(0)) wake();
      });
      ws.send(JSON.stringify({ id: 'bridge_request_ident', name: 'identify', namespace: 'rpc', args: {} }));
    });
    const link = new BridgeLink({
      url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`,
      pipeline: agent.pipeline,
      dataDir: agent.dataDir,
      ...(options.channelVersions ? { channelVersions: options.channelVersions } : {}),
    });
    link.start();
    t.after(() => link.stop());
    void link.ready().then(resolve);
  });
  await ready;
  return {
    frames,
    async next(to, match = () => true, since = 0) {
      for (;;) {
        const found = frames.slice(since).find((f) => f.to === to && match(f));
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    sendText: (to, body) => socket!.send(`${to}\n${body}`),
    sendBinary: (frame) => socket!.send(frame, { binary: true }),
  };
}
