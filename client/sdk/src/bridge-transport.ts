/**
 * The bridge transport (docs/bridge-protocol.md §2–§3): a bridge session (bridge-session.ts: sign-in
 * with the client's RSA key, the hosts it may reach), then an hsc1 channel to one host. The connection it
 * hands back carries plain envelope text: `send` seals and relays, received frames from the host are
 * opened in order. The channel's key proof (C2) signs the client in on the host, so the transport
 * resolves with the host's `sessionToken` and the client resumes that session; a host that does not
 * know the key yet answers C2 with an invitation to sign in with a password on the channel instead
 * (`keyNotRegistered`), after which the key can be registered there (`registerKey`).
 *
 * Runtime-neutral (WebCrypto only); the WebSocket constructor is passed in or taken from globalThis.
 */
import { ChannelError, parseChannelClosedNotice, HandshakeError, hostKeyFingerprint, startClientHandshake, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { ConnectionError } from './errors.ts';
import { textToBase64 } from './key-auth.ts';
import type { CloseInfo, Transport, TransportFactory, TransportHandlers } from './transport.ts';
import { chooseHost, describeHost, relayUrl, type BridgeHostSelector } from './bridge-hosts.ts';
import { BridgeSession, clientKeyIds, errorText, hostList, messageOf, refusal } from './bridge-session.ts';
import type { WebSocketConstructor } from './websocket.ts';

export type { BridgeHostSelector } from './bridge-hosts.ts';
export { describeHost, relayUrl } from './bridge-hosts.ts';

export interface BridgeTransportOptions {
  /** `ws(s)://bridge:port` (the `/relay` path is added when missing). */
  bridgeUrl: string;
  host: BridgeHostSelector;
  /** The client's RSA key: PKCS#8 (or PKCS#1) private key PEM and its certificate or SPKI public key PEM. */
  key: { privatePem: string; certPem?: string; publicPem?: string };
  /** The host key pinned for this host (base64 raw Ed25519 public key). */
  pinnedHostKey?: string;
  /**
   * First use (nothing pinned): called with the presented fingerprint and key; true accepts it (the
   * caller should pin `hostKeyB64`). Without a pin and without this callback the connection is refused.
   * An accepted key stays pinned for this factory's later reconnects.
   */
  onHostKey?: (fingerprint: string, hostKeyB64: string) => boolean | Promise<boolean>;
  /** A client join token: enroll the key at the bridge before the first sign-in (once per factory). */
  joinToken?: string;
  /** Nickname to enroll with. */
  nickname?: string;
  /** Called once the bridge has enrolled the key with the join token (a caller may remember it). */
  onEnrolled?: () => void;
  /** The hostname reported to the bridge's identify. Default `hostadm-sdk`. */
  clientHostname?: string;
  webSocket?: WebSocketConstructor;
}

interface Envelope {
  id?: string;
  name?: string;
  args?: unknown;
}

/** A C2 reply saying the key is proven but unknown to the host (docs/bridge-protocol.md §3 step 4). */
function isSignInInvitation(env: Envelope): boolean {
  return env.name === 'response' && typeof env.args === 'object' && env.args !== null && (env.args as { signed_in?: unknown }).signed_in === false;
}

export function bridgeTransport(options: BridgeTransportOptions): TransportFactory {
  const url = relayUrl(options.bridgeUrl);
  const hostLabel = describeHost(options.host);
  const description = `bridge ${url} host ${hostLabel}`;
  // A host named by nickname may not know this key yet: ask the bridge to reach it for a password sign-in.
  const reachName = options.host.name ?? options.host.nickname;
  let pinned = options.pinnedHostKey;
  let enrolled = options.joinToken === undefined;

  return {
    description,
    async open(handlers: TransportHandlers, { signal, timeoutMs }) {
      const deadline = Date.now() + timeoutMs;
      const ids = await clientKeyIds(options.key);
      const session = await BridgeSession.open(
        {
          bridgeUrl: options.bridgeUrl,
          key: options.key,
          ...(enrolled ? {} : { joinToken: options.joinToken }),
          ...(options.nickname ? { nickname: options.nickname } : {}),
          onEnrolled: () => {
            enrolled = true;
            options.onEnrolled?.();
          },
          ...(reachName ? { reach: [reachName] } : {}),
          ...(options.clientHostname ? { clientHostname: options.clientHostname } : {}),
          ...(options.webSocket ? { webSocket: options.webSocket } : {}),
        },
        { timeoutMs, ...(signal ? { signal } : {}) },
      );
      try {
        return await openChannel(session, handlers, { signal, deadline, ids });
      } catch (err) {
        session.close({ code: 4000, reason: messageOf(err) });
        if (err instanceof ConnectionError) throw err;
        if (err instanceof HandshakeError) {
          const fp = err.fingerprints ? ` (pinned ${err.fingerprints.pinned}, presented ${err.fingerprints.presented})` : '';
          throw new ConnectionError(`the channel handshake with ${hostLabel} failed (${err.reason}): ${err.message}${fp}`, { cause: err });
        }
        throw new ConnectionError(`cannot connect through ${url}: ${messageOf(err)}`, { cause: err });
      }
    },
  };

  async function openChannel(
    session: BridgeSession,
    handlers: TransportHandlers,
    { signal, deadline, ids }: { signal: AbortSignal | undefined; deadline: number; ids: { publicPem: string; spkiPem: string } },
  ): Promise<Transport> {
    // A pinned host is chosen by its key, the name being only a label: a rogue agent announcing the
    // same name is never picked (docs/security.md). A host not announced now is not coming: say so.
    const pinnedFingerprint = pinned !== undefined ? await hostKeyFingerprint(pinned) : undefined;
    const peer = chooseHost(options.host, session.peers, pinnedFingerprint);
    if (!peer) {
      throw new ConnectionError(
        `host ${hostLabel} is not online at ${url} for this key (hosts this key may reach: ${hostList(session.peers)}); check the name with hostadm hosts`,
        { closeCode: 4404 },
      );
    }
    const agentId = peer.id;
    let channel: SecureChannel | null = null;
    let ended = false;
    let a1Waiter: ((body: string) => void) | null = null;
    let c2Waiter: ((env: Envelope) => void) | null = null;
    let openTail: Promise<unknown> = Promise.resolve();
    let failOpen: ((err: ConnectionError) => void) | null = null;

    const end = (info: CloseInfo) => {
      if (ended) return;
      ended = true;
      channel?.close(info.reason);
      session.close(info);
      if (failOpen) failOpen(new ConnectionError(`${description}: ${info.reason}`, { closeCode: info.code }));
      else handlers.onClose(info);
    };
    session.onClose = (info) => end(info);
    session.onPeers = () => {
      if (!session.peers.some((p) => p.id === agentId)) end({ code: 4100, reason: `host ${hostLabel} left the bridge` });
    };
    // The host will never see that frame; the channel's sequence is broken either way.
    session.onDropped = (destination, reason) => {
      if (destination === agentId) end({ code: 4101, reason: `the bridge dropped a frame to ${hostLabel} (${reason})` });
    };
    session.onRelay = (from, body) => {
      if (from !== agentId || ended) return;
      if (!channel) {
        const waiter = a1Waiter;
        a1Waiter = null;
        waiter?.(body);
        return;
      }
      if (!body.startsWith('hsc1.')) {
        const closedByHost = parseChannelClosedNotice(body);
        const reason = closedByHost
          ? `${closedByHost}; the bridge or the network altered, replayed or dropped a frame, or the host restarted`
          : `channel error (malformed): plain frame from ${hostLabel} after the handshake`;
        end({ code: 4102, reason });
        return;
      }
      const opened = channel.open(body);
      openTail = openTail.then(async () => {
        let plain: string;
        try {
          plain = await opened;
        } catch (cause) {
          const reason = cause instanceof ChannelError ? `channel error (${cause.reason}): ${cause.message}` : `channel error: ${messageOf(cause)}`;
          end({ code: 4102, reason, error: reason });
          return;
        }
        if (ended) return;
        if (c2Waiter) {
          let env: Envelope | null = null;
          try {
            env = JSON.parse(plain) as Envelope;
          } catch {
            env = null;
          }
          if (env && env.id === 'hsc1-c2' && env.name !== 'event') {
            const waiter = c2Waiter;
            c2Waiter = null;
            waiter(env);
            return;
          }
        }
        handlers.onMessage(plain);
      });
    };

    // Until the transport is handed over, a close or the deadline fails the opening.
    const opening = new Promise<never>((_, reject) => {
      failOpen = reject;
    });
    opening.catch(() => undefined); // observed through race(); a failure with nothing racing is not unhandled
    const timer = setTimeout(() => end({ code: 4000, reason: `the host did not finish the channel handshake in time` }), Math.max(0, deadline - Date.now()));
    const onAbort = () => end({ code: 4000, reason: 'connecting was cancelled' });
    signal?.addEventListener('abort', onAbort, { once: true });
    const race = <T>(p: Promise<T>) => Promise.race([p, opening]);
    try {
      // hsc1: C1 plain, A1 plain. C1 carries the public key, for a host that does not know it yet.
      const hs = await startClientHandshake({ clientKeyPem: options.key.privatePem, clientSpkiPem: ids.spkiPem });
      const a1Body = new Promise<string>((res) => {
        a1Waiter = res;
      });
      const c1 = { ...hs.c1Args, pub_key: textToBase64(ids.publicPem) };
      session.sendRelay(agentId, JSON.stringify({ id: 'hsc1-c1', name: 'auth_ssl', namespace: 'rpc', args: c1 }));
      let a1: Envelope;
      try {
        a1 = JSON.parse(await race(a1Body)) as Envelope;
      } catch (err) {
        if (err instanceof ConnectionError) throw err;
        throw new ConnectionError(`host ${hostLabel} answered the handshake with something that is not JSON`);
      }
      if (a1.name !== 'response') throw new ConnectionError(`host ${hostLabel} refused the channel: ${errorText(a1)}`, { closeCode: 4401, cause: refusal(a1, 'auth_ssl') });
      const result = await race(hs.finish(a1.args, pinned !== undefined ? { pinnedHostKey: pinned } : {}));
      if (pinned === undefined) {
        const accept = options.onHostKey ? await race(Promise.resolve(options.onHostKey(result.hostKeyFingerprint, result.hostKey))) : false;
        if (!accept) {
          throw new ConnectionError(
            options.onHostKey
              ? `host key ${result.hostKeyFingerprint} of ${hostLabel} was not accepted`
              : `host key ${result.hostKeyFingerprint} of ${hostLabel} is not pinned (pass pinnedHostKey or onHostKey)`,
          );
        }
        pinned = result.hostKey;
      }
      channel = result.channel;

      // C2 sealed; the reply is the session, or the invitation to sign in with a password.
      const c2Reply = new Promise<Envelope>((res) => {
        c2Waiter = res;
      });
      session.sendRelay(agentId, await channel.seal(JSON.stringify({ id: 'hsc1-c2', name: 'auth_ssl', namespace: 'rpc', args: result.c2Args })));
      const c2 = await race(c2Reply);
      const transport: { -readonly [K in keyof Transport]: Transport[K] } = {
        send: (text) => {
          if (ended || !channel) throw new ConnectionError(`the channel to ${hostLabel} is closed`);
          // seal() keeps call order; the frames go out in that order too.
          channel.seal(text).then(
            (frame) => {
              if (!ended) session.sendRelay(agentId, frame);
            },
            (cause: unknown) => {
              if (cause instanceof RangeError) return; // too large: refused before a seq was taken
              end({ code: 4102, reason: `the channel to ${hostLabel} failed: ${messageOf(cause)}` });
            },
          );
        },
        close: (code, reason) => end({ code: code ?? 1000, reason: reason ?? 'closed by the client' }),
      };
      if (isSignInInvitation(c2)) {
        transport.keyNotRegistered = `host ${hostLabel} does not know this key yet: sign in once with a user and password (on the channel; the bridge sees none of it), then register the key`;
      } else if (c2.name === 'response' && Array.isArray(c2.args) && typeof c2.args[0] === 'string') {
        transport.sessionToken = c2.args[0];
      } else {
        throw new ConnectionError(`host ${hostLabel} refused the key proof: ${errorText(c2)}`, { closeCode: 4401, cause: refusal(c2, 'auth_ssl') });
      }
      failOpen = null;
      return transport;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
