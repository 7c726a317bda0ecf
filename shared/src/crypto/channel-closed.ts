/**
 * The one plain frame a host sends on an established hsc1 channel: "I closed this channel", when a
 * frame from the client failed to open (altered, replayed, reordered, lost in between) or arrived for
 * a channel the host does not have (it restarted). Without it the client would wait for replies that
 * never come. It is unauthenticated on purpose: a bridge that forges it only closes the channel, which
 * it can do anyway by dropping frames; the client never trusts anything else in it.
 */
import type { ChannelErrorReason } from './channel-error.ts';

/** The envelope id that marks the notice (docs/protocol.md, "Channel closed by the host"). */
export const CHANNEL_CLOSED_ID = 'hsc1-closed';

export type ChannelClosedReason = ChannelErrorReason | 'unknown-channel';

const EXPLANATIONS: Record<ChannelClosedReason, string> = {
  replay: 'a frame from you arrived twice (replayed on the way)',
  gap: 'a frame from you was missing or out of order (dropped or reordered on the way)',
  tampered: 'a frame from you failed authentication (altered on the way)',
  malformed: 'a frame from you could not be read',
  closed: 'the channel had already failed',
  'unknown-channel': 'the host has no channel with you (it restarted, or the handshake was not completed)',
};

export function channelClosedNotice(reason: ChannelClosedReason): string {
  return JSON.stringify({
    id: CHANNEL_CLOSED_ID,
    name: 'error',
    namespace: 'rpc',
    args: { code: 400, message: `the host closed the secure channel: ${EXPLANATIONS[reason]}`, reason },
  });
}

/** The notice's message when `body` is one (a short, known reason only), else null. */
export function parseChannelClosedNotice(body: string): string | null {
  if (body.length > 1024 || !body.startsWith('{')) return null;
  try {
    const env = JSON.parse(body) as { id?: unknown; args?: { reason?: unknown } };
    const reason = env.args?.reason;
    if (env.id !== CHANNEL_CLOSED_ID || typeof reason !== 'string' || !Object.hasOwn(EXPLANATIONS, reason)) return null;
    // Rebuilt from the reason: no text a bridge chose reaches the user.
    return `the host closed the secure channel: ${EXPLANATIONS[reason as ChannelClosedReason]}`;
  } catch {
    return null;
  }
}
