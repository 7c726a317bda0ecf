/**
 * The framing of an hsc1 channel to one host through a bridge session (docs/bridge-protocol.md §3):
 * what goes out is sealed and relayed in call order; what comes from the host is opened in arrival
 * order (the channel insists on consecutive sequence numbers) and handed on as plain envelope text.
 * A plain frame from the host now is its "channel closed" notice (or garbage): either way the channel
 * is over. States: open → closed (once; `onClose` says why).
 *
 * Runtime-neutral (WebCrypto only).
 */
import { ChannelError, parseChannelClosedNotice, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
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

  constructor(session: BridgeSession, agentId: string, channel: SecureChannel, hostLabel: string) {
    this.session = session;
    this.agentId = agentId;
    this.channel = channel;
    this.hostLabel = hostLabel;
  }

  /** A relayed frame body from the host. */
  receive(body: string): void {
    if (this.state === 'closed') return;
    if (!body.startsWith('hsc1.')) {
      const closedByHost = parseChannelClosedNotice(body);
      const reason = closedByHost
        ? `${closedByHost}; the bridge or the network altered, replayed or dropped a frame, or the host restarted`
        : `channel error (malformed): plain frame from ${this.hostLabel} after the handshake`;
      this.close({ code: 4102, reason });
      return;
    }
    const opened = this.channel.open(body);
    this.openTail = this.openTail.then(async () => {
      let plain: string;
      try {
        plain = await opened;
      } catch (cause) {
        const reason = cause instanceof ChannelError ? `channel error (${cause.reason}): ${cause.message}` : `channel error: ${messageOf(cause)}`;
        this.close({ code: 4102, reason, error: reason });
        return;
      }
      if (this.state === 'open') this.onPlain(plain);
    });
  }

  /** Seals and relays one envelope text; frames leave in call order. */
  send(text: string): void {
    if (this.state === 'closed') throw new ConnectionError(`the channel to ${this.hostLabel} is closed`);
    this.channel.seal(text).then(
      (frame) => {
        if (this.state !== 'open') return;
        try {
          this.session.sendRelay(this.agentId, frame);
        } catch (cause) {
          this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
        }
      },
      (cause: unknown) => {
        if (cause instanceof RangeError) return; // too large: refused before a sequence number was taken
        this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
      },
    );
  }

  close(info: CloseInfo): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.channel.close(info.reason);
    this.onClose(info);
  }
}
