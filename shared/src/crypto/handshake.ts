/**
 * The hsc1 handshake, both sides (docs/bridge-protocol.md §3 steps 1–4):
 *
 *   C1  client → agent (plain)   {action:auth_ssl, md5_key, channel:"hsc1", client_eph, client_nonce, [channels:["hsc3","hsc2"]]}
 *   A1  agent → client (plain)   {test_string: OAEP(test_string), new_ssl_key: [OAEP(piece)...]}
 *                                pieces = JSON {v:"hsc1"|"hsc2"|"hsc3", agent_eph, agent_nonce, host_key, host_sig}
 *   C2  client → agent (sealed)  {signature: RSASSA-PKCS1-v1_5-SHA256("hostadm-hsc1 client" ‖ T ‖ test_string), [offered:["hsc3","hsc2"]]}
 *
 * Version negotiation (docs/bridge-protocol.md §3.9): `channel` stays "hsc1" (what every agent
 * requires); `channels` offers newer versions on top, and the agent answers with the highest one both
 * speak (`v:"hsc3"`, …), after which every label is that version's. C1 is plain, so a bridge could strip the offer; C2 (sealed, under keys the
 * bridge does not have) repeats what the client offered, and an agent that did not see that offer in
 * C1 refuses C2 as a downgrade. An older agent ignores both fields and answers hsc1.
 *
 * Inputs from the wire are typed `unknown` and checked field by field: every size is fixed, so any
 * deviation is refused rather than guessed at, and the client never falls back to a weaker channel.
 */
import { SecureChannel } from './channel.ts';
import { chosenVersion, offeredVersions } from './negotiation.ts';
import {
  hostKeyFingerprint,
  importEd25519PublicKey,
  importRsaOaepPrivateKey,
  importRsaOaepPublicKey,
  importRsaSigningKey,
  importRsaVerifyKey,
  KeyFormatError,
  md5Key,
} from './keys.ts';
import { primitives } from './primitives.ts';
import { concatBytes, constantTimeEqual, fromBase64, isBase64, randomBytes, toBase64, utf8Decode, utf8Encode, type CryptoKey } from './subtle.ts';
import {
  clientSignedMessage,
  deriveSessionSecrets,
  generateEphemeral,
  hostSignedMessage,
  HSC1_VERSION,
  HSC2_VERSION,
  HSC3_VERSION,
  randomTestString,
  SIZES,
  TEST_STRING_PATTERN,
  transcriptHash,
  x25519,
  type ChannelVersion,
  type SessionSecrets,
} from './transcript.ts';

export type HandshakeErrorReason = 'bad-reply' | 'bad-signature' | 'host-key-mismatch' | 'downgrade' | 'bad-request' | 'unsupported-key';

export class HandshakeError extends Error {
  readonly reason: HandshakeErrorReason;
  /** Set for `host-key-mismatch`: the pinned and the presented fingerprints. */
  readonly fingerprints?: { pinned: string; presented: string };

  constructor(reason: HandshakeErrorReason, message: string, options?: { cause?: unknown; fingerprints?: { pinned: string; presented: string } }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HandshakeError';
    this.reason = reason;
    if (options?.fingerprints) this.fingerprints = options.fingerprints;
  }
}

export interface C1Args {
  action: 'auth_ssl';
  md5_key: string;
  channel: 'hsc1';
  /** Versions offered on top of hsc1 (absent: hsc1 only). */
  channels?: ChannelVersion[];
  client_eph: string;
  client_nonce: string;
}

export interface A1Args {
  test_string: string;
  new_ssl_key: string[];
}

export interface C2Args {
  signature: string;
  /** C1's `channels`, repeated under the channel's protection (absent when none were offered). */
  offered?: ChannelVersion[];
}

/** RSA-OAEP-SHA256 fits 256 − 2·32 − 2 = 190 bytes in one block of a 2048-bit key (the spec's chunk). */
export const PIECE_BYTES = 190;
/** The A1 JSON is ~260 bytes (2 pieces); the bounds only stop a hostile peer making us decrypt a lot. */
const MAX_PIECES = 8;
const MAX_RSA_B64 = 1400; // an 8192-bit RSA block is 1024 bytes = 1368 base64 characters

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A strictly base64 field of exactly `size` bytes, or null. */
export function fixedField(record: Record<string, unknown>, name: string, size: number): Uint8Array | null {
  const value = record[name];
  if (!isBase64(value) || value.length !== Math.ceil(size / 3) * 4) return null;
  const bytes = fromBase64(value);
  return bytes.length === size ? bytes : null;
}

async function keysOrReason<T>(reason: HandshakeErrorReason, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (cause) {
    if (cause instanceof KeyFormatError) throw new HandshakeError(reason, cause.message, { cause });
    throw cause;
  }
}

export async function channelFrom(role: 'client' | 'agent', secrets: SessionSecrets, version: ChannelVersion): Promise<SecureChannel> {
  try {
    return await SecureChannel.create(role, secrets, { version });
  } finally {
    // The raw keys live on only inside the non-extractable CryptoKeys.
    secrets.kC2a.fill(0);
    secrets.kA2c.fill(0);
  }
}

// The host key (host-key.ts) is re-exported: tests and older imports find it here.
export { generateHostKey, hostKeyFromPem, type HostKey } from './host-key.ts';
import { hostKeyFromPem, type HostKey } from './host-key.ts';

// ---- client side ----

export interface ClientHandshakeOptions {
  /** The client's RSA private key, PKCS#8 PEM (PKCS#1 `RSA PRIVATE KEY` is accepted too). */
  clientKeyPem?: string;
  /**
   * Or the same key as WebCrypto keys (a browser keeps them non-extractable in IndexedDB): RSA-OAEP
   * (SHA-256) to open A1 and RSASSA-PKCS1-v1_5 (SHA-256) to sign C2.
   */
  clientKeys?: { decrypt: CryptoKey; sign: CryptoKey };
  /** The matching public key (SPKI PEM or the certificate); its md5_key names the key to the agent. */
  clientSpkiPem: string;
  /**
   * Versions to offer beyond hsc1 (binary frames: only where the bridge relays them), e.g.
   * BINARY_CHANNEL_VERSIONS. `offerHsc2: true` alone offers hsc2 only, as a client before hsc3 did.
   */
  channels?: readonly ChannelVersion[];
  offerHsc2?: boolean;
}

export interface FinishOptions {
  /** The host key pinned for this host (base64 raw). Absent on first use: pin the returned `hostKey`. */
  pinnedHostKey?: string;
}

export interface ClientHandshakeResult {
  channel: SecureChannel;
  /** The agent's host key, base64 raw, verified by its signature over this handshake. */
  hostKey: string;
  hostKeyFingerprint: string;
  testString: string;
  /** Send these, sealed with `channel`, as the `auth_ssl` C2 request. */
  c2Args: C2Args;
  /** What a resumption ticket from this session stands for (resumption.ts); keep it as secret as a key. */
  resumptionSecret: Uint8Array;
}

export interface ClientHandshake {
  c1Args: C1Args;
  /** Checks A1 and derives the channel; single use. Throws HandshakeError on any failure. */
  finish(a1Args: unknown, options?: FinishOptions): Promise<ClientHandshakeResult>;
}

export async function startClientHandshake(options: ClientHandshakeOptions): Promise<ClientHandshake> {
  const md5 = await keysOrReason('unsupported-key', async () => md5Key(options.clientSpkiPem));
  const { clientKeys, clientKeyPem } = options;
  const [decryptKey, signKey] = clientKeys
    ? [primitives().adoptCryptoKey(clientKeys.decrypt), primitives().adoptCryptoKey(clientKeys.sign)]
    : await keysOrReason('unsupported-key', () => {
        if (clientKeyPem === undefined) throw new KeyFormatError('the client handshake needs clientKeyPem or clientKeys');
        return Promise.all([importRsaOaepPrivateKey(clientKeyPem), importRsaSigningKey(clientKeyPem)]);
      });
  const ephemeral = await generateEphemeral();
  const clientNonce = randomBytes(SIZES.nonce);
  const offered: ChannelVersion[] = options.channels ? [...options.channels] : options.offerHsc2 ? [HSC2_VERSION] : [];
  const c1Args: C1Args = {
    action: 'auth_ssl',
    md5_key: md5,
    channel: 'hsc1',
    ...(offered.length > 0 ? { channels: offered } : {}),
    client_eph: toBase64(ephemeral.publicRaw),
    client_nonce: toBase64(clientNonce),
  };
  let used = false;

  const decrypt = async (b64: string, what: string): Promise<Uint8Array> => {
    try {
      return await primitives().rsaOaepDecrypt(decryptKey, fromBase64(b64));
    } catch (cause) {
      throw new HandshakeError('bad-reply', `A1 ${what} does not decrypt with the client key (not an hsc1 agent, or altered)`, { cause });
    }
  };

  async function finish(a1Args: unknown, finishOptions: FinishOptions = {}): Promise<ClientHandshakeResult> {
    if (used) throw new HandshakeError('bad-reply', 'this handshake was already finished');
    used = true;
    if (!isRecord(a1Args)) throw new HandshakeError('bad-reply', 'A1 args are not an object');
    const { test_string: encTest, new_ssl_key: pieces } = a1Args;
    if (!isBase64(encTest) || encTest.length > MAX_RSA_B64) throw new HandshakeError('bad-reply', 'A1 test_string is missing or not base64');
    if (!isPieceList(pieces)) throw new HandshakeError('bad-reply', 'A1 new_ssl_key is not a short array of base64 pieces');
    // RSA private operations dominate the handshake; side by side where the engine has a thread pool (WebCrypto).
    const [testBytes, ...chunks] = await Promise.all([decrypt(encTest, 'test_string'), ...pieces.map((p, i) => decrypt(p, `new_ssl_key[${i}]`))]);
    const testString = utf8DecodeOr(testBytes ?? new Uint8Array(0), 'test_string');
    if (!TEST_STRING_PATTERN.test(testString)) throw new HandshakeError('bad-reply', 'A1 test_string is not 32 letters and digits');
    let body: unknown;
    try {
      body = JSON.parse(utf8Decode(concatBytes(...chunks)));
    } catch (cause) {
      throw new HandshakeError('bad-reply', 'A1 new_ssl_key pieces do not form JSON', { cause });
    }
    if (!isRecord(body) || (body.v !== HSC1_VERSION && !offered.includes(body.v as ChannelVersion)))
      throw new HandshakeError('downgrade', 'A1 is not an hsc1 reply (nor a version this client offered); refusing a weaker channel');
    const version = body.v as ChannelVersion;
    const agentEph = fixedField(body, 'agent_eph', SIZES.eph);
    const agentNonce = fixedField(body, 'agent_nonce', SIZES.nonce);
    const hostKey = fixedField(body, 'host_key', SIZES.hostKey);
    const hostSig = fixedField(body, 'host_sig', SIZES.hostSig);
    if (!agentEph || !agentNonce || !hostKey || !hostSig) throw new HandshakeError('bad-reply', 'A1 hsc1 fields are missing or have the wrong size');

    const transcript = await transcriptHash({ md5Key: md5, clientEph: ephemeral.publicRaw, clientNonce, agentEph, agentNonce, hostKey }, version);
    let signatureOk = false;
    try {
      signatureOk = await primitives().ed25519Verify(await importEd25519PublicKey(hostKey), hostSig, hostSignedMessage(transcript, version));
    } catch {
      signatureOk = false;
    }
    if (!signatureOk) throw new HandshakeError('bad-signature', 'A1 host signature does not verify: the reply was altered or forged');

    const presented = await hostKeyFingerprint(hostKey);
    if (finishOptions.pinnedHostKey !== undefined) {
      let pinned: Uint8Array;
      try {
        pinned = fromBase64(finishOptions.pinnedHostKey);
      } catch (cause) {
        throw new HandshakeError('host-key-mismatch', 'the pinned host key is not base64', { cause });
      }
      if (!constantTimeEqual(pinned, hostKey)) {
        const pinnedFp = pinned.length === SIZES.hostKey ? await hostKeyFingerprint(pinned) : `(invalid pinned key of ${pinned.length} bytes)`;
        throw new HandshakeError(
          'host-key-mismatch',
          `host key mismatch: pinned ${pinnedFp}, agent presented ${presented}; possible interception, not connecting`,
          {
            fingerprints: { pinned: pinnedFp, presented },
          },
        );
      }
    }

    let shared: Uint8Array;
    try {
      shared = await x25519(ephemeral.privateKey, agentEph);
    } catch (cause) {
      throw new HandshakeError('bad-reply', 'A1 agent_eph is not a usable X25519 key', { cause });
    }
    const secrets = await deriveSessionSecrets(shared, transcript, version);
    shared.fill(0);
    const channel = await channelFrom('client', secrets, version);
    const signature = await primitives().rsaSign(signKey, clientSignedMessage(transcript, testString, version));
    const c2Args: C2Args = { signature: toBase64(signature), ...(offered.length > 0 ? { offered } : {}) };
    return { channel, hostKey: toBase64(hostKey), hostKeyFingerprint: presented, testString, c2Args, resumptionSecret: secrets.resumption };
  }

  return { c1Args, finish };
}

function isPieceList(value: unknown): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.length <= MAX_PIECES && value.every((p) => isBase64(p) && p.length <= MAX_RSA_B64);
}

function utf8DecodeOr(bytes: Uint8Array, what: string): string {
  try {
    return utf8Decode(bytes);
  } catch (cause) {
    throw new HandshakeError('bad-reply', `A1 ${what} is not UTF-8`, { cause });
  }
}

// ---- agent side ----

export interface AgentHandshakeOptions {
  /** The C1 `args` as received. */
  c1Args: unknown;
  /** The RSA public key registered with that md5_key (SPKI PEM or certificate). */
  clientSpkiPem: string;
  /** The host key as PKCS#8 PEM; or pass `hostKey` (already loaded) instead. */
  hostKeyPem?: string;
  /** The host key's raw public key (base64); checked against `hostKeyPem` if given. */
  hostPublicRaw?: string;
  hostKey?: HostKey;
  /** The versions beyond hsc1 this agent answers with (default both; `[HSC2_VERSION]` answers as an agent before hsc3). */
  versions?: readonly ChannelVersion[];
  /** false: answer as an agent that knows only hsc1 (the same as `versions: []`). */
  acceptHsc2?: boolean;
}

export interface AgentHandshake {
  a1Args: A1Args;
  channel: SecureChannel;
  /** The version chosen (the channel's). */
  version: ChannelVersion;
  /** The client key's md5_key (equal to C1's). */
  md5Key: string;
  /**
   * Checks C2's signature with the key of step 2. Throws HandshakeError `downgrade` when C2 says the
   * client offered versions C1 did not carry here (the offer was stripped on the way).
   */
  verifyC2(c2Args: unknown): Promise<boolean>;
  /** What a resumption ticket issued after C2 stands for (resumption.ts). */
  resumptionSecret: Uint8Array;
}

/** Whether C1 args ask for the hsc1 channel (the agent routes other forms elsewhere or refuses them). */
export function isHsc1Request(c1Args: unknown): boolean {
  return isRecord(c1Args) && c1Args.channel === HSC1_VERSION;
}

export async function answerClientHandshake(options: AgentHandshakeOptions): Promise<AgentHandshake> {
  const c1 = options.c1Args;
  if (!isRecord(c1)) throw new HandshakeError('bad-request', 'C1 args are not an object');
  if (c1.channel !== HSC1_VERSION)
    throw new HandshakeError('downgrade', 'C1 does not ask for the hsc1 channel; the unprotected form is refused through a bridge');
  const md5 = await keysOrReason('unsupported-key', async () => md5Key(options.clientSpkiPem));
  if (c1.md5_key !== md5) throw new HandshakeError('bad-request', 'C1 md5_key does not name the supplied client key');
  const clientEph = fixedField(c1, 'client_eph', SIZES.eph);
  const clientNonce = fixedField(c1, 'client_nonce', SIZES.nonce);
  if (!clientEph || !clientNonce) throw new HandshakeError('bad-request', 'C1 client_eph and client_nonce must be 32 bytes each, base64');
  const offeredList = offeredVersions(c1.channels);
  if (!offeredList) throw new HandshakeError('bad-request', 'C1 channels must be a short list of channel version names');
  const offered: ChannelVersion[] = offeredList;
  const spoken = options.acceptHsc2 === false ? [] : (options.versions ?? [HSC3_VERSION, HSC2_VERSION]);
  const version = chosenVersion(offered, spoken);

  // Only RSA can receive the A1 secrets (OAEP); 190-byte pieces need at least 2048 bits.
  const [encryptKey, verifyKey] = await keysOrReason('unsupported-key', () =>
    Promise.all([importRsaOaepPublicKey(options.clientSpkiPem), importRsaVerifyKey(options.clientSpkiPem)]),
  );
  const bits = primitives().rsaModulusBits(encryptKey);
  if (bits < 2048) throw new HandshakeError('unsupported-key', `the client key has ${bits} bits; the channel needs RSA of at least 2048`);

  // A broken host key is the agent's own configuration problem: its KeyFormatError propagates as is.
  let host = options.hostKey;
  if (!host) {
    const pem = options.hostKeyPem;
    if (pem === undefined) throw new TypeError('answerClientHandshake needs hostKey or hostKeyPem');
    host = await hostKeyFromPem(pem, options.hostPublicRaw);
  }
  const hostKey = fromBase64(host.publicRaw);

  const ephemeral = await generateEphemeral();
  const agentNonce = randomBytes(SIZES.nonce);
  const testString = randomTestString();
  let shared: Uint8Array;
  try {
    shared = await x25519(ephemeral.privateKey, clientEph);
  } catch (cause) {
    throw new HandshakeError('bad-request', 'C1 client_eph is not a usable X25519 key', { cause });
  }
  const transcript = await transcriptHash({ md5Key: md5, clientEph, clientNonce, agentEph: ephemeral.publicRaw, agentNonce, hostKey }, version);
  const hostSig = await primitives().ed25519Sign(host.privateKey, hostSignedMessage(transcript, version));
  const secrets = await deriveSessionSecrets(shared, transcript, version);
  shared.fill(0);
  const channel = await channelFrom('agent', secrets, version);

  const body = utf8Encode(
    JSON.stringify({
      v: version,
      agent_eph: toBase64(ephemeral.publicRaw),
      agent_nonce: toBase64(agentNonce),
      host_key: host.publicRaw,
      host_sig: toBase64(hostSig),
    }),
  );
  const encrypt = async (bytes: Uint8Array) => toBase64(await primitives().rsaOaepEncrypt(encryptKey, bytes));
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < body.length; i += PIECE_BYTES) chunks.push(body.subarray(i, i + PIECE_BYTES));
  const [encTest, ...pieces] = await Promise.all([encrypt(utf8Encode(testString)), ...chunks.map(encrypt)]);

  const signed = clientSignedMessage(transcript, testString, version);
  async function verifyC2(c2Args: unknown): Promise<boolean> {
    if (!isRecord(c2Args) || !isBase64(c2Args.signature) || c2Args.signature.length > MAX_RSA_B64) return false;
    const claimed = offeredVersions(c2Args.offered);
    if (!claimed) return false;
    if (claimed.some((v) => !offered.includes(v))) {
      throw new HandshakeError('downgrade', `the client offered ${claimed.join(', ')} but C1 arrived without it: the offer was stripped on the way`);
    }
    try {
      return await primitives().rsaVerify(verifyKey, fromBase64(c2Args.signature), signed);
    } catch {
      return false;
    }
  }

  return { a1Args: { test_string: encTest ?? '', new_ssl_key: pieces }, channel, version, md5Key: md5, verifyC2, resumptionSecret: secrets.resumption };
}
