/**
 * The hsc1 channel handshake with one host through a bridge session (docs/bridge-protocol.md §3):
 * C1 in plain (it carries the client's public key, for a host that does not know it yet), A1 in plain
 * (checked against the pinned host key, or offered to `onHostKey` on first use), then C2 sealed: the
 * key proof, whose reply is the session on the host (`[token, ttl]`) or the invitation to sign in
 * with a password on the channel.
 *
 * States: sending-c1 → awaiting-a1 → verifying → awaiting-c2 → done (or failed). Relayed frames from
 * the host go to `receive` until the channel exists, then to the framing (bridge-framing.ts).
 *
 * Runtime-neutral (WebCrypto only).
 */
import { startClientHandshake } from '@hostadm/shared/crypto/index.ts';
import { parseEnvelope, type WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { ChannelFraming } from './bridge-framing.ts';
import { errorText, refusal, type BridgeSession } from './bridge-session.ts';
import { ConnectionError } from './errors.ts';
import { textToBase64, type WebCryptoClientKey } from './key-auth.ts';
import { messageOf } from './bridge-session.ts';
import type { CloseInfo, SignedInSession } from './transport.ts';

export type ChannelHandshakeState = 'sending-c1' | 'awaiting-a1' | 'verifying' | 'awaiting-c2' | 'done' | 'failed';

export interface ChannelHandshakeOptions {
  session: BridgeSession;
  agentId: string;
  hostLabel: string;
  key: { private: string | WebCryptoClientKey; publicPem: string; spkiPem: string };
  /** The host key pinned for this host (base64 raw Ed25519), if any. */
  pinnedHostKey: string | undefined;
  /** First use: accept the presented host key or not (without it, an unpinned host is refused). */
  onHostKey: ((fingerprint: string, hostKeyB64: string) => boolean | Promise<boolean>) | undefined;
  /** The channel broke or was closed (its framing's `onClose`, from the handshake on). */
  onChannelClose: (info: CloseInfo) => void;
}

/** What a finished handshake yields: the channel's framing and how the host took the key proof. */
export interface ChannelHandshakeResult {
  framing: ChannelFraming;
  /** The host key the channel was verified against (newly accepted on first use). */
  hostKey: string;
  /** The session the key proof opened on the host, or (the key unknown there) why there is none. */
  outcome: { session: SignedInSession } | { keyNotRegistered: string };
}

/** The id of the C2 request, so its reply is told from anything else the host sends. */
const C2_ID = 'hsc1-c2';

export class ChannelHandshake {
  state: ChannelHandshakeState = 'sending-c1';
  /** The channel's framing, from A1's verification on. */
  framing: ChannelFraming | null = null;
  private readonly options: ChannelHandshakeOptions;
  private a1Waiter: ((body: string) => void) | null = null;
  private c2Waiter: ((env: WireEnvelope) => void) | null = null;

  constructor(options: ChannelHandshakeOptions) {
    this.options = options;
  }

  /** A relayed binary frame from the host: only an hsc2 channel's frames come so (ignored before it exists). */
  receiveBinary(body: Uint8Array): void {
    this.framing?.receiveBinary(body);
  }

  /** A relayed frame from the host: A1 in plain, then (the channel made) sealed frames for the framing. */
  receive(body: string): void {
    if (this.framing) {
      this.framing.receive(body);
      return;
    }
    const waiter = this.a1Waiter;
    this.a1Waiter = null;
    waiter?.(body);
  }

  /**
   * Runs the handshake; `race` wraps every wait so that a close, the deadline or a cancel fails it.
   * The framing it resolves with already carries the channel; its `onPlain` is the caller's to set.
   */
  async run(race: <T>(p: Promise<T>) => Promise<T>): Promise<ChannelHandshakeResult> {
    try {
      return await this.steps(race);
    } catch (err) {
      this.state = 'failed';
      this.framing?.close({ code: 4000, reason: messageOf(err) });
      throw err;
    }
  }

  private async steps(race: <T>(p: Promise<T>) => Promise<T>): Promise<ChannelHandshakeResult> {
    const { session, agentId, hostLabel, key } = this.options;
    const hs = await startClientHandshake({
      ...(typeof key.private === 'string' ? { clientKeyPem: key.private } : { clientKeys: key.private }),
      clientSpkiPem: key.spkiPem,
      // hsc2's binary frames need a bridge that relays them as binary; it says so in its announcements.
      offerHsc2: session.binaryFrames,
    });
    const a1Body = new Promise<string>((resolve) => (this.a1Waiter = resolve));
    const c1 = { ...hs.c1Args, pub_key: textToBase64(key.publicPem) };
    session.sendRelay(agentId, JSON.stringify({ id: 'hsc1-c1', name: 'auth_ssl', namespace: 'rpc', args: c1 }));
    this.state = 'awaiting-a1';
    const a1 = parseEnvelope(await race(a1Body));
    if (!a1) throw new ConnectionError(`host ${hostLabel} answered the handshake with something that is not an envelope`);
    if (a1.name !== 'response')
      throw new ConnectionError(`host ${hostLabel} refused the channel: ${errorText(a1)}`, { closeCode: 4401, cause: refusal(a1, 'auth_ssl') });

    this.state = 'verifying';
    let pinned = this.options.pinnedHostKey;
    const result = await race(hs.finish(a1.args, pinned !== undefined ? { pinnedHostKey: pinned } : {}));
    if (pinned === undefined) {
      const { onHostKey } = this.options;
      const accept = onHostKey ? await race(Promise.resolve(onHostKey(result.hostKeyFingerprint, result.hostKey))) : false;
      if (!accept) {
        throw new ConnectionError(
          onHostKey
            ? `host key ${result.hostKeyFingerprint} of ${hostLabel} was not accepted`
            : `host key ${result.hostKeyFingerprint} of ${hostLabel} is not pinned (pass pinnedHostKey or onHostKey)`,
        );
      }
      pinned = result.hostKey;
    }

    const framing = new ChannelFraming(session, agentId, result.channel, hostLabel);
    framing.onClose = this.options.onChannelClose;
    this.framing = framing;
    const c2Reply = new Promise<WireEnvelope>((resolve) => (this.c2Waiter = resolve));
    // Until C2 is answered, what the channel opens is looked at for that reply only.
    framing.onPlain = (plain) => {
      const env = parseEnvelope(plain);
      if (!env || env.id !== C2_ID || env.name === 'event') return;
      const waiter = this.c2Waiter;
      this.c2Waiter = null;
      waiter?.(env);
    };
    framing.send(JSON.stringify({ id: C2_ID, name: 'auth_ssl', namespace: 'rpc', args: result.c2Args }));
    this.state = 'awaiting-c2';
    const c2 = await race(c2Reply);
    framing.onPlain = () => {};
    const outcome = c2Outcome(c2, hostLabel);
    this.state = 'done';
    return { framing, hostKey: pinned, outcome };
  }
}

/** The host's answer to C2: a session (`[token, ttl]`), the invitation to sign in, or a refusal (thrown). */
function c2Outcome(c2: WireEnvelope, hostLabel: string): ChannelHandshakeResult['outcome'] {
  const args = c2.args;
  if (c2.name === 'response' && typeof args === 'object' && args !== null && (args as { signed_in?: unknown }).signed_in === false) {
    return {
      keyNotRegistered: `host ${hostLabel} does not know this key yet: sign in once with a user and password (on the channel; the bridge sees none of it), then register the key`,
    };
  }
  if (c2.name === 'response' && Array.isArray(args) && typeof args[0] === 'string' && typeof args[1] === 'number') {
    return { session: { token: args[0], ttlSeconds: args[1] } };
  }
  throw new ConnectionError(`host ${hostLabel} refused the key proof: ${errorText(c2)}`, { closeCode: 4401, cause: refusal(c2, 'auth_ssl') });
}
