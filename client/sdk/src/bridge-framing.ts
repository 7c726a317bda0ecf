/**
 * The framing of a channel to one host through a bridge session (docs/bridge-protocol.md §3):
 * what goes out is sealed and relayed in call order; what comes from the host is opened in arrival
 * order (the channel insists on consecutive sequence numbers) and handed on as plain envelope text.
 * hsc1 frames are text (`hsc1.`…), hsc2 frames binary; on node:crypto (an inline engine) hsc2 frames
 * are sealed and opened without a promise each. A plain frame from the host now is its "channel
 * closed" notice (or garbage): either way the channel is over. States: open → closed (once; `onClose` says why).
 *
 * Runtime-neutral (WebCrypto only).
 */
import { ChannelError, parseChannelClosedNotice, utf8Encode, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import type { BridgeSession } from './bridge-session.ts';
import { messageOf } from './bridge-session.ts';
import { ConnectionError } from './errors.ts';
import type { CloseInfo } from './transport.ts';

export type ChannelFramingState = 'open' | 'closed';

export class ChannelFraming {
  state: ChannelFramingState = 'open';
  /** One opened frame from the host: plain envelope text. */
  onPlain: (text: string) => void = () => {};
  /** Once, when the channel breaks or is closed. */
  onClose: (info: CloseInfo) => void = () => {};

  private readonly session: BridgeSession;
  private readonly agentId: string;
  private readonly channel: SecureChannel;
  private readonly hostLabel: string;
  /** Frames are opened one after another, in arrival order. */
  private openTail: Promise<unknown> = Promise.resolve();
  /** hsc2: `<agent id>\n`, the first line of every binary frame sent. */
  private readonly head: Uint8Array;

  constructor(session: BridgeSession, agentId: string, channel: SecureChannel, hostLabel: string) {
    this.session = session;
    this.agentId = agentId;
    this.channel = channel;
    this.hostLabel = hostLabel;
    this.head = utf8Encode(`${agentId}\n`);
  }

  /** A relayed binary frame body from the host (hsc2). */
  receiveBinary(body: Uint8Array): void {
    if (this.state === 'closed') return;
    if (this.channel.version !== 'hsc2') {
      this.close({ code: 4102, reason: `channel error (malformed): binary frame from ${this.hostLabel} on an ${this.channel.version} channel` });
      return;
    }
    if (this.channel.inline) {
      let plain: string;
      try {
        plain = this.channel.openBinarySync(body);
      } catch (cause) {
        this.failed(cause);
        return;
      }
      this.onPlain(plain);
      return;
    }
    // WebCrypto reads the frame asynchronously: a copy, since the socket's buffer is not ours to keep.
    this.deliver(this.channel.openBinary(body.slice()));
  }

  /** A relayed text frame body from the host. */
  receive(body: string): void {
    if (this.state === 'closed') return;
    if (this.channel.version === 'hsc2' || !body.startsWith('hsc1.')) {
      const closedByHost = parseChannelClosedNotice(body);
      const reason = closedByHost
        ? `${closedByHost}; the bridge or the network altered, replayed or dropped a frame, or the host restarted`
        : `channel error (malformed): plain frame from ${this.hostLabel} after the handshake`;
      this.close({ code: 4102, reason });
      return;
    }
    this.deliver(this.channel.open(body));
  }

  /** Hands on opened frames in arrival order. */
  private deliver(opened: Promise<string>): void {
    this.openTail = this.openTail.then(async () => {
      let plain: string;
      try {
        plain = await opened;
      } catch (cause) {
        this.failed(cause);
        return;
      }
      if (this.state === 'open') this.onPlain(plain);
    });
  }

  private failed(cause: unknown): void {
    const reason = cause instanceof ChannelError ? `channel error (${cause.reason}): ${cause.message}` : `channel error: ${messageOf(cause)}`;
    this.close({ code: 4102, reason, error: reason });
  }

  /**
   * Seals and relays one envelope text; frames leave in call order. On an inline engine (hsc2 on
   * node:crypto) that is done now, with no promise or closure per frame.
   */
  send(text: string): void {
    if (this.state === 'closed') throw new ConnectionError(`the channel to ${this.hostLabel} is closed`);
    const channel = this.channel;
    if (channel.version === 'hsc2' && channel.inline) {
      let frame: Uint8Array;
      try {
        frame = channel.sealBinarySync(text, this.head);
      } catch (cause) {
        this.sealFailed(cause);
        return;
      }
      this.relayBinary(frame);
      return;
    }
    const broken = (cause: unknown) => this.sealFailed(cause);
    if (channel.version === 'hsc2') {
      channel.sealBinary(text, this.head).then((frame) => this.relayBinary(frame), broken);
      return;
    }
    channel.seal(text).then((frame) => this.relay(frame), broken);
  }

  private sealFailed(cause: unknown): void {
    if (cause instanceof RangeError) return; // too large: refused before a sequence number was taken
    this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
  }

  private relayBinary(frame: Uint8Array): void {
    if (this.state !== 'open') return;
    try {
      this.session.sendRelayBinary(frame);
    } catch (cause) {
      this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
    }
  }

  private relay(frame: string): void {
    if (this.state !== 'open') return;
    try {
      this.session.sendRelay(this.agentId, frame);
    } catch (cause) {
      this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
    }
  }

  close(info: CloseInfo): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.channel.close(info.reason);
    this.onClose(info);
  }
}
