/**
 * Which host behind a bridge a client means: the selector, matching it against the bridge's
 * announcements, and the relay URL. Kept apart from the transport's connection logic.
 */
import { HandshakeError } from '@hostadm/shared/crypto/handshake.ts';
import { ConnectionError } from './errors.ts';

/** Which announced host to open the channel to; every given field must match. */
export interface BridgeHostSelector {
  /** The bridge connection id (`agent-<uuid>`; new for every agent connection). */
  id?: string;
  nickname?: string;
  hostname?: string;
  /** `SHA256:...` host key fingerprint. */
  fingerprint?: string;
  /** Matches the nickname: the name the bridge bound to the host's key at enrollment (a host's
   *  self-reported hostname is not trusted for choosing; select it with `hostname` explicitly). */
  name?: string;
}

export interface AnnouncedPeer {
  id: string;
  kind?: string;
  nickname?: string;
  hostname?: string;
  host_key_fingerprint?: string | null;
  /** `key`: the host lists this client's key; `password`: reachable for a password sign-in only. */
  access?: 'key' | 'password';
  /** When the host's connection to the bridge was made (ISO 8601). */
  online_since?: string;
  /** Directory announcements: the room where the host is reached (`host/<fp>`; '' the shared room). */
  room?: string;
}

/**
 * The relay endpoint of a bridge given by its base URL or its relay URL, the rule the agent follows
 * too: `ws://h:p` → `ws://h:p/relay`, `ws://h:p/prefix` → `ws://h:p/prefix/relay`, `…/relay` kept;
 * with a room (docs/bridge-protocol.md §2.10), `…/relay/<room>` (`host/<fp>`, `directory`).
 */
export function relayUrl(bridgeUrl: string, room = ''): string {
  if (!/^wss?:\/\//i.test(bridgeUrl)) throw new ConnectionError(`not a bridge WebSocket URL: ${bridgeUrl} (expected ws://host:port or wss://host:port)`);
  const m = /^(wss?:\/\/[^/?#]+)([^?#]*)(.*)$/i.exec(bridgeUrl);
  if (!m) return bridgeUrl;
  const path = (m[2] ?? '').replace(/\/+$/, '');
  const relay = path.endsWith('/relay') ? path : `${path}/relay`;
  return `${m[1]}${relay}${room ? `/${room}` : ''}${m[3] ?? ''}`;
}

/** The directory room: where a client learns which hosts it may reach, and the room of each. */
export const DIRECTORY_ROOM = 'directory';

/** The room of the host whose key has this fingerprint (`SHA256:<fp>` → `host/<fp>`). */
export function hostRoom(fingerprint: string): string {
  return `host/${fingerprint.replace(/^SHA256:/, '')}`;
}

export function describeHost(host: BridgeHostSelector): string {
  return host.id ?? host.name ?? host.nickname ?? host.hostname ?? host.fingerprint ?? '(any host)';
}

export function matches(host: BridgeHostSelector, p: AnnouncedPeer): boolean {
  if (host.id !== undefined && p.id !== host.id) return false;
  if (host.nickname !== undefined && p.nickname !== host.nickname) return false;
  if (host.hostname !== undefined && p.hostname !== host.hostname) return false;
  if (host.fingerprint !== undefined && p.host_key_fingerprint !== host.fingerprint) return false;
  if (host.name !== undefined && p.nickname !== host.name) return false;
  return true;
}

export function peerLabel(p: AnnouncedPeer): string {
  const name = p.nickname || p.hostname || p.id;
  return `${name}${p.host_key_fingerprint ? ` (${p.host_key_fingerprint})` : ''}`;
}

/**
 * The announced peer to open the channel to, or undefined to wait for more announcements. With a
 * pinned host key (its fingerprint) only the peer presenting that key qualifies, whatever the names
 * say; without one (first use) the selector must match exactly one peer, else the choice is the user's.
 */
export function chooseHost(host: BridgeHostSelector, peers: readonly AnnouncedPeer[], pinnedFingerprint?: string): AnnouncedPeer | undefined {
  const named = peers.filter((p) => matches(host, p));
  if (pinnedFingerprint !== undefined) {
    const pinned = named.find((p) => p.host_key_fingerprint === pinnedFingerprint);
    // The host answers with another key than the pinned one: refuse loudly (possible interception),
    // never wait quietly until a timeout and never connect to it.
    const other = named.find((p) => p.host_key_fingerprint);
    if (!pinned && other) {
      throw new HandshakeError(
        'host-key-mismatch',
        `${describeHost(host)} is announced with host key ${other.host_key_fingerprint}, not the pinned ${pinnedFingerprint}`,
        {
          fingerprints: { pinned: pinnedFingerprint, presented: other.host_key_fingerprint! },
        },
      );
    }
    return pinned;
  }
  if (named.length > 1) {
    throw new ConnectionError(
      `${named.length} hosts answer to ${describeHost(host)}: ${named.map(peerLabel).join(', ')}; choose one by its host key (SHA256:...) after checking it on the host`,
    );
  }
  return named[0];
}

/** "a (SHA256:…), b (SHA256:…)" or "none". */
export function hostList(peers: readonly AnnouncedPeer[]): string {
  return peers.length ? peers.map(peerLabel).join(', ') : 'none';
}
