/**
 * The framing of a channel to one host through a bridge session (docs/bridge-protocol.md §3):
 * what goes out is sealed and relayed in call order; what comes from the host is opened in arrival
 * order (the channel insists on consecutive sequence numbers) and handed on as plain envelope text.
 * hsc1 frames are text (`hsc1.`…), hsc2 and hsc3 frames binary; hsc3 sends what was queued in one tick
 * as one record (ChannelSender). On node:crypto (an inline engine) binary frames are sealed and opened
 * without a promise each. A plain frame from the host now is its "channel
 * closed" notice (or garbage): either way the channel is over. States: open → closed (once; `onClose` says why).
 *
 * Runtime-neutral (WebCrypto only).
 */
import { ChannelError, ChannelSender, openBinaryBody, parseChannelClosedNotice, utf8Encode, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import type { BridgeSession } from './bridge-session.ts';
import { messageOf } from './bridge-replies.ts';
import { ConnectionError, EnvelopeTooLargeError } from './errors.ts';
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
  private readonly sender: ChannelSender;
  /** Closed on purpose, with frames sealed before the close still on their way to the relay. */
  private draining = false;

  constructor(session: BridgeSession, agentId: string, channel: SecureChannel, hostLabel: string) {
    this.session = session;
    this.agentId = agentId;
    this.channel = channel;
    this.hostLabel = hostLabel;
    // Binary frames carry `<agent id>\n` in front, so that each is one buffer. Over `ws`, whose send
    // callback says when the socket has written a frame, sealed frames reuse buffers written already
    // (channel-frame-pool.ts), as the agent's do.
    this.sender = new ChannelSender(channel, utf8Encode(`${agentId}\n`), {
      text: (frame) => this.relay(frame),
      binary: (frame, release) => this.relayBinary(frame, release),
      failed: (cause) => this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` }),
      releasesFrames: session.tellsWhenWritten,
    });
  }

  /** A relayed binary frame body from the host (hsc2: one envelope; hsc3: a record of several). */
  receiveBinary(body: Uint8Array): void {
    if (this.state === 'closed') return;
    if (this.channel.version === 'hsc1') {
      this.close({ code: 4102, reason: `channel error (malformed): binary frame from ${this.hostLabel} on an hsc1 channel` });
      return;
    }
    let opened: string[] | Promise<string[]>;
    try {
      opened = openBinaryBody(this.channel, body);
    } catch (cause) {
      this.failed(cause);
      return;
    }
    if (Array.isArray(opened)) {
      // Inline: a record's envelopes in order; one handler closing the channel stops the rest.
      for (const plain of opened) if (this.state === 'open') this.onPlain(plain);
      return;
    }
    this.deliver(opened);
  }

  /** A relayed text frame body from the host. */
  receive(body: string): void {
    if (this.state === 'closed') return;
    if (this.channel.version !== 'hsc1' || !body.startsWith('hsc1.')) {
      const closedByHost = parseChannelClosedNotice(body);
      const reason = closedByHost
        ? `${closedByHost}; the bridge or the network altered, replayed or dropped a frame, or the host restarted`
        : `channel error (malformed): plain frame from ${this.hostLabel} after the handshake`;
      this.close({ code: 4102, reason });
      return;
    }
    this.deliver(this.channel.open(body).then((plain) => [plain]));
  }

  /** Hands on opened frames' envelopes in arrival order. */
  private deliver(opened: Promise<string[]>): void {
    this.openTail = this.openTail.then(async () => {
      let envelopes: string[];
      try {
        envelopes = await opened;
      } catch (cause) {
        this.failed(cause);
        return;
      }
      for (const plain of envelopes) if (this.state === 'open') this.onPlain(plain);
    });
  }

  private failed(cause: unknown): void {
    const reason = cause instanceof ChannelError ? `channel error (${cause.reason}): ${cause.message}` : `channel error: ${messageOf(cause)}`;
    this.close({ code: 4102, reason, error: reason });
  }

  /**
   * Seals and relays one envelope text; frames leave in call order. hsc2 on an inline engine
   * (node:crypto) seals now, with no promise or closure per frame; hsc3 queues it into the record
   * that leaves at the end of this tick.
   */
  send(text: string): void {
    if (this.state === 'closed') throw new ConnectionError(`the channel to ${this.hostLabel} is closed`);
    try {
      this.sender.send(text);
    } catch (cause) {
      // Too large: refused before a sequence number was taken, so the channel stays usable; the
      // request fails now (requests.ts answers it with a local 413) rather than waiting for its timeout.
      if (cause instanceof RangeError) throw new EnvelopeTooLargeError(cause.message);
      throw cause;
    }
  }

  private relayBinary(frame: Uint8Array, release?: () => void): void {
    if (this.state !== 'open' && !this.draining) return release?.();
    try {
      this.session.sendRelayBinary(frame, release);
    } catch (cause) {
      release?.();
      this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
    }
  }

  private relay(frame: string): void {
    if (this.state !== 'open' && !this.draining) return;
    try {
      this.session.sendRelay(this.agentId, frame);
    } catch (cause) {
      this.close({ code: 4102, reason: `the channel to ${this.hostLabel} failed: ${messageOf(cause)}` });
    }
  }

  close(info: CloseInfo): void {
    if (this.state === 'closed') return;
    // What was sent this tick and still waits for its record (hsc3) leaves first, as on hsc1 and hsc2.
    this.sender.flush();
    if ((this.state as ChannelFramingState) === 'closed') return; // relaying that failed closed it already
    this.state = 'closed';
    const finish = () => {
      this.draining = false;
      this.channel.close(info.reason);
      this.onClose(info);
    };
    if (this.channel.inline) {
      finish();
      return;
    }
    // WebCrypto seals asynchronously: the records already being sealed still go out (nothing new is
    // accepted: `send` throws once the state is closed), then the channel closes.
    this.draining = true;
    void this.sender.drained().then(finish, finish);
  }
}
