/**
 * Sealed frames of the channel (docs/bridge-protocol.md §3 steps 5–6 and 9; layouts in channel-frames.ts):
 * hsc1 frames are text (`hsc1.` + base64), hsc2 frames are binary (seq ‖ ciphertext ‖ tag, raw).
 *
 * A SecureChannel belongs to one side: it seals with that side's outbound key and direction byte and
 * opens with the inbound ones, so a frame reflected back to its sender fails authentication.
 *
 * WebCrypto is asynchronous, so several seal/open calls may be in flight at once (that is how bulk
 * throughput is reached). Order is still exact: a sequence number is taken when `seal` is called, and
 * results (and failures) are delivered strictly in call order. For `open`, each frame is checked
 * against the expected seq only when every earlier frame has been settled, so the first bad frame in
 * arrival order decides the reason. Any failure kills the channel: every later or still pending call
 * rejects with reason `closed`. An inline engine (node:crypto; `inline`) also offers the `…Sync`
 * methods: no promise per frame, the same rules.
 */
import { importAeadKey, type AeadKey } from './aead.ts';
import {
  decodeInbound,
  encodeOutbound,
  FRAME_PREFIX,
  hsc1Frame,
  hsc1FrameOfParts,
  hsc2Frame,
  NonceAndAad,
  readSeq,
  SEQ_BYTES,
  TAG_BYTES,
  writeSeq,
} from './channel-frames.ts';
import { utf8Decode } from './subtle.ts';
import { HSC1_VERSION, HSC2_VERSION, LABELS, SIZES, type ChannelVersion, type SessionSecrets } from './transcript.ts';
import { LIMITS } from '../protocol/limits.ts';

export { FRAME_PREFIX } from './channel-frames.ts';
export const DIRECTION_C2A = 1;
export const DIRECTION_A2C = 2;

/**
 * The largest envelope whose sealed relay frame still fits the bridge's frame limit
 * (LIMITS.maxRelayFrameBytes, docs/bridge-protocol.md §2.7) with the longest destination line
 * (`client-<uuid>\n`, 44 bytes): base64 turns 3 bytes into 4, so the plaintext limit is about 3/4 of
 * the frame limit. hsc2 keeps the same limit, so whether a reply fits never depends on the version.
 */
export const MAX_SEALED_PLAINTEXT_BYTES = Math.floor((LIMITS.maxRelayFrameBytes - 44 - FRAME_PREFIX.length) / 4) * 3 - SEQ_BYTES - TAG_BYTES;

export type ChannelRole = 'client' | 'agent';
export type ChannelErrorReason = 'replay' | 'gap' | 'tampered' | 'malformed' | 'closed';

export class ChannelError extends Error {
  readonly reason: ChannelErrorReason;

  constructor(reason: ChannelErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChannelError';
    this.reason = reason;
  }
}

export interface ChannelOptions {
  /** Envelopes larger than this (UTF-8 bytes) are refused by `seal` with a RangeError. */
  maxPlaintextBytes?: number;
  /** AES-GCM engine: `auto` (node:crypto where the runtime has it, else WebCrypto; see aead.ts) or `webcrypto`. */
  engine?: 'auto' | 'webcrypto';
  /** The frame format the handshake agreed on (default hsc1). */
  version?: ChannelVersion;
}

interface Direction {
  key: AeadKey;
  params: NonceAndAad;
}

type Opened = { ok: true; plain: Uint8Array } | { ok: false; cause: unknown };
type Parsed = { seq: number; sealed: Uint8Array } | string;

async function importAesKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt', engine: 'auto' | 'webcrypto'): Promise<AeadKey> {
  if (raw.length !== SIZES.key) throw new RangeError('a channel direction key is 32 bytes');
  return importAeadKey(raw, usage, engine);
}

const settled = () => undefined;

/** A binary frame's parts (a view into `frame`: it must stay unchanged until opened), or why it is none. */
function parseBinary(frame: Uint8Array): Parsed {
  if (!(frame instanceof Uint8Array)) return 'not an hsc2 sealed frame';
  if (frame.length < SEQ_BYTES + TAG_BYTES) return 'sealed frame too short';
  return { seq: readSeq(frame), sealed: frame.subarray(SEQ_BYTES) };
}

/** A text frame's parts (a view of the shared scratch: valid until the next decode), or why it is none. */
function parseText(frame: string): Parsed {
  if (typeof frame !== 'string' || !frame.startsWith(FRAME_PREFIX)) return 'not an hsc1 sealed frame';
  try {
    const bytes = decodeInbound(frame.slice(FRAME_PREFIX.length));
    if (bytes.length < SEQ_BYTES + TAG_BYTES) return 'sealed frame too short';
    return { seq: readSeq(bytes), sealed: bytes.subarray(SEQ_BYTES) };
  } catch {
    return 'sealed frame is not valid base64';
  }
}

export class SecureChannel {
  readonly role: ChannelRole;
  readonly version: ChannelVersion;
  private readonly outbound: Direction;
  private readonly inbound: Direction;
  private readonly maxPlaintextBytes: number;
  private sendSeq = 0;
  private recvSeq = 0;
  private sendTail: Promise<unknown> = Promise.resolve();
  private recvTail: Promise<unknown> = Promise.resolve();
  private failure: ChannelError | null = null;

  /** Use `SecureChannel.create`; the constructor takes keys that are already imported. */
  private constructor(role: ChannelRole, version: ChannelVersion, outbound: Direction, inbound: Direction, options: ChannelOptions) {
    this.role = role;
    this.version = version;
    this.outbound = outbound;
    this.inbound = inbound;
    this.maxPlaintextBytes = options.maxPlaintextBytes ?? MAX_SEALED_PLAINTEXT_BYTES;
  }

  /**
   * Imports the direction keys once, non-extractable and each for its one use (the outbound key can
   * only encrypt, the inbound one only decrypt). The caller should drop or wipe `secrets` afterwards.
   */
  static async create(role: ChannelRole, secrets: SessionSecrets, options: ChannelOptions = {}): Promise<SecureChannel> {
    if (secrets.sid.length !== SIZES.sid) throw new RangeError('a channel sid is 16 bytes');
    const version = options.version ?? HSC1_VERSION;
    if (version !== HSC1_VERSION && version !== HSC2_VERSION) throw new RangeError(`unknown channel version ${String(version)}`);
    const client = role === 'client';
    const [outKey, inKey] = await Promise.all([
      importAesKey(client ? secrets.kC2a : secrets.kA2c, 'encrypt', options.engine ?? 'auto'),
      importAesKey(client ? secrets.kA2c : secrets.kC2a, 'decrypt', options.engine ?? 'auto'),
    ]);
    const outDir = client ? DIRECTION_C2A : DIRECTION_A2C;
    const inDir = client ? DIRECTION_A2C : DIRECTION_C2A;
    const label = LABELS[version].frame;
    return new SecureChannel(
      role,
      version,
      { key: outKey, params: new NonceAndAad(label, secrets.sid, outDir, outKey.sealSync !== undefined) },
      { key: inKey, params: new NonceAndAad(label, secrets.sid, inDir, inKey.openSync !== undefined) },
      options,
    );
  }

  /** Whether the channel is dead (after an error or `close`). */
  get closed(): boolean {
    return this.failure !== null;
  }

  /** The error that killed the channel, if any. */
  get error(): ChannelError | null {
    return this.failure;
  }

  /** Whether seal and open work inline (node:crypto): the `…Sync` methods may then be used. */
  get inline(): boolean {
    return this.outbound.key.sealIntoSync !== undefined && this.inbound.key.openSync !== undefined;
  }

  /** Kills the channel on purpose; pending and later calls reject with reason `closed`. */
  close(message = 'channel closed'): void {
    this.failure ??= new ChannelError('closed', message);
  }

  /** hsc1: seals one JSON envelope into a text relay body. Frames must be sent in the order `seal` was called. */
  seal(envelopeJson: string): Promise<string> {
    if (this.version !== HSC1_VERSION) return Promise.reject(new TypeError(`seal() makes hsc1 frames; this channel is ${this.version}: use sealBinary()`));
    return this.sealAs(envelopeJson, (seq, ct, tag) => (tag ? hsc1FrameOfParts(seq, ct, tag) : hsc1Frame(seq, ct)));
  }

  /**
   * hsc2: seals one JSON envelope into a binary relay body, after `head` when given (the relay frame's
   * first line, `<destination>\n`, so that the frame is one buffer). Sent in call order.
   */
  sealBinary(envelopeJson: string, head?: Uint8Array): Promise<Uint8Array> {
    if (this.version !== HSC2_VERSION) return Promise.reject(new TypeError(`sealBinary() makes hsc2 frames; this channel is ${this.version}`));
    return this.sealAs(envelopeJson, (seq, ct, tag) => hsc2Frame(head, seq, ct, tag));
  }

  /**
   * `sealBinary` on an inline engine, without a promise: throws where that rejects. The frame is made
   * in one allocation (`head`, seq, ciphertext, tag), nothing else is allocated per frame here.
   */
  sealBinarySync(envelopeJson: string, head?: Uint8Array): Uint8Array {
    const key = this.outbound.key;
    if (this.version !== HSC2_VERSION || !key.sealIntoSync) throw new TypeError('sealBinarySync needs an hsc2 channel on an inline engine');
    if (this.failure) throw this.closedError();
    const seq = this.takeSeq(envelopeJson);
    const plain = encodeOutbound(envelopeJson);
    const params = this.outbound.params;
    const headLength = head === undefined ? 0 : head.length;
    let frame: Uint8Array;
    try {
      params.set(seq);
      frame = key.sealIntoSync(params.iv, params.aad, plain, headLength + SEQ_BYTES);
    } catch (cause) {
      throw this.fail('malformed', 'encryption failed', cause);
    }
    if (head !== undefined) frame.set(head);
    writeSeq(frame, headLength, seq);
    return frame;
  }

  /** hsc1: opens one text relay body; it must carry exactly the next expected seq of the inbound direction. */
  open(frame: string): Promise<string> {
    if (this.failure) return Promise.reject(this.closedError());
    if (this.version !== HSC1_VERSION) return Promise.reject(this.fail('malformed', `a text frame on an ${this.version} channel (its frames are binary)`));
    return this.openParsed(parseText(frame));
  }

  /** hsc2: opens one binary relay body (`frame` must not change until the promise settles). */
  openBinary(frame: Uint8Array): Promise<string> {
    if (this.failure) return Promise.reject(this.closedError());
    if (this.version !== HSC2_VERSION) return Promise.reject(this.fail('malformed', `a binary frame on an ${this.version} channel (its frames are text)`));
    return this.openParsed(parseBinary(frame));
  }

  /** `openBinary` on an inline engine, without a promise: throws ChannelError where that rejects. */
  openBinarySync(frame: Uint8Array): string {
    const key = this.inbound.key;
    if (!key.openSync) throw new TypeError('openBinarySync needs an inline engine');
    if (this.failure) throw this.closedError();
    if (this.version !== HSC2_VERSION) throw this.fail('malformed', `a binary frame on an ${this.version} channel (its frames are text)`);
    if (!(frame instanceof Uint8Array)) throw this.fail('malformed', 'not an hsc2 sealed frame');
    if (frame.length < SEQ_BYTES + TAG_BYTES) throw this.fail('malformed', 'sealed frame too short');
    // Opened from the frame itself (no parsed parts, no views but the cipher's own).
    return this.openAt(key, readSeq(frame), frame, SEQ_BYTES);
  }

  /** Takes the next send seq for `text`, or throws (RangeError: too large, the channel stays usable). */
  private takeSeq(text: string): number {
    if (typeof text !== 'string') throw this.fail('malformed', 'seal needs a JSON string');
    // Checked on the UTF-16 length first: only a text that may be too large is measured in bytes.
    if (text.length * 3 > this.maxPlaintextBytes) {
      const bytes = encodeOutbound(text).length;
      if (bytes > this.maxPlaintextBytes) {
        // Refused before a seq is taken, so the channel stays usable: the caller can send an error instead.
        throw new RangeError(`envelope of ${bytes} bytes exceeds the sealed-frame limit of ${this.maxPlaintextBytes}`);
      }
    }
    if (this.sendSeq >= Number.MAX_SAFE_INTEGER) throw this.fail('closed', 'send sequence exhausted');
    return this.sendSeq++;
  }

  private sealAs<F>(envelopeJson: string, frame: (seq: number, ct: Uint8Array, tag: Uint8Array | null) => F): Promise<F> {
    if (this.failure) return Promise.reject(this.closedError());
    let seq: number;
    try {
      seq = this.takeSeq(envelopeJson);
    } catch (err) {
      return Promise.reject(err);
    }
    const plain = encodeOutbound(envelopeJson);
    const key = this.outbound.key;
    const [iv, aad] = this.outbound.params.for(seq);
    if (key.sealSync) {
      // An inline engine: frames are done in call order, so no chain and no promise per step.
      try {
        const { ciphertext, tag } = key.sealSync(iv, aad, plain);
        return Promise.resolve(frame(seq, ciphertext, tag));
      } catch (cause) {
        return Promise.reject(this.fail('malformed', 'encryption failed', cause));
      }
    }
    const sealed = key.seal(iv, aad, plain).then(
      (ct): Opened => ({ ok: true, plain: ct }),
      (cause: unknown): Opened => ({ ok: false, cause }),
    );
    const result = this.sendTail.then(async () => {
      const r = await sealed;
      if (this.failure) throw this.closedError();
      if (!r.ok) throw this.fail('malformed', 'encryption failed', r.cause);
      return frame(seq, r.plain, null);
    });
    this.sendTail = result.then(settled, settled);
    return result;
  }

  private openParsed(parsed: Parsed): Promise<string> {
    const key = this.inbound.key;
    if (key.openSync) {
      try {
        if (typeof parsed === 'string') throw this.fail('malformed', parsed);
        return Promise.resolve(this.openAt(key, parsed.seq, parsed.sealed, 0));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    // Decrypt at once (speculatively) so that frames in flight overlap; judge them in order below.
    let opening: Promise<Opened> | null = null;
    if (typeof parsed !== 'string') {
      const [iv, aad] = this.inbound.params.for(parsed.seq);
      opening = key.open(iv, aad, parsed.sealed).then(
        (pt): Opened => ({ ok: true, plain: pt }),
        (cause: unknown): Opened => ({ ok: false, cause }),
      );
    }
    const result = this.recvTail.then(async () => {
      if (this.failure) throw this.closedError();
      if (typeof parsed === 'string' || !opening) throw this.fail('malformed', typeof parsed === 'string' ? parsed : 'unparsed frame');
      this.checkSeq(parsed.seq);
      const r = await opening;
      if (this.failure) throw this.closedError();
      if (!r.ok) throw this.fail('tampered', `sealed frame seq ${parsed.seq} failed authentication: altered, reflected or under another key`, r.cause);
      this.recvSeq++;
      return this.decodePlain(r.plain);
    });
    this.recvTail = result.then(settled, settled);
    return result;
  }

  /**
   * Open on an inline engine: judged at once, which is call order, as the chain would. `sealed` holds
   * ciphertext ‖ tag from byte `from` on. Throws ChannelError.
   */
  private openAt(key: AeadKey, seq: number, sealed: Uint8Array, from: number): string {
    this.checkSeq(seq);
    let plain: Uint8Array;
    try {
      const params = this.inbound.params;
      params.set(seq);
      plain = key.openSync!(params.iv, params.aad, sealed, from);
    } catch (cause) {
      throw this.fail('tampered', `sealed frame seq ${seq} failed authentication: altered, reflected or under another key`, cause);
    }
    this.recvSeq++;
    return this.decodePlain(plain);
  }

  private checkSeq(seq: number): void {
    const expected = this.recvSeq;
    if (seq < expected) throw this.fail('replay', `sealed frame seq ${seq} was already received (expected ${expected}): replay`);
    if (seq > expected) throw this.fail('gap', `sealed frame seq ${seq} skips ahead of ${expected}: a frame was dropped or reordered`);
  }

  private decodePlain(plain: Uint8Array): string {
    try {
      return utf8Decode(plain);
    } catch (cause) {
      throw this.fail('malformed', 'sealed frame plaintext is not UTF-8', cause);
    }
  }

  private fail(reason: ChannelErrorReason, message: string, cause?: unknown): ChannelError {
    const error = new ChannelError(reason, message, cause === undefined ? undefined : { cause });
    this.failure ??= error;
    return error;
  }

  private closedError(): ChannelError {
    const why = this.failure;
    const message =
      why && why.reason !== 'closed' ? `channel is dead after an earlier ${why.reason} error: ${why.message}` : (why?.message ?? 'channel closed');
    return new ChannelError('closed', message, why ? { cause: why } : undefined);
  }
}
