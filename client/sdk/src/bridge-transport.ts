/**
 * The bridge transport (docs/bridge-protocol.md §2–§3): one WebSocket to a bridge's `/relay`, signed in
 * with the client's RSA key, then an hsc1 channel to one host the bridge announces. The connection it
 * hands back carries plain envelope text: `send` seals and relays, received frames from the host are
 * opened in order. The channel's key proof (C2) signs the client in on the host, so the transport
 * resolves with the host's `sessionToken` and the client resumes that session.
 *
 * Runtime-neutral (WebCrypto only); the WebSocket constructor is passed in or taken from globalThis.
 */
import {
  ChannelError,
  parseChannelClosedNotice,
  HandshakeError,
  hostKeyFingerprint,
  md5Key,
  spkiDerFromPem,
  spkiPemFromDer,
  startClientHandshake,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { ConnectionError, HostadmRequestError } from './errors.ts';
import { signChallenge, textToBase64 } from './key-auth.ts';
import type { CloseInfo, Transport, TransportFactory, TransportHandlers } from './transport.ts';
import { chooseHost, describeHost, peerLabel, relayUrl, type AnnouncedPeer, type BridgeHostSelector } from './bridge-hosts.ts';
import { globalWebSocket, type WebSocketConstructor, type WebSocketLike } from './websocket.ts';

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
  /** The hostname reported to the bridge's identify. Default `hostadm-sdk`. */
  clientHostname?: string;
  webSocket?: WebSocketConstructor;
}

interface Envelope {
  id?: string;
  name?: string;
  namespace?: string;
  args?: unknown;
}

const OPEN = 1;

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function bridgeTransport(options: BridgeTransportOptions): TransportFactory {
  const url = relayUrl(options.bridgeUrl);
  const publicPem = options.key.certPem ?? options.key.publicPem;
  if (!publicPem) throw new ConnectionError('bridgeTransport needs key.certPem or key.publicPem');
  const spkiPem = spkiPemFromDer(spkiDerFromPem(publicPem));
  const md5 = md5Key(spkiPem);
  const hostLabel = describeHost(options.host);
  const description = `bridge ${url} host ${hostLabel}`;
  let pinned = options.pinnedHostKey;
  let enrolled = options.joinToken === undefined;

  return {
    description,
    open(handlers: TransportHandlers, { signal, timeoutMs }) {
      const Ctor = options.webSocket ?? globalWebSocket();
      if (!Ctor) return Promise.reject(new ConnectionError("no WebSocket implementation: pass `webSocket` (in Node: the `ws` package, or use the SDK's Node entry)"));
      return new Promise<Transport>((resolve, reject) => {
        let settled = false;
        let ended = false;
        let lastError: string | undefined;
        let socket: WebSocketLike;
        try {
          socket = new Ctor(url);
        } catch (cause) {
          reject(new ConnectionError(`cannot connect to the bridge ${url}: ${messageOf(cause)}`, { cause }));
          return;
        }

        // ---- state
        let seq = 0;
        const pending = new Map<string, { resolve: (e: Envelope) => void }>();
        let peers: AnnouncedPeer[] = [];
        let announceWaiter: (() => void) | null = null;
        let agentId: string | null = null;
        let channel: SecureChannel | null = null;
        let a1Waiter: ((body: string) => void) | null = null;
        let openTail: Promise<unknown> = Promise.resolve();
        let c2Waiter: { id: string; resolve: (e: Envelope) => void } | null = null;
        let identified!: () => void;
        const identifiedPromise = new Promise<void>((res) => {
          identified = res;
        });

        const sendRaw = (text: string) => {
          if (socket.readyState !== OPEN) throw new ConnectionError(`the connection to the bridge ${url} is not open`);
          socket.send(text);
        };
        const bridgeRequest = (name: string, args: unknown): Promise<Envelope> => {
          const id = `bt-${++seq}`;
          return new Promise((res) => {
            pending.set(id, { resolve: res });
            sendRaw(JSON.stringify({ id, name, namespace: 'rpc', args }));
          });
        };

        /** Ends the transport once: before open it rejects, after open it reports `info` to onClose. */
        const end = (info: CloseInfo, err?: ConnectionError) => {
          if (ended) return;
          ended = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          channel?.close(info.reason);
          try {
            socket.close(info.code >= 3000 && info.code < 5000 ? info.code : 1000, info.reason.slice(0, 120));
          } catch {
            // already closing
          }
          if (!settled) {
            settled = true;
            reject(err ?? new ConnectionError(`${description}: ${info.reason}`, { closeCode: info.code }));
          } else {
            handlers.onClose(info);
          }
        };
        const fail = (err: ConnectionError) => end({ code: err.closeCode ?? 4000, reason: err.message }, err);

        const timer = setTimeout(() => {
          const seen = peers.length ? peers.map(peerLabel).join(', ') : 'none';
          const why = agentId
            ? `the host did not finish the channel handshake within ${timeoutMs} ms`
            : `host ${hostLabel} was not announced within ${timeoutMs} ms (hosts seen: ${seen})`;
          fail(new ConnectionError(`cannot connect through ${url}: ${why}`));
        }, timeoutMs);
        const onAbort = () => fail(new ConnectionError(`connecting through ${url} was cancelled`));
        signal?.addEventListener('abort', onAbort, { once: true });

        const transport: Transport & { sessionToken?: string } = {
          send: (text) => {
            if (ended || !channel || !agentId) throw new ConnectionError(`the channel to ${hostLabel} is closed`);
            const target = agentId;
            // seal() keeps call order; the frames go out in that order too.
            channel.seal(text).then(
              (frame) => {
                if (!ended) sendRaw(`${target}\n${frame}`);
              },
              (cause: unknown) => {
                if (cause instanceof RangeError) return; // too large: refused before a seq was taken
                fail(new ConnectionError(`the channel to ${hostLabel} failed: ${messageOf(cause)}`, { cause }));
              },
            );
          },
          close: (code, reason) => end({ code: code ?? 1000, reason: reason ?? 'closed by the client' }),
        };

        // ---- incoming frames
        const onBridgeEnvelope = (env: Envelope) => {
          if (env.name === 'response' || env.name === 'error') {
            const p = env.id !== undefined ? pending.get(env.id) : undefined;
            if (p) {
              pending.delete(env.id!);
              p.resolve(env);
            }
            return;
          }
          if (env.name === 'event') {
            const ev = env.args as { name?: string; args?: Record<string, unknown> } | undefined;
            if (ev?.name !== 'bridge' || !isRecord(ev.args)) return;
            if (Array.isArray(ev.args.peers)) {
              peers = (ev.args.peers as unknown[]).filter((p): p is AnnouncedPeer => isRecord(p) && typeof p.id === 'string');
              if (agentId && !peers.some((p) => p.id === agentId)) {
                end({ code: 4100, reason: `host ${hostLabel} left the bridge` });
                return;
              }
              announceWaiter?.();
            } else if (isRecord(ev.args.dropped)) {
              const d = ev.args.dropped as { destination?: string; reason?: string };
              if (agentId && d.destination === agentId) {
                // The host will never see that frame; the channel's sequence is broken either way.
                end({ code: 4101, reason: `the bridge dropped a frame to ${hostLabel} (${d.reason ?? 'unknown reason'})` });
              }
            }
            return;
          }
          // A request from the bridge itself.
          if (env.id === 'bridge_request_ident' || env.name === 'identify') {
            sendRaw(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { type: 'client', hostname: options.clientHostname ?? 'hostadm-sdk' } }));
            identified();
          } else if (isRecord(env.args) && env.args.action === 'list_ssl_checksums') {
            sendRaw(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { md5_keys: [md5] } }));
          }
        };

        const onRelayFrame = (text: string) => {
          const nl = text.indexOf('\n');
          if (nl < 0) return;
          const from = text.slice(0, nl);
          const body = text.slice(nl + 1);
          if (from !== agentId) return;
          if (!channel) {
            if (a1Waiter) {
              const w = a1Waiter;
              a1Waiter = null;
              w(body);
            }
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
              if (env && env.id === c2Waiter.id && env.name !== 'event') {
                const w = c2Waiter;
                c2Waiter = null;
                w.resolve(env);
                return;
              }
            }
            handlers.onMessage(plain);
          });
        };

        socket.addEventListener('message', (event) => {
          if (ended) return;
          let text: string;
          if (typeof event.data === 'string') text = event.data;
          else if (event.data instanceof ArrayBuffer) text = new TextDecoder().decode(event.data);
          else if (ArrayBuffer.isView(event.data)) text = new TextDecoder().decode(event.data as Uint8Array);
          else return;
          if (text.startsWith('{')) {
            let env: Envelope;
            try {
              env = JSON.parse(text) as Envelope;
            } catch {
              return;
            }
            onBridgeEnvelope(env);
          } else onRelayFrame(text);
        });
        socket.addEventListener('error', (event) => {
          lastError = event.message || (event.error instanceof Error ? event.error.message : undefined) || 'WebSocket error';
        });
        socket.addEventListener('close', (event) => {
          const reason = `the bridge closed the connection (code ${event.code}${event.reason ? `: ${event.reason}` : ''})`;
          const info: CloseInfo = { code: event.code, reason: event.reason || reason };
          if (lastError !== undefined) info.error = lastError;
          end(info, new ConnectionError(`cannot connect through ${url}: ${lastError ?? reason}`, { closeCode: event.code }));
        });

        // ---- the opening sequence
        const run = async () => {
          // The bridge asks who we are first; nothing else is accepted before the answer.
          await identifiedPromise;
          if (ended) return;
          if (!enrolled && options.joinToken !== undefined) {
            const reply = await bridgeRequest('bridge_enroll', { token: options.joinToken, pub_key: textToBase64(publicPem), ...(options.nickname ? { nickname: options.nickname } : {}) });
            if (reply.name !== 'response') throw new ConnectionError(`the bridge refused to enroll the key: ${errorText(reply)}`, { cause: refusal(reply, 'bridge_enroll') });
            enrolled = true;
          }
          const stage1 = await bridgeRequest('auth_ssl', '');
          if (stage1.name !== 'response' || !isRecord(stage1.args) || typeof stage1.args.test_string !== 'string') {
            throw new ConnectionError(`the bridge refused sign-in: ${errorText(stage1)}`, { cause: refusal(stage1, 'auth_ssl') });
          }
          const signature = await signChallenge(options.key.privatePem, 'bridge-signin', stage1.args.test_string);
          const stage2 = await bridgeRequest('auth_ssl', { signature });
          if (stage2.name !== 'response') throw new ConnectionError(`the bridge refused the key ${md5}: ${errorText(stage2)} (enroll it with a client join token first)`, { cause: refusal(stage2, 'auth_ssl') });

          // Wait for the host in an announcement. A pinned host is chosen by its key, the name being only
          // a label: a rogue agent announcing the same name is never picked (docs/security.md).
          const pinnedFingerprint = pinned !== undefined ? await hostKeyFingerprint(pinned) : undefined;
          let peer = chooseHost(options.host, peers, pinnedFingerprint);
          while (!peer) {
            await new Promise<void>((res) => {
              announceWaiter = res;
            });
            announceWaiter = null;
            if (ended) return;
            peer = chooseHost(options.host, peers, pinnedFingerprint);
          }
          agentId = peer.id;

          // hsc1: C1 plain, A1 plain.
          const hs = await startClientHandshake({ clientKeyPem: options.key.privatePem, clientSpkiPem: spkiPem });
          const a1Body = new Promise<string>((res) => {
            a1Waiter = res;
          });
          sendRaw(`${agentId}\n${JSON.stringify({ id: 'hsc1-c1', name: 'auth_ssl', namespace: 'rpc', args: hs.c1Args })}`);
          const a1Text = await a1Body;
          let a1: Envelope;
          try {
            a1 = JSON.parse(a1Text) as Envelope;
          } catch {
            throw new ConnectionError(`host ${hostLabel} answered the handshake with something that is not JSON`);
          }
          if (a1.name !== 'response') throw new ConnectionError(`host ${hostLabel} refused the channel: ${errorText(a1)}`, { cause: refusal(a1, 'auth_ssl') });
          const result = await hs.finish(a1.args, pinned !== undefined ? { pinnedHostKey: pinned } : {});
          if (pinned === undefined) {
            const accept = options.onHostKey ? await options.onHostKey(result.hostKeyFingerprint, result.hostKey) : false;
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

          // C2 sealed; the reply is the session.
          const c2Reply = new Promise<Envelope>((res) => {
            c2Waiter = { id: 'hsc1-c2', resolve: res };
          });
          sendRaw(`${agentId}\n${await channel.seal(JSON.stringify({ id: 'hsc1-c2', name: 'auth_ssl', namespace: 'rpc', args: result.c2Args }))}`);
          const c2 = await c2Reply;
          if (c2.name !== 'response' || !Array.isArray(c2.args) || typeof c2.args[0] !== 'string') {
            throw new ConnectionError(`host ${hostLabel} refused the key proof: ${errorText(c2)}`, { cause: refusal(c2, 'auth_ssl') });
          }
          transport.sessionToken = c2.args[0];
          if (ended) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(transport);
        };

        socket.addEventListener('open', () => {
          run().catch((cause: unknown) => {
            if (cause instanceof ConnectionError) fail(cause);
            else if (cause instanceof HandshakeError) {
              const fp = cause.fingerprints ? ` (pinned ${cause.fingerprints.pinned}, presented ${cause.fingerprints.presented})` : '';
              fail(new ConnectionError(`the channel handshake with ${hostLabel} failed (${cause.reason}): ${cause.message}${fp}`, { cause }));
            } else fail(new ConnectionError(`cannot connect through ${url}: ${messageOf(cause)}`, { cause }));
          });
        });
      });
    },
  };
}

/** A refusal envelope as the error it is, kept as the ConnectionError's cause so its code is not lost (401: sign-in refused). */
function refusal(env: Envelope, name: string): HostadmRequestError | undefined {
  if (env.name !== 'error' || !isRecord(env.args) || typeof env.args.code !== 'number') return undefined;
  return new HostadmRequestError(env.args.code, typeof env.args.message === 'string' ? env.args.message : errorText(env), { namespace: 'rpc', name });
}

function errorText(env: Envelope): string {
  if (isRecord(env.args)) {
    const code = env.args.code;
    const message = env.args.message;
    if (typeof message === 'string') return code !== undefined ? `${String(code)} ${message}` : message;
  }
  return JSON.stringify(env.args ?? env);
}
