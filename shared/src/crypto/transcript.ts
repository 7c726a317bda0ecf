/**
 * The hsc1 building blocks of docs/bridge-protocol.md §3, kept apart from the message flow in
 * handshake.ts so that the test vectors (vectors.test.ts) exercise exactly the code the handshake runs.
 */
import { primitives, sha256, type EngineKey } from './primitives.ts';
import { concatBytes, randomBytes, utf8Encode } from './subtle.ts';

export const HSC1_VERSION = 'hsc1';
export const LABEL_TRANSCRIPT = 'hostadm-hsc1';
export const LABEL_HOST_SIG = 'hostadm-hsc1 host';
export const LABEL_CLIENT_SIG = 'hostadm-hsc1 client';
export const INFO_C2A = 'hostadm-hsc1 c2a';
export const INFO_A2C = 'hostadm-hsc1 a2c';
export const INFO_SID = 'hostadm-hsc1 sid';
/** What the host key signs in a resumption (resumption.ts): "hostadm-hsr1 host" ‖ Tr. */
export const LABEL_RESUME_HOST_SIG = 'hostadm-hsr1 host';
/** The secret a resumption ticket stands for (resumption.ts); never a traffic key. */
export const INFO_RESUMPTION = 'hostadm-hsc1 resumption';
export const INFO_HSC2_RESUMPTION = 'hostadm-hsc2 resumption';

/**
 * hsc2 (docs/bridge-protocol.md §3.9): the same handshake, binary frames. Every label is its own, so
 * an hsc2 session shares no transcript, signature or key with an hsc1 one, and its frames' additional
 * data has a label of its own ("a key signs one kind of thing").
 */
export const HSC2_VERSION = 'hsc2';
export const LABEL_HSC2_TRANSCRIPT = 'hostadm-hsc2';
export const LABEL_HSC2_HOST_SIG = 'hostadm-hsc2 host';
export const LABEL_HSC2_CLIENT_SIG = 'hostadm-hsc2 client';
export const INFO_HSC2_C2A = 'hostadm-hsc2 c2a';
export const INFO_HSC2_A2C = 'hostadm-hsc2 a2c';
export const INFO_HSC2_SID = 'hostadm-hsc2 sid';
export const LABEL_HSC2_FRAME = 'hostadm-hsc2 frame';

/**
 * hsc3 (docs/bridge-protocol.md §3.10): the same handshake; each binary frame is a record carrying
 * every envelope its side queued in one tick. Its own labels again, the records' additional data too,
 * so an hsc2 frame can never be taken for an hsc3 record or back.
 */
export const HSC3_VERSION = 'hsc3';
export const LABEL_HSC3_RECORD = 'hostadm-hsc3 record';

export type ChannelVersion = typeof HSC1_VERSION | typeof HSC2_VERSION | typeof HSC3_VERSION;
/** The versions with binary frames, best first: what a client offers where the bridge relays binary frames. */
export const BINARY_CHANNEL_VERSIONS: readonly ChannelVersion[] = [HSC3_VERSION, HSC2_VERSION];

/** The labels of one channel version; `frame` starts every sealed frame's additional data. */
export const LABELS = {
  hsc1: {
    transcript: LABEL_TRANSCRIPT,
    hostSig: LABEL_HOST_SIG,
    clientSig: LABEL_CLIENT_SIG,
    c2a: INFO_C2A,
    a2c: INFO_A2C,
    sid: INFO_SID,
    resumption: INFO_RESUMPTION,
    frame: LABEL_TRANSCRIPT,
  },
  hsc2: {
    transcript: LABEL_HSC2_TRANSCRIPT,
    hostSig: LABEL_HSC2_HOST_SIG,
    clientSig: LABEL_HSC2_CLIENT_SIG,
    c2a: INFO_HSC2_C2A,
    a2c: INFO_HSC2_A2C,
    sid: INFO_HSC2_SID,
    resumption: INFO_HSC2_RESUMPTION,
    frame: LABEL_HSC2_FRAME,
  },
  hsc3: {
    transcript: 'hostadm-hsc3',
    hostSig: 'hostadm-hsc3 host',
    clientSig: 'hostadm-hsc3 client',
    c2a: 'hostadm-hsc3 c2a',
    a2c: 'hostadm-hsc3 a2c',
    sid: 'hostadm-hsc3 sid',
    resumption: 'hostadm-hsc3 resumption',
    frame: LABEL_HSC3_RECORD,
  },
} as const satisfies Record<ChannelVersion, Record<string, string>>;

/** Sizes of the binary handshake fields, in bytes. */
export const SIZES = { eph: 32, nonce: 32, hostKey: 32, hostSig: 64, key: 32, sid: 16 } as const;

export interface TranscriptInput {
  /** The md5_key as sent in C1 (its base64 text is hashed, not the 16 bytes). */
  md5Key: string;
  clientEph: Uint8Array;
  clientNonce: Uint8Array;
  agentEph: Uint8Array;
  agentNonce: Uint8Array;
  hostKey: Uint8Array;
}

/**
 * T = SHA-256("hostadm-hsc1" ‖ md5_key ‖ client_eph ‖ client_nonce ‖ agent_eph ‖ agent_nonce ‖ host_key).
 * Plain concatenation is unambiguous only because every field has a fixed length (md5_key is always
 * 24 base64 characters), so the lengths are checked here rather than trusted.
 */
export async function transcriptHash(input: TranscriptInput, version: ChannelVersion = HSC1_VERSION): Promise<Uint8Array> {
  if (input.md5Key.length !== 24) throw new RangeError('md5_key must be 24 base64 characters');
  const fixed: [Uint8Array, number][] = [
    [input.clientEph, SIZES.eph],
    [input.clientNonce, SIZES.nonce],
    [input.agentEph, SIZES.eph],
    [input.agentNonce, SIZES.nonce],
    [input.hostKey, SIZES.hostKey],
  ];
  for (const [bytes, size] of fixed) if (bytes.length !== size) throw new RangeError('transcript field has the wrong size');
  return sha256(concatBytes(utf8Encode(LABELS[version].transcript), utf8Encode(input.md5Key), ...fixed.map(([b]) => b)));
}

/** What the host key signs: "hostadm-hsc1 host" ‖ T (hsc2: "hostadm-hsc2 host" ‖ T). */
export function hostSignedMessage(transcript: Uint8Array, version: ChannelVersion = HSC1_VERSION): Uint8Array {
  return concatBytes(utf8Encode(LABELS[version].hostSig), transcript);
}

/** What the client key signs in C2: "hostadm-hsc1 client" ‖ T ‖ test_string (hsc2: its own label). */
export function clientSignedMessage(transcript: Uint8Array, testString: string, version: ChannelVersion = HSC1_VERSION): Uint8Array {
  return concatBytes(utf8Encode(LABELS[version].clientSig), transcript, utf8Encode(testString));
}

export interface SessionSecrets {
  /** AES-256-GCM key, client → agent. */
  kC2a: Uint8Array;
  /** AES-256-GCM key, agent → client. */
  kA2c: Uint8Array;
  /** Session id, bound into every frame's additional data. */
  sid: Uint8Array;
}

/**
 * k_c2a, k_a2c, sid and the resumption secret: HKDF-SHA256 over the X25519 secret, salted with T, one
 * info label each (the version's own). The resumption secret is a one-way output: it reveals neither
 * the traffic keys nor the X25519 secret of this session.
 */
export async function deriveSessionSecrets(
  shared: Uint8Array,
  transcript: Uint8Array,
  version: ChannelVersion = HSC1_VERSION,
): Promise<SessionSecrets & { resumption: Uint8Array }> {
  const labels = LABELS[version];
  const [kC2a, kA2c, sid, resumption] = await primitives().hkdfSha256(shared, transcript, [
    { info: utf8Encode(labels.c2a), length: SIZES.key },
    { info: utf8Encode(labels.a2c), length: SIZES.key },
    { info: utf8Encode(labels.sid), length: SIZES.sid },
    { info: utf8Encode(labels.resumption), length: SIZES.key },
  ]);
  if (!kC2a || !kA2c || !sid || !resumption) throw new Error('HKDF returned fewer outputs than asked for');
  return { kC2a, kA2c, sid, resumption };
}

// ---- X25519 ----

export interface EphemeralKey {
  /** Usable only for the agreement: an ephemeral private key never leaves its engine and is dropped after use. */
  privateKey: EngineKey;
  publicRaw: Uint8Array;
}

export function generateEphemeral(): Promise<EphemeralKey> {
  return primitives().generateX25519();
}

/** For the test vectors only: an ephemeral key from fixed private bytes. */
export function ephemeralFromPrivateRaw(privateRaw: Uint8Array): Promise<EphemeralKey> {
  return primitives().x25519FromPrivateRaw(privateRaw);
}

/**
 * X25519 with the peer's raw public key. An all-zero result (a low-order peer key) is refused even if
 * the runtime returns it: RFC 7748 §6.1 says to check, and some implementations leave it to the caller.
 */
export async function x25519(privateKey: EngineKey, peerPublicRaw: Uint8Array): Promise<Uint8Array> {
  if (peerPublicRaw.length !== SIZES.eph) throw new RangeError('an X25519 public key is 32 bytes');
  let shared: Uint8Array;
  try {
    shared = await primitives().x25519(privateKey, peerPublicRaw);
  } catch (cause) {
    throw new RangeError('X25519 failed (low-order or invalid peer key)', { cause });
  }
  if (shared.every((b) => b === 0)) throw new RangeError('X25519 produced the all-zero secret (low-order peer key)');
  return shared;
}

// ---- test string ----

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 random letters and digits, uniformly (bytes ≥ 248 are rejected so that `% 62` has no bias). */
export function randomTestString(length = 32): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALNUM.charAt(b % 62);
    }
  }
  return out;
}

export const TEST_STRING_PATTERN = /^[A-Za-z0-9]{32}$/;
