/**
 * The SDK's bridge transport as a caller that already pinned `agent`'s host key makes it: the host by
 * fingerprint, the client key, the ticket store (resumption tests read and rewrite it).
 */
import { bridgeTransport, NodeWebSocket, type TicketStore, type TransportFactory } from '../../client/sdk/src/node.ts';
import type { TestAgent } from './agent.ts';
import { keyPems, type TestKey } from './keys.ts';

export function pinnedTransport(bridgeUrl: string, agent: TestAgent, key: TestKey, tickets: TicketStore, extra: { joinToken?: string } = {}): TransportFactory {
  return bridgeTransport({
    bridgeUrl,
    host: { fingerprint: agent.services.hostKey.fingerprint },
    key: keyPems(key),
    pinnedHostKey: agent.services.hostKey.publicRaw,
    tickets,
    webSocket: NodeWebSocket,
    ...extra,
  });
}
