/**
 * The hsc1 secure channel and key helpers (docs/bridge-protocol.md §1 and §3), for the agent's bridge
 * link, the SDK and the bridge. Runs on node:crypto in Node and on WebCrypto in browsers and Workers
 * (primitives.ts, aead.ts), plus node-forge's MD5 for md5_key where node:crypto is not used.
 */
export { ChannelError, FRAME_PREFIX, MAX_SEALED_PLAINTEXT_BYTES, SecureChannel } from './channel.ts';
export { ChannelSender, FLUSH_BYTES } from './channel-sender.ts';
export type { ChannelSenderOutput } from './channel-sender.ts';
export { openBinaryBody } from './channel-receiver.ts';
export { BINARY_CHANNEL_VERSIONS } from './transcript.ts';
export type { ChannelVersion } from './transcript.ts';
export { MAX_RECORD_ENVELOPES, MAX_RECORD_PLAINTEXT_BYTES } from './channel-records.ts';
export { CHANNEL_CLOSED_ID, channelClosedNotice, parseChannelClosedNotice } from './channel-closed.ts';
export type { ChannelClosedReason } from './channel-closed.ts';
export type { ChannelErrorReason, ChannelOptions, ChannelRole } from './channel.ts';
export { answerClientHandshake, generateHostKey, HandshakeError, hostKeyFromPem, isHsc1Request, startClientHandshake } from './handshake.ts';
export type {
  A1Args,
  AgentHandshake,
  AgentHandshakeOptions,
  C1Args,
  C2Args,
  ClientHandshake,
  ClientHandshakeOptions,
  ClientHandshakeResult,
  FinishOptions,
  HandshakeErrorReason,
  HostKey,
} from './handshake.ts';
export {
  answerResumption,
  clientTicketFrom,
  RESUMABLE_CHANNELS,
  RESUMPTION_CHAIN_MS,
  startClientResumption,
  TICKET_LIFETIME_MS,
  TICKET_MESSAGE_ID,
  ticketOfR1,
} from './resumption.ts';
export { TicketTable, type TicketState } from './resumption-table.ts';
export type {
  AgentResumption,
  ClientResumption,
  ClientResumptionResult,
  ClientTicket,
  R1Args,
  RaArgs,
  RcArgs,
  TicketMessageArgs,
} from './resumption.ts';
export {
  ed25519PublicRawFromPkcs8,
  ed25519RawFromSpki,
  hostKeyFingerprint,
  importEd25519PrivateKey,
  importEd25519PublicKey,
  importRsaOaepPrivateKey,
  importRsaOaepPublicKey,
  importRsaSigningKey,
  importRsaVerifyKey,
  KeyFormatError,
  keyAlgorithmOf,
  md5Key,
  pemDecode,
  pemEncode,
  pkcs8DerFromPem,
  spkiDerFromPem,
  spkiFromCertificateDer,
  spkiPemFromCertificatePem,
  spkiPemFromDer,
} from './keys.ts';
export type { KeyAlgorithmName } from './keys.ts';
export {
  constantTimeEqual,
  fromBase64,
  fromBase64Url,
  isBase64,
  randomBytes,
  toBase64,
  toBase64Url,
  utf8Decode,
  utf8Encode,
} from './subtle.ts';
export type { CryptoKey } from './subtle.ts';
export type { EngineKey } from './primitives.ts';
