/**
 * Connections to hosts through the bridge that served this page: one SDK client per host, key sign-in
 * over the end-to-end channel, the host key pinned on first use (after the user compared the
 * fingerprint) and refused loudly when it changes. The SDK reconnects by itself; the connection state
 * it reports is what the pages show (and what marks their data as no longer current).
 */
import {
  bridgeTransport,
  connect,
  HostadmRequestError,
  listBridgeHosts,
  relayUrl,
  type BridgeHost,
  type HostadmClient,
  type WebCryptoClientKey,
} from '@hostadm/client/sdk/src/browser.ts';
import { loadPin, pinId, savePin, type StoredKey } from './keys.ts';
import { Store, toast } from './store.ts';

export type LinkState = 'connecting' | 'open' | 'reconnecting' | 'closed' | 'refused';

export interface HostLink {
  nickname: string;
  state: LinkState;
  client?: HostadmClient;
  error?: string;
  /** Classes `query` grants, `admin/users` → `read/write`. */
  grants?: Record<string, string>;
  fingerprint?: string;
}

/** The bridge: the relay URL of this page's origin, or `?bridge=` (a test hub on workerd). */
export function defaultBridgeUrl(): string {
  const given = new URLSearchParams(location.search).get('bridge');
  return relayUrl(given ?? `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`);
}

export const bridgeUrl = new Store<string>(defaultBridgeUrl());

/**
 * Served by an agent rather than a bridge: the page then talks to that one host directly (its own
 * WebSocket, TLS protecting it on the way), with no channel, enrollment or host list. A bridge answers
 * a plain GET of /relay with 426 (upgrade required); an agent does not serve /relay.
 */
export const direct = new Store<boolean | undefined>(undefined);
export const DIRECT_HOST = 'this-host';
const agentUrl = () => `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`;

export async function detectMode(): Promise<boolean> {
  let isDirect = false;
  if (new URLSearchParams(location.search).has('bridge')) {
    direct.set(false);
    return false;
  }
  try {
    isDirect = (await fetch(new URL('relay', location.href), { cache: 'no-store' })).status !== 426;
  } catch {
    isDirect = false;
  }
  direct.set(isDirect);
  return isDirect;
}
export const links = new Store<Record<string, HostLink>>({});
/** Asks the user to compare a first-seen host key's fingerprint; resolves with the answer. */
export const hostKeyQuestion = new Store<{ nickname: string; fingerprint: string; answer: (ok: boolean) => void } | null>(null);

/** The SDK's form of the key: the two CryptoKeys and the public half. */
function sdkKey(key: StoredKey): { cryptoKeys: WebCryptoClientKey; publicPem: string } {
  return { cryptoKeys: key.cryptoKeys, publicPem: key.publicPem };
}

function setLink(nickname: string, change: Partial<HostLink>): void {
  links.update((all) => ({ ...all, [nickname]: { ...(all[nickname] ?? { nickname, state: 'connecting' }), ...change } }));
}

function askHostKey(nickname: string, fingerprint: string): Promise<boolean> {
  return new Promise((resolve) => hostKeyQuestion.set({ nickname, fingerprint, answer: resolve }));
}

export async function listHosts(key: StoredKey, joinToken?: string): Promise<BridgeHost[]> {
  if (direct.value)
    return [{ id: DIRECT_HOST, nickname: DIRECT_HOST, hostname: location.hostname, hostKeyFingerprint: null, access: 'key', onlineSince: null }];
  return listBridgeHosts({
    bridgeUrl: bridgeUrl.value,
    key: sdkKey(key),
    clientHostname: 'hostadm-console',
    ...(joinToken ? { joinToken, nickname: 'browser' } : {}),
  });
}

/** The channel to `nickname`, pinned or asking for the fingerprint the first time. */
function transportFor(key: StoredKey, nickname: string, pinned: string | undefined) {
  const relay = bridgeUrl.value;
  return bridgeTransport({
    bridgeUrl: relay,
    host: { nickname },
    key: sdkKey(key),
    clientHostname: 'hostadm-console',
    ...(pinned ? { pinnedHostKey: pinned } : {}),
    onHostKey: async (fingerprint, hostKey) => {
      if (!(await askHostKey(nickname, fingerprint))) return false;
      await savePin({ id: pinId(relay, nickname), hostKey, fingerprint, pinnedAt: new Date().toISOString() });
      setLink(nickname, { fingerprint });
      return true;
    },
  });
}

/** Signs in with a password once (the host does not know the key yet) and registers the key there. */
export async function registerOnHost(key: StoredKey, nickname: string, username: string, password: string): Promise<void> {
  const pin = direct.value ? undefined : await loadPin(pinId(bridgeUrl.value, nickname));
  const client = await connect({
    ...(direct.value ? { url: agentUrl() } : { transport: transportFor(key, nickname, pin?.hostKey) }),
    auth: { username, password },
    reconnect: false,
  });
  try {
    await client.registerKey({ ...sdkKey(key), certPem: key.publicPem, nickname: 'hostadm console' });
  } catch (err) {
    // 409: already registered for this user; the key works either way.
    if (!(err instanceof HostadmRequestError && err.code === 409)) throw err;
  } finally {
    await client.close();
  }
}

/** The signed-in client for `nickname` (key sign-in), connecting on first use. */
export async function openHost(key: StoredKey, nickname: string): Promise<HostLink> {
  const existing = links.value[nickname];
  if (existing?.client && existing.state !== 'closed' && existing.state !== 'refused') return existing;
  setLink(nickname, { state: 'connecting', error: undefined, client: undefined });
  const pin = direct.value ? undefined : await loadPin(pinId(bridgeUrl.value, nickname));
  try {
    const client = await connect({
      // Directly at an agent the key signs in on the host's own WebSocket (auth_ssl); through a bridge the channel's key proof does.
      ...(direct.value ? { url: agentUrl(), auth: { key: sdkKey(key) } } : { transport: transportFor(key, nickname, pin?.hostKey) }),
      reconnect: { initialDelayMs: 250, maxDelayMs: 5000 },
      validateArgs: true,
    });
    client.on('disconnect', () => setLink(nickname, { state: 'reconnecting' }));
    client.on('reconnect', () => setLink(nickname, { state: 'open', error: undefined }));
    client.on('close', ({ error }) => {
      const reason = error instanceof Error ? error.message : 'closed';
      const refused = /host-key-mismatch/.test(reason);
      setLink(nickname, { state: refused ? 'refused' : 'closed', error: reason, client: undefined });
      if (refused) toast('error', `REFUSED: ${nickname} now presents a different host key than the one pinned. Possible interception.`);
    });
    const grants = (await client.query()) as Record<string, string>;
    setLink(nickname, { state: 'open', client, grants, ...(pin ? { fingerprint: pin.fingerprint } : {}) });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const refused = /host-key-mismatch/.test(message);
    setLink(nickname, { state: refused ? 'refused' : 'closed', error: message });
    if (refused) toast('error', `REFUSED: ${nickname} presented a different host key than the one pinned. Possible interception.`);
  }
  return links.value[nickname]!;
}

export async function closeHost(nickname: string): Promise<void> {
  const link = links.value[nickname];
  setLink(nickname, { state: 'closed', client: undefined });
  await link?.client?.close();
}
