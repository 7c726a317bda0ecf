/**
 * The hosts a client key may reach through a bridge, as the bridge's directory (docs/bridge-protocol.md
 * §2.10) announces them: `hostadm hosts`, and the SDK's `listBridgeHosts`.
 */
import { BridgeSession, type BridgeSessionOptions } from './bridge-session.ts';
import { DIRECTORY_ROOM } from './bridge-hosts.ts';

/** A host as `listBridgeHosts` reports it. */
export interface BridgeHost {
  id: string;
  nickname: string;
  hostname: string;
  hostKeyFingerprint: string | null;
  /** `key`: this key is registered there; `password`: reachable for a password sign-in only. */
  access: 'key' | 'password';
  onlineSince: string | null;
}

/**
 * The hosts a key may reach through a bridge now (and, with `reach`, those open to a password sign-in
 * under those names), from the bridge's directory. Enrolls the key first when given a join token.
 */
export async function listBridgeHosts(options: BridgeSessionOptions & { timeoutMs?: number }): Promise<BridgeHost[]> {
  const session = await BridgeSession.open({ ...options, room: DIRECTORY_ROOM }, { timeoutMs: options.timeoutMs ?? 10_000 });
  try {
    return session.peers
      .filter((p) => p.kind === undefined || p.kind === 'agent')
      .map((p) => ({
        id: p.id,
        nickname: p.nickname ?? '',
        hostname: p.hostname ?? '',
        hostKeyFingerprint: p.host_key_fingerprint ?? null,
        access: p.access === 'password' ? 'password' : 'key',
        onlineSince: p.online_since ?? null,
      }));
  } finally {
    session.close({ code: 1000, reason: 'listed' });
  }
}
