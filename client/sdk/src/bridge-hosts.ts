/**
 * Which host behind a bridge a client means: the selector, matching it against the bridge's
 * announcements, and the relay URL. Kept apart from the transport's connection logic.
 */
import { ConnectionError } from './errors.ts';

/** Which announced host to open the channel to; every given field must match. */
export interface BridgeHostSelector {
  /** The bridge connection id (`agent-<uuid>`; new for every agent connection). */
  id?: string;
  nickname?: string;
  hostname?: string;
  /** `SHA256:...` host key fingerprint. */
  fingerprint?: string;
  /** Matches the nickname or the hostname. */
  name?: string;
}

export interface AnnouncedPeer {
  id: string;
  kind?: string;
  nickname?: string;
  hostname?: string;
  host_key_fingerprint?: string | null;
}

/** `ws://h:p` → `ws://h:p/relay`; an explicit path is kept. */
export function relayUrl(bridgeUrl: string): string {
  if (!/^wss?:\/\//i.test(bridgeUrl)) throw new ConnectionError(`not a bridge WebSocket URL: ${bridgeUrl} (expected ws://host:port or wss://host:port)`);
  const m = /^(wss?:\/\/[^/?#]+)(\/?)([^?#]*)(.*)$/i.exec(bridgeUrl);
  if (m && m[3] === '') return `${m[1]}/relay${m[4] ?? ''}`;
  return bridgeUrl;
}

export function describeHost(host: BridgeHostSelector): string {
  return host.id ?? host.name ?? host.nickname ?? host.hostname ?? host.fingerprint ?? '(any host)';
}

export function matches(host: BridgeHostSelector, p: AnnouncedPeer): boolean {
  if (host.id !== undefined && p.id !== host.id) return false;
  if (host.nickname !== undefined && p.nickname !== host.nickname) return false;
  if (host.hostname !== undefined && p.hostname !== host.hostname) return false;
  if (host.fingerprint !== undefined && p.host_key_fingerprint !== host.fingerprint) return false;
  if (host.name !== undefined && p.nickname !== host.name && p.hostname !== host.name) return false;
  return true;
}

export function peerLabel(p: AnnouncedPeer): string {
  const name = p.nickname || p.hostname || p.id;
  return `${name}${p.host_key_fingerprint ? ` (${p.host_key_fingerprint})` : ''}`;
}

