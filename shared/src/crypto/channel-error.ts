/**
 * How a channel fails (channel.ts): the reason names what was wrong with the first bad frame, in
 * arrival order; every later call on a failed channel fails with `closed`. The host tells the client
 * the same reasons in its "channel closed" notice (channel-closed.ts).
 */
export type ChannelErrorReason = 'replay' | 'gap' | 'tampered' | 'malformed' | 'closed';

export class ChannelError extends Error {
  readonly reason: ChannelErrorReason;

  constructor(reason: ChannelErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChannelError';
    this.reason = reason;
  }
}
