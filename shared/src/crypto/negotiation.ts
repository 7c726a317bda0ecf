/**
 * Channel version negotiation (docs/bridge-protocol.md §3.9): which versions a C1 `channels` list (or
 * the C2 `offered` list that repeats it under the channel's protection) names.
 */
import { HSC1_VERSION, HSC2_VERSION, HSC3_VERSION, type ChannelVersion } from './transcript.ts';

/**
 * The versions named, beyond hsc1 (unknown names are ignored: a newer client may offer more); null
 * for a value that is not a short list of short strings.
 */
export function offeredVersions(value: unknown): ChannelVersion[] | null {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > 8 || !value.every((v) => typeof v === 'string' && v.length <= 16)) return null;
  return value.filter((v): v is ChannelVersion => v === HSC2_VERSION || v === HSC3_VERSION);
}

/** Newest first: the agent answers with the first of these that both sides speak. */
const PREFERENCE: readonly ChannelVersion[] = [HSC3_VERSION, HSC2_VERSION];

/** The highest version both offered and spoken here (`spoken`: the versions beyond hsc1), else hsc1. */
export function chosenVersion(offered: readonly ChannelVersion[], spoken: readonly ChannelVersion[]): ChannelVersion {
  return PREFERENCE.find((v) => offered.includes(v) && spoken.includes(v)) ?? HSC1_VERSION;
}
