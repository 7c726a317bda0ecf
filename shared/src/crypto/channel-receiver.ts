/**
 * The receiving half's one step shared by the SDK and the agent: a binary relay body of an hsc2 or
 * hsc3 channel opened into the envelopes it carries, in order (hsc2: one; hsc3: a record, all or none).
 */
import type { SecureChannel } from './channel.ts';
import { MAX_SEALED_BODY_BYTES } from './channel-frames.ts';
import { HSC3_VERSION } from './transcript.ts';

/**
 * On an inline engine (node:crypto) the envelopes at once, throwing ChannelError; otherwise a promise,
 * the body copied first (a socket's buffer is not ours to keep while WebCrypto reads it). A binary
 * body on an hsc1 channel fails the channel (`malformed`).
 */
export function openBinaryBody(channel: SecureChannel, body: Uint8Array): string[] | Promise<string[]> {
  if (channel.inline) return channel.version === HSC3_VERSION ? channel.openRecordSync(body) : [channel.openBinarySync(body)];
  // A body longer than any peer seals is refused from its length alone: not worth a copy first.
  const owned = body.length > MAX_SEALED_BODY_BYTES ? body : body.slice();
  return channel.version === HSC3_VERSION ? channel.openRecord(owned) : channel.openBinary(owned).then((plain) => [plain]);
}
