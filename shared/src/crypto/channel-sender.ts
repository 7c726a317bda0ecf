/**
 * One side's sending half of a channel (docs/bridge-protocol.md §3.10), for every version: hsc1 seals
 * each envelope into a text frame, hsc2 into a binary frame, and hsc3 coalesces: envelopes sent in
 * the same tick wait in a queue and leave as one sealed record, like a TLS record carrying several
 * application writes, so the AEAD call and the WebSocket and relay frame are paid once per burst.
 *
 * The queue is flushed by a microtask (`queueMicrotask`: in browsers, Workers and Node alike; it runs
 * once the code that sent has returned and the promise reactions queued before it have run, so
 * replies produced in one pass over a batch leave together), never later: coalescing adds no wait.
 * `process.nextTick` would flush before those promise reactions and split such a burst; a timer
 * would add latency. A queue that reaches FLUSH_BYTES (or a record's entry limit) flushes at once.
 *
 * Frames reach the output in send order on every engine (inline node:crypto: at once; WebCrypto:
 * chained), as the receiver insists on consecutive sequence numbers.
 */
import { takeFrame, type PooledFrame } from './channel-frame-pool.ts';
import { MAX_RECORD_ENVELOPES, MAX_RECORD_PLAINTEXT_BYTES, packRecord } from './channel-records.ts';
import type { SecureChannel } from './channel.ts';
import { utf8EncodeIntoSome } from './subtle.ts';
import { HSC1_VERSION, HSC3_VERSION } from './transcript.ts';

export interface ChannelSenderOutput {
  /** hsc1: a sealed text body (the relay frame is `<destination>\n` then this). */
  text(frame: string): void;
  /**
   * hsc2, hsc3: a whole binary relay frame, the destination line in front. With `releasesFrames`,
   * `release` is given too: the output calls it once it no longer needs `frame` (`ws`: in the send
   * callback, when the socket has written it), and from then on must not touch it.
   */
  binary(frame: Uint8Array, release?: () => void): void;
  /** Sealing failed: the channel is dead (a too-large envelope is not this: `send` throws it). */
  failed(cause: unknown): void;
  /**
   * Whether `binary` calls `release` (or would have no use for the frame once it returned): inline
   * seals then go into buffers that came back (channel-frame-pool.ts) rather than new ones. An
   * output that cannot say when its transport is done with a frame (a WHATWG WebSocket) leaves it unset.
   */
  readonly releasesFrames?: boolean;
}

/** The runtime's microtask queue (shared compiles without DOM or Node types; every runtime here has it). */
const queueMicrotask: (task: () => void) => void =
  (globalThis as { queueMicrotask?: (task: () => void) => void }).queueMicrotask ?? ((task) => void Promise.resolve().then(task));

/**
 * UTF-16 units queued (at least as many bytes) at which a queue is sealed without waiting for the
 * tick's end; an envelope that would take the queue past it first seals what is queued, so records
 * stay under it unless one envelope alone is larger. Measured (relay bench, 16 KiB × 64): records of
 * 32–48 KiB cost the bridge less per envelope than an hsc2 frame each (17.6 and 14.7 µs against 22),
 * records of 64 KiB and more twice as much (41–44 µs): the per-call saving is a few µs, so larger
 * records are no gain.
 */
export const FLUSH_BYTES = 48 * 1024;

/**
 * Record plaintexts are laid out in a buffer shared by all senders: a flush uses it from start to
 * seal and both engines are done with their input when the seal call returns (aead.ts; WebCrypto
 * copies it before `encrypt` returns). A record that could need more gets its own.
 */
const SCRATCH_BYTES = 1024 * 1024;
let scratch: Uint8Array | null = null;

function recordBuffer(worst: number): Uint8Array {
  const size = Math.min(worst, MAX_RECORD_PLAINTEXT_BYTES);
  if (size > SCRATCH_BYTES) return new Uint8Array(size);
  scratch ??= new Uint8Array(SCRATCH_BYTES);
  return scratch.subarray(0, size);
}

export class ChannelSender {
  private readonly channel: SecureChannel;
  private readonly head: Uint8Array;
  private readonly output: ChannelSenderOutput;
  private readonly flushBytes: number;
  /** Frames still being sealed by an asynchronous engine, in order. */
  private tail: Promise<unknown> = Promise.resolve();
  private queue: string[] = [];
  private queuedUnits = 0;
  private scheduled = false;
  private readonly flushNow = () => this.flush();
  private readonly toText = (frame: string) => this.output.text(frame);
  private readonly toBinary = (frame: Uint8Array) => this.output.binary(frame);

  /** `head` is the relay frame's first line (`<destination>\n`), put in front of every binary frame. */
  constructor(channel: SecureChannel, head: Uint8Array, output: ChannelSenderOutput, options: { flushBytes?: number } = {}) {
    this.channel = channel;
    this.head = head;
    this.output = output;
    this.flushBytes = options.flushBytes ?? FLUSH_BYTES;
  }

  /**
   * Seals and sends one envelope (hsc3: queued until the end of the tick). Throws RangeError for an
   * envelope the channel cannot carry (too large, or empty); the channel stays usable.
   */
  send(text: string): void {
    const channel = this.channel;
    try {
      channel.checkEnvelope(text);
    } catch (cause) {
      if (cause instanceof RangeError) throw cause;
      this.output.failed(cause);
      return;
    }
    if (channel.version === HSC3_VERSION) {
      if (this.queue.length > 0 && this.queuedUnits + text.length > this.flushBytes) this.flush();
      this.queue.push(text);
      this.queuedUnits += text.length;
      if (this.queuedUnits >= this.flushBytes || this.queue.length >= MAX_RECORD_ENVELOPES) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(this.flushNow);
      }
      return;
    }
    if (channel.version === HSC1_VERSION) {
      this.chain(channel.seal(text), this.toText);
      return;
    }
    if (channel.inline) return this.sealInline((allocate) => channel.sealBinarySync(text, this.head, allocate));
    this.chain(channel.sealBinary(text, this.head), this.toBinary);
  }

  /** Seals what is queued (hsc3) now rather than at the end of the tick; nothing else to do otherwise. */
  flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    if (queue.length === 0) return;
    this.queue = [];
    this.queuedUnits = 0;
    const channel = this.channel;
    if (channel.closed) return; // nothing more leaves a dead channel
    let from = 0;
    while (from < queue.length) {
      if (channel.closed) return; // an output failed on the record before
      let worst = 0;
      for (let i = from; i < queue.length && worst < MAX_RECORD_PLAINTEXT_BYTES; i++) worst += 4 + queue[i]!.length * 3;
      const buffer = recordBuffer(worst);
      const { taken, bytes } = packRecord(queue, from, buffer, utf8EncodeIntoSome);
      if (taken === 0) {
        // Cannot happen: `send` checked each envelope against a limit well under a record's.
        this.output.failed(new RangeError('an envelope does not fit in a record'));
        return;
      }
      from += taken;
      this.sealRecord(buffer.subarray(0, bytes));
    }
  }

  /** Resolves once every frame sent so far has reached the output (or failed). */
  async drained(): Promise<void> {
    this.flush();
    await this.tail;
  }

  private sealRecord(record: Uint8Array): void {
    const channel = this.channel;
    if (channel.inline) return this.sealInline((allocate) => channel.sealRecordSync(record, this.head, allocate));
    this.chain(channel.sealRecord(record, this.head), this.toBinary);
  }

  /**
   * An inline engine's seal, its frame handed over at once; a seal that throws fails the output. For
   * an output that releases frames, sealed into a pooled buffer (`allocate` is called at most once).
   */
  private sealInline(seal: (allocate?: (size: number) => Uint8Array) => Uint8Array): void {
    let pooled: PooledFrame | null = null;
    const allocate = this.output.releasesFrames
      ? (size: number) => {
          pooled = takeFrame(size);
          return pooled.frame;
        }
      : undefined;
    let frame: Uint8Array;
    try {
      frame = seal(allocate);
    } catch (cause) {
      (pooled as PooledFrame | null)?.release(); // not handed to anyone
      this.output.failed(cause);
      return;
    }
    this.handOver(frame, (pooled as PooledFrame | null)?.release);
  }

  /**
   * A sealed frame to the output. An output that throws (its socket gone) fails the channel through
   * `failed`: whether the frame left is unknown, so nothing may follow it; and a flush runs in a
   * microtask, where the throw would be an uncaught exception (in Node, the process's end). A pooled
   * frame whose output threw is not taken back: the output may still hold it.
   */
  private handOver(frame: Uint8Array, release?: () => void): void {
    try {
      if (release) this.output.binary(frame, release);
      else this.output.binary(frame);
    } catch (cause) {
      this.broken(cause);
    }
  }

  private broken(cause: unknown): void {
    this.channel.close(`sending failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.output.failed(cause);
  }

  /**
   * An asynchronous seal's frame goes out after every earlier one. A failed seal, or an output that
   * throws, goes to `failed`; the chain itself never rejects (nothing would handle it).
   */
  private chain<F>(sealed: Promise<F>, deliver: (frame: F) => void): void {
    this.tail = this.tail.then(() =>
      sealed.then(
        (frame) => {
          if (this.channel.closed) return; // an earlier frame's output failed: nothing may follow it
          try {
            deliver(frame);
          } catch (cause) {
            this.broken(cause);
          }
        },
        (cause: unknown) => this.output.failed(cause),
      ),
    );
  }
}
