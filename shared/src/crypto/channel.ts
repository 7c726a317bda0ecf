/**
 * Sealed frames of the hsc1 channel (docs/bridge-protocol.md §3 steps 5–6):
 *
 *   frame = "hsc1." + base64( seq(8, big-endian) ‖ AES-256-GCM ciphertext ‖ tag(16) )
 *   nonce = 0x00000000 ‖ seq          AAD = "hostadm-hsc1" ‖ sid ‖ direction(1) ‖ seq
 *
 * A SecureChannel belongs to one side: it seals with that side's outbound key and direction byte and
 * opens with the inbound ones, so a frame reflected back to its sender fails authentication.
 *
 * WebCrypto is asynchronous, so several seal/open calls may be in flight at once (that is how bulk
 * throughput is reached). Order is still exact: a sequence number is taken when `seal` is called, and
 * results (and failures) are delivered strictly in call order. For `open`, each frame is checked
 * against the expected seq only when every earlier frame has been settled, so the first bad frame in
 * arrival order decides the reason. Any failure kills the channel: every later or still pending call
 * rejects with reason `closed`.
 */
import { importAeadKey, type AeadKey } from './aead.ts';
import { fromBase64Loose, fromBase64LooseInto, toBase64, utf8Decode, utf8Encode, utf8EncodeInto } from './subtle.ts';
import { LABEL_TRANSCRIPT, SIZES, type SessionSecrets } from './transcript.ts';
import { LIMITS } from '../protocol/limits.ts';

export const FRAME_PREFIX = 'hsc1.';
export const DIRECTION_C2A = 1;
export const DIRECTION_A2C = 2;
const SEQ_BYTES = 8;
const TAG_BYTES = 16;

/**
 * The largest envelope whose sealed relay frame still fits the bridge's frame limit
 * (LIMITS.maxRelayFrameBytes, docs/bridge-protocol.md §2.7) with the longest destination line
 * (`client-<uuid>\n`, 44 bytes): base64 turns 3 bytes into 4, so the plaintext limit is about 3/4 of
 * the frame limit.
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
}

interface Direction {
  key: AeadKey;
  /** "hostadm-hsc1" ‖ sid ‖ direction; the seq is appended per frame. */
  aadPrefix: Uint8Array;
}

type Opened = { ok: true; plain: Uint8Array } | { ok: false; cause: unknown };

function writeSeq(out: Uint8Array, offset: number, seq: number): void {
  const view = new DataView(out.buffer, out.byteOffset + offset, SEQ_BYTES);
  view.setUint32(0, Math.floor(seq / 0x1_0000_0000));
  view.setUint32(4, seq >>> 0);
}

function readSeq(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEQ_BYTES);
  // Above 2^53 the number loses precision, but any such seq is far beyond the expected one anyway.
  return view.getUint32(0) * 0x1_0000_0000 + view.getUint32(4);
}

function nonceFor(seq: number): Uint8Array {
  const iv = new Uint8Array(12);
  writeSeq(iv, 4, seq);
  return iv;
}

function aadFor(direction: Direction, seq: number): Uint8Array {
  const aad = new Uint8Array(direction.aadPrefix.length + SEQ_BYTES);
  aad.set(direction.aadPrefix);
  writeSeq(aad, direction.aadPrefix.length, seq);
  return aad;
}

function aadPrefix(sid: Uint8Array, direction: number): Uint8Array {
  const label = utf8Encode(LABEL_TRANSCRIPT);
  const out = new Uint8Array(label.length + sid.length + 1);
  out.set(label);
  out.set(sid, label.length);
  out[label.length + sid.length] = direction;
  return out;
}

async function importAesKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt', engine: 'auto' | 'webcrypto'): Promise<AeadKey> {
  if (raw.length !== SIZES.key) throw new RangeError('an hsc1 direction key is 32 bytes');
  return importAeadKey(raw, usage, engine);
}

const settled = () => undefined;

/**
 * The input of every encrypt/decrypt is staged in a reusable buffer (one for sealing, one for opening,
 * shared by all channels; JS is single-threaded and nothing awaits in between): both AEAD engines are
 * done with their input when `seal()`/`open()` return (node:crypto works inline; WebCrypto takes a
 * copy of its input before `encrypt()`/`decrypt()` return (WebCrypto spec: "get a copy of the bytes
 * held by the data parameter" is a method step, before the work goes in parallel), and at 16 KiB
 * allocating a fresh buffer per frame cost more CPU than the encoding itself. Inputs that could need
 * more than SCRATCH_MAX bytes get their own buffer.
 */
const SCRATCH_MAX = 1024 * 1024;
let sealScratch = new Uint8Array(0);
let openScratch = new Uint8Array(0);

function encodeOutbound(text: string): Uint8Array {
  const worst = text.length * 3; // a UTF-16 code unit is at most 3 UTF-8 bytes
  if (worst > SCRATCH_MAX) return utf8Encode(text);
  if (sealScratch.length < worst) sealScratch = new Uint8Array(Math.max(worst, 64 * 1024));
  return sealScratch.subarray(0, utf8EncodeInto(text, sealScratch));
}

function decodeInbound(base64: string): Uint8Array {
  const worst = (base64.length / 4) * 3;
  if (worst > SCRATCH_MAX) return fromBase64Loose(base64);
  if (openScratch.length < worst) openScratch = new Uint8Array(Math.max(worst, 64 * 1024));
  return openScratch.subarray(0, fromBase64LooseInto(base64, openScratch));
}

/**
 * `hsc1.` + base64(seq ‖ ct) without copying ct: seq plus ct's first byte are 9 bytes, a whole number
 * of 3-byte groups, so their base64 followed by the base64 of the rest is the base64 of the whole.
 */
function frameOf(seq: number, ct: Uint8Array): string {
  const head = new Uint8Array(SEQ_BYTES + 1);
  writeSeq(head, 0, seq);
  head[SEQ_BYTES] = ct[0] ?? 0;
  return FRAME_PREFIX + toBase64(head) + toBase64(ct.subarray(1));
}

/**
 * The same frame from ciphertext and tag apart, copying only the last few bytes: base64 parts can be
 * joined as text when every part but the last is a whole number of 3-byte groups.
 */
function frameOfParts(seq: number, ct: Uint8Array, tag: Uint8Array): string {
  if (ct.length === 0) return frameOf(seq, tag);
  const middleEnd = 1 + Math.floor((ct.length - 1) / 3) * 3;
  const tail = new Uint8Array(ct.length - middleEnd + tag.length);
  tail.set(ct.subarray(middleEnd));
  tail.set(tag, ct.length - middleEnd);
  const head = new Uint8Array(SEQ_BYTES + 1);
  writeSeq(head, 0, seq);
  head[SEQ_BYTES] = ct[0]!;
  return FRAME_PREFIX + toBase64(head) + toBase64(ct.subarray(1, middleEnd)) + toBase64(tail);
}

export class SecureChannel {
  readonly role: ChannelRole;
  private readonly outbound: Direction;
  private readonly inbound: Direction;
  private readonly maxPlaintextBytes: number;
  private sendSeq = 0;
  private recvSeq = 0;
  private sendTail: Promise<unknown> = Promise.resolve();
  private recvTail: Promise<unknown> = Promise.resolve();
  private failure: ChannelError | null = null;

  /** Use `SecureChannel.create`; the constructor takes keys that are already imported. */
  private constructor(role: ChannelRole, outbound: Direction, inbound: Direction, options: ChannelOptions) {
    this.role = role;
    this.outbound = outbound;
    this.inbound = inbound;
    this.maxPlaintextBytes = options.maxPlaintextBytes ?? MAX_SEALED_PLAINTEXT_BYTES;
  }

  /**
   * Imports the direction keys once, non-extractable and each for its one use (the outbound key can
   * only encrypt, the inbound one only decrypt). The caller should drop or wipe `secrets` afterwards.
   */
  static async create(role: ChannelRole, secrets: SessionSecrets, options: ChannelOptions = {}): Promise<SecureChannel> {
    if (secrets.sid.length !== SIZES.sid) throw new RangeError('an hsc1 sid is 16 bytes');
    const client = role === 'client';
    const [outKey, inKey] = await Promise.all([
      importAesKey(client ? secrets.kC2a : secrets.kA2c, 'encrypt', options.engine ?? 'auto'),
      importAesKey(client ? secrets.kA2c : secrets.kC2a, 'decrypt', options.engine ?? 'auto'),
    ]);
    const outDir = client ? DIRECTION_C2A : DIRECTION_A2C;
    const inDir = client ? DIRECTION_A2C : DIRECTION_C2A;
    return new SecureChannel(
      role,
      { key: outKey, aadPrefix: aadPrefix(secrets.sid, outDir) },
      { key: inKey, aadPrefix: aadPrefix(secrets.sid, inDir) },
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

  /** Kills the channel on purpose; pending and later calls reject with reason `closed`. */
  close(message = 'channel closed'): void {
    this.failure ??= new ChannelError('closed', message);
  }

  /** Seals one JSON envelope into a relay body. Frames must be sent in the order `seal` was called. */
  seal(envelopeJson: string): Promise<string> {
    if (this.failure) return Promise.reject(this.closedError());
    if (typeof envelopeJson !== 'string') return Promise.reject(this.fail('malformed', 'seal needs a JSON string'));
    const plain = encodeOutbound(envelopeJson);
    if (plain.length > this.maxPlaintextBytes) {
      // Refused before a seq is taken, so the channel stays usable: the caller can send an error instead.
      return Promise.reject(new RangeError(`envelope of ${plain.length} bytes exceeds the sealed-frame limit of ${this.maxPlaintextBytes}`));
    }
    if (this.sendSeq >= Number.MAX_SAFE_INTEGER) return Promise.reject(this.fail('closed', 'send sequence exhausted'));
    const seq = this.sendSeq++;
    const key = this.outbound.key;
    if (key.sealSync) {
      // An inline engine: frames are done in call order, so no chain and no promise per step.
      try {
        const { ciphertext, tag } = key.sealSync(nonceFor(seq), aadFor(this.outbound, seq), plain);
        return Promise.resolve(frameOfParts(seq, ciphertext, tag));
      } catch (cause) {
        return Promise.reject(this.fail('malformed', 'encryption failed', cause));
      }
    }
    const sealed = key.seal(nonceFor(seq), aadFor(this.outbound, seq), plain).then(
      (ct): Opened => ({ ok: true, plain: ct }),
      (cause: unknown): Opened => ({ ok: false, cause }),
    );
    const result = this.sendTail.then(async () => {
      const r = await sealed;
      if (this.failure) throw this.closedError();
      if (!r.ok) throw this.fail('malformed', 'encryption failed', r.cause);
      return frameOf(seq, r.plain);
    });
    this.sendTail = result.then(settled, settled);
    return result;
  }

  /** Opens one relay body; it must carry exactly the next expected seq of the inbound direction. */
  open(frame: string): Promise<string> {
    if (this.failure) return Promise.reject(this.closedError());
    let parsed: { seq: number; sealed: Uint8Array } | null = null;
    let parseProblem = '';
    if (typeof frame !== 'string' || !frame.startsWith(FRAME_PREFIX)) parseProblem = 'not an hsc1 sealed frame';
    else {
      try {
        // A view of the shared scratch: valid only until the decrypt call below has copied it.
        const bytes = decodeInbound(frame.slice(FRAME_PREFIX.length));
        if (bytes.length < SEQ_BYTES + TAG_BYTES) parseProblem = 'sealed frame too short';
        else parsed = { seq: readSeq(bytes), sealed: bytes.subarray(SEQ_BYTES) };
      } catch {
        parseProblem = 'sealed frame is not valid base64';
      }
    }
    const key = this.inbound.key;
    if (key.openSync) return this.openInline(key.openSync.bind(key), parsed, parseProblem);
    // Decrypt at once (speculatively) so that frames in flight overlap; judge them in order below.
    const opening: Promise<Opened> | null = parsed
      ? this.inbound.key.open(nonceFor(parsed.seq), aadFor(this.inbound, parsed.seq), parsed.sealed).then(
          (pt): Opened => ({ ok: true, plain: pt }),
          (cause: unknown): Opened => ({ ok: false, cause }),
        )
      : null;
    const result = this.recvTail.then(async () => {
      if (this.failure) throw this.closedError();
      if (!parsed || !opening) throw this.fail('malformed', parseProblem);
      const expected = this.recvSeq;
      if (parsed.seq < expected) throw this.fail('replay', `sealed frame seq ${parsed.seq} was already received (expected ${expected}): replay`);
      if (parsed.seq > expected) throw this.fail('gap', `sealed frame seq ${parsed.seq} skips ahead of ${expected}: a frame was dropped or reordered`);
      const r = await opening;
      if (this.failure) throw this.closedError();
      if (!r.ok) throw this.fail('tampered', `sealed frame seq ${parsed.seq} failed authentication: altered, reflected or under another key`, r.cause);
      this.recvSeq++;
      try {
        return utf8Decode(r.plain);
      } catch (cause) {
        throw this.fail('malformed', 'sealed frame plaintext is not UTF-8', cause);
      }
    });
    this.recvTail = result.then(settled, settled);
    return result;
  }

  /** `open` on an inline engine: judged at once, which is call order, as the chain would. */
  private openInline(openSync: NonNullable<AeadKey['openSync']>, parsed: { seq: number; sealed: Uint8Array } | null, parseProblem: string): Promise<string> {
    try {
      if (!parsed) throw this.fail('malformed', parseProblem);
      const expected = this.recvSeq;
      if (parsed.seq < expected) throw this.fail('replay', `sealed frame seq ${parsed.seq} was already received (expected ${expected}): replay`);
      if (parsed.seq > expected) throw this.fail('gap', `sealed frame seq ${parsed.seq} skips ahead of ${expected}: a frame was dropped or reordered`);
      let plain: Uint8Array;
      try {
        plain = openSync(nonceFor(parsed.seq), aadFor(this.inbound, parsed.seq), parsed.sealed);
      } catch (cause) {
        throw this.fail('tampered', `sealed frame seq ${parsed.seq} failed authentication: altered, reflected or under another key`, cause);
      }
      this.recvSeq++;
      try {
        return Promise.resolve(utf8Decode(plain));
      } catch (cause) {
        throw this.fail('malformed', 'sealed frame plaintext is not UTF-8', cause);
      }
    } catch (err) {
      return Promise.reject(err);
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
