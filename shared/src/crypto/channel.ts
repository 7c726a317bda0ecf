/**
 * Sealed frames of the channel (docs/bridge-protocol.md §3 steps 5–6, 9 and 10; layouts in
 * channel-frames.ts and channel-records.ts): hsc1 frames are text (`hsc1.` + base64), hsc2 frames are
 * binary (seq ‖ ciphertext ‖ tag, raw), hsc3 frames are hsc2-shaped records of several envelopes
 * (channel-sender.ts queues what a side sends in one tick into one record).
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
  encodeOutbound,
  hsc1Frame,
  hsc1FrameOfParts,
  hsc2Frame,
  MAX_SEALED_BODY_BYTES,
  MAX_SEALED_PLAINTEXT_BYTES,
  NonceAndAad,
  parseBinary,
  parseText,
  readSeq,
  SEQ_BYTES,
  TAG_BYTES,
  writeSeq,
  type Parsed,
} from './channel-frames.ts';
import { ChannelError, type ChannelErrorReason } from './channel-error.ts';
import { MAX_RECORD_PLAINTEXT_BYTES, RecordLayoutError, splitRecord } from './channel-records.ts';
import { utf8Decode } from './subtle.ts';
import { HSC1_VERSION, HSC2_VERSION, HSC3_VERSION, LABELS, SIZES, type ChannelVersion, type SessionSecrets } from './transcript.ts';

export { FRAME_PREFIX, MAX_SEALED_PLAINTEXT_BYTES } from './channel-frames.ts';
export { ChannelError, type ChannelErrorReason } from './channel-error.ts';
export const DIRECTION_C2A = 1;
export const DIRECTION_A2C = 2;

export type ChannelRole = 'client' | 'agent';

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

async function importAesKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt', engine: 'auto' | 'webcrypto'): Promise<AeadKey> {
  if (raw.length !== SIZES.key) throw new RangeError('a channel direction key is 32 bytes');
  return importAeadKey(raw, usage, engine);
}

const settled = () => undefined;

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
    if (version !== HSC1_VERSION && version !== HSC2_VERSION && version !== HSC3_VERSION) throw new RangeError(`unknown channel version ${String(version)}`);
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
  sealBinarySync(envelopeJson: string, head?: Uint8Array, allocate?: (size: number) => Uint8Array): Uint8Array {
    const key = this.outbound.key;
    if (this.version !== HSC2_VERSION || !key.sealIntoSync) throw new TypeError('sealBinarySync needs an hsc2 channel on an inline engine');
    if (this.failure) throw this.closedError();
    const seq = this.takeSeq(envelopeJson);
    return this.sealIntoSync(seq, encodeOutbound(envelopeJson), head, allocate);
  }

  /**
   * hsc3: seals one record (its plaintext laid out by channel-records.ts `packRecord`) into a binary
   * relay body after `head`; sent in call order. Throws RangeError for an empty or too large record.
   */
  sealRecord(record: Uint8Array, head?: Uint8Array): Promise<Uint8Array> {
    if (this.version !== HSC3_VERSION) return Promise.reject(new TypeError(`sealRecord() makes hsc3 records; this channel is ${this.version}`));
    return this.sealAs(record, (seq, ct, tag) => hsc2Frame(head, seq, ct, tag));
  }

  /**
   * `sealRecord` on an inline engine, without a promise (one allocation per record, as `sealBinarySync`;
   * `allocate`, when given, supplies the frame's buffer instead, `size` bytes all of which are written).
   */
  sealRecordSync(record: Uint8Array, head?: Uint8Array, allocate?: (size: number) => Uint8Array): Uint8Array {
    if (this.version !== HSC3_VERSION || !this.outbound.key.sealIntoSync) throw new TypeError('sealRecordSync needs an hsc3 channel on an inline engine');
    if (this.failure) throw this.closedError();
    return this.sealIntoSync(this.takeRecordSeq(record), record, head, allocate);
  }

  private sealIntoSync(seq: number, plain: Uint8Array, head: Uint8Array | undefined, allocate?: (size: number) => Uint8Array): Uint8Array {
    const key = this.outbound.key;
    const params = this.outbound.params;
    const headLength = head === undefined ? 0 : head.length;
    let frame: Uint8Array;
    try {
      params.set(seq);
      frame = key.sealIntoSync!(params.iv, params.aad, plain, headLength + SEQ_BYTES, allocate);
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
    return this.openParsed(parseText(frame), (plain) => this.decodePlain(plain));
  }

  /** hsc2: opens one binary relay body (`frame` must not change until the promise settles). */
  openBinary(frame: Uint8Array): Promise<string> {
    if (this.failure) return Promise.reject(this.closedError());
    if (this.version !== HSC2_VERSION) return Promise.reject(this.fail('malformed', `an hsc2 frame on an ${this.version} channel`));
    return this.openParsed(parseBinary(frame), (plain) => this.decodePlain(plain));
  }

  /** hsc3: opens one record (a binary relay body): its envelopes in order, all or none. */
  openRecord(frame: Uint8Array): Promise<string[]> {
    if (this.failure) return Promise.reject(this.closedError());
    if (this.version !== HSC3_VERSION) return Promise.reject(this.fail('malformed', `an hsc3 record on an ${this.version} channel`));
    return this.openParsed(parseBinary(frame), (plain) => this.decodeRecord(plain));
  }

  /** `openRecord` on an inline engine, without a promise: throws ChannelError where that rejects. */
  openRecordSync(frame: Uint8Array): string[] {
    return this.decodeRecord(this.openBinaryBytesSync(frame, HSC3_VERSION));
  }

  /** `openBinary` on an inline engine, without a promise: throws ChannelError where that rejects. */
  openBinarySync(frame: Uint8Array): string {
    return this.decodePlain(this.openBinaryBytesSync(frame, HSC2_VERSION));
  }

  private openBinaryBytesSync(frame: Uint8Array, version: ChannelVersion): Uint8Array {
    const key = this.inbound.key;
    if (!key.openSync) throw new TypeError('opening inline needs an inline engine');
    if (this.failure) throw this.closedError();
    if (this.version !== version) throw this.fail('malformed', `an ${version} frame on an ${this.version} channel`);
    if (!(frame instanceof Uint8Array)) throw this.fail('malformed', 'not a binary sealed frame');
    if (frame.length < SEQ_BYTES + TAG_BYTES) throw this.fail('malformed', 'sealed frame too short');
    if (frame.length > MAX_SEALED_BODY_BYTES) throw this.fail('malformed', `sealed frame of ${frame.length} bytes is longer than any peer seals`);
    // Opened from the frame itself (no parsed parts, no views but the cipher's own).
    return this.openAt(key, readSeq(frame), frame, SEQ_BYTES);
  }

  /** Takes the next send seq for `text`, or throws (RangeError: too large, the channel stays usable). */
  private takeSeq(text: string): number {
    this.checkEnvelope(text);
    return this.nextSeq();
  }

  /** Takes the next send seq for a record, or throws (RangeError: empty or too large, the channel stays usable). */
  private takeRecordSeq(record: Uint8Array): number {
    if (!(record instanceof Uint8Array)) throw this.fail('malformed', 'a record is bytes');
    if (record.length === 0 || record.length > MAX_RECORD_PLAINTEXT_BYTES) throw new RangeError(`a record of ${record.length} bytes cannot be sealed`);
    return this.nextSeq();
  }

  private nextSeq(): number {
    if (this.sendSeq >= Number.MAX_SAFE_INTEGER) throw this.fail('closed', 'send sequence exhausted');
    return this.sendSeq++;
  }

  /**
   * Whether `text` may be sealed (hsc1/hsc2: one frame; hsc3: one record entry): throws RangeError when
   * it is too large or (hsc3) empty, and the channel stays usable, so the caller can send an error instead.
   */
  checkEnvelope(text: string): void {
    if (typeof text !== 'string') throw this.fail('malformed', 'seal needs a JSON string');
    if (text.length === 0 && this.version === HSC3_VERSION) throw new RangeError('an empty envelope cannot be a record entry');
    // Checked on the UTF-16 length first: only a text that may be too large is measured in bytes.
    if (text.length * 3 > this.maxPlaintextBytes) {
      const bytes = encodeOutbound(text).length;
      if (bytes > this.maxPlaintextBytes) {
        // Refused before a seq is taken, so the channel stays usable: the caller can send an error instead.
        throw new RangeError(`envelope of ${bytes} bytes exceeds the sealed-frame limit of ${this.maxPlaintextBytes}`);
      }
    }
  }

  /** Seals an envelope (hsc1, hsc2) or a record's plaintext (hsc3), delivered in call order. */
  private sealAs<F>(content: string | Uint8Array, frame: (seq: number, ct: Uint8Array, tag: Uint8Array | null) => F): Promise<F> {
    if (this.failure) return Promise.reject(this.closedError());
    let seq: number;
    try {
      seq = typeof content === 'string' ? this.takeSeq(content) : this.takeRecordSeq(content);
    } catch (err) {
      return Promise.reject(err);
    }
    const plain = typeof content === 'string' ? encodeOutbound(content) : content;
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

  private openParsed<T>(parsed: Parsed, decode: (plain: Uint8Array) => T): Promise<T> {
    const key = this.inbound.key;
    if (key.openSync) {
      try {
        if (typeof parsed === 'string') throw this.fail('malformed', parsed);
        return Promise.resolve(decode(this.openAt(key, parsed.seq, parsed.sealed, 0)));
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
      return decode(r.plain);
    });
    this.recvTail = result.then(settled, settled);
    return result;
  }

  /**
   * Open on an inline engine: judged at once, which is call order, as the chain would. `sealed` holds
   * ciphertext ‖ tag from byte `from` on. Returns the plaintext; throws ChannelError.
   */
  private openAt(key: AeadKey, seq: number, sealed: Uint8Array, from: number): Uint8Array {
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
    return plain;
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

  /** A record's envelopes; a fault in its layout fails the channel (`malformed`) and delivers none. */
  private decodeRecord(plain: Uint8Array): string[] {
    try {
      return splitRecord(plain);
    } catch (cause) {
      if (cause instanceof RecordLayoutError) throw this.fail('malformed', `sealed record: ${cause.message}`, cause);
      throw cause;
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
