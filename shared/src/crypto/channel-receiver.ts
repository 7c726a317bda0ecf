/**
 * The receiving half's one step shared by the SDK and the agent: a binary relay body of an hsc2 or
 * hsc3 channel opened into the envelopes it carries, in order (hsc2: one; hsc3: a record, all or none).
 */
import type { SecureChannel } from './channel.ts';
import { HSC3_VERSION } from './transcript.ts';

/**
 * On an inline engine (node:crypto) the envelopes at once, throwing ChannelError; otherwise a promise,
 * the body copied first (a socket's buffer is not ours to keep while WebCrypto reads it). A binary
 * body on an hsc1 channel fails the channel (`malformed`).
 */
export function openBinaryBody(channel: SecureChannel, body: Uint8Array): string[] | Promise<string[]> {
  if (channel.version === HSC3_VERSION) return channel.inline ? channel.openRecordSync(body) : channel.openRecord(body.slice());
  if (channel.inline) return [channel.openBinarySync(body)];
  return channel.openBinary(body.slice()).then((plain) => [plain]);
}
