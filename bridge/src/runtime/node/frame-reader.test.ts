/**
 * The frame reader (frame-reader.ts) against `ws` itself: the same bytes, cut into the same reads, go
 * to a server WebSocket with the reader and to one without, and both must do the same thing: the same
 * messages (payload and type) in the same order, the same pings, pongs and errors, the same bytes
 * written back (close frames) and the same state. The reads are made by hand (the `data` events `ws`
 * listens to), so every cut is tested where it falls: inside a header, a mask, a payload, a UTF-8
 * sequence. The inputs play the attacker: unmasked frames, RSV bits, unknown opcodes, control frames
 * too long or fragmented, control frames inside fragmented messages, lengths over the bound (16- and
 * 64-bit, up to 2^64 - 1), invalid UTF-8, a close in the middle of a burst.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import type { Peer } from '../../relay/peer.ts';
import type { Relay } from '../../relay/relay.ts';
import { installReader, type ReaderReceiver } from './frame-reader.ts';
import { SHAPE, type WsInternals } from './parking.ts';

const MAX_PAYLOAD = 1000;

type Event = string;

/** A server-side WebSocket over a stream of our own; `feed` delivers one read. */
function serverSocket(withReader: boolean, closeAfter: number) {
  const written: Buffer[] = [];
  const stream = new Duplex({
    read() {},
    write: (chunk: Buffer, _encoding, done) => {
      written.push(Buffer.from(chunk));
      done();
    },
  });
  const Ws = WebSocket as unknown as new (address: null, protocols: undefined, options: object) => WebSocket & WsInternals;
  // The server's options (a WebSocket made this way has no close timeout of its own: ws's default is the server's).
  const ws = new Ws(null, undefined, { autoPong: false, closeTimeout: 30_000 });
  ws.setSocket(stream, Buffer.alloc(0), { maxPayload: MAX_PAYLOAD, allowSynchronousEvents: true });
  const events: Event[] = [];
  const peer = { state: 'signed-in', closed: false } as Peer;
  let messages = 0;
  const read = { byReader: 0 };
  const message = (data: Buffer, binary: boolean) => {
    events.push(`${binary ? 'binary' : 'text'} ${data.toString('hex')}`);
    // The relay closing the sender in the middle of a burst (as for a frame over its bound).
    if (++messages === closeAfter) {
      peer.closed = true;
      ws.close(4000, 'closed by the relay');
    }
  };
  if (withReader) {
    const relay = {
      receive: (_peer: Peer, data: Buffer, binary: boolean) => {
        read.byReader++;
        message(data, binary);
      },
    } as unknown as Relay;
    (ws as unknown as { link: unknown }).link = { peer, transport: { relay } };
    assert.notEqual(typeof SHAPE, 'string', 'ws has the shape the reader needs');
    installReader(ws._receiver as unknown as ReaderReceiver, (SHAPE as { kWebSocket: symbol }).kWebSocket);
  }
  ws.on('message', (data: Buffer, binary: boolean) => message(data, binary));
  ws.on('ping', (data: Buffer) => events.push(`ping ${data.toString('hex')}`));
  ws.on('pong', (data: Buffer) => events.push(`pong ${data.toString('hex')}`));
  ws.on('error', (err: Error & { code?: string }) => events.push(`error ${err.code}`));
  return {
    read,
    feed: (chunk: Buffer) => stream.emit('data', chunk),
    outcome: () => {
      // Open or not (how far a close has gone depends on the turns each side took).
      const outcome = { events: [...events], written: Buffer.concat(written).toString('hex'), open: ws.readyState === WebSocket.OPEN };
      // No close timer left behind.
      stream.destroy();
      return outcome;
    },
  };
}

const turn = () => new Promise((r) => setImmediate(r));

/**
 * What a WebSocket with the reader and one without make of `reads`, each read in its own turn of the
 * event loop as a socket delivers them (so what `ws` does after an error, asynchronously, happens
 * between reads as it would).
 */
async function both(reads: Buffer[], closeAfter = 0) {
  const sides = [serverSocket(true, closeAfter), serverSocket(false, closeAfter)];
  for (const read of reads) {
    // Copies: the reader unmasks in place, as ws does, so each side gets bytes of its own.
    for (const side of sides) side.feed(Buffer.from(read));
    await turn();
  }
  for (let i = 0; i < 4; i++) await turn();
  return { reader: sides[0]!.outcome(), ws: sides[1]!.outcome(), byReader: sides[0]!.read.byReader };
}

async function assertSame(reads: Buffer[], closeAfter = 0) {
  const { reader, ws } = await both(reads, closeAfter);
  assert.deepEqual(reader, ws);
  return reader;
}

interface FrameSpec {
  fin?: boolean;
  rsv?: number;
  opcode: number;
  masked?: boolean;
  payload: Buffer;
  /** The length field as sent: 7, 16 or 64 bits (default: the shortest), or a length that lies. */
  lengthBits?: 7 | 16 | 64;
  claimedLength?: bigint;
}

/** A client frame (RFC 6455 §5.2) as spec says, masked with a fixed non-zero key unless `masked` is false. */
function frame(spec: FrameSpec): Buffer {
  const { fin = true, rsv = 0, opcode, masked = true, payload } = spec;
  const length = spec.claimedLength ?? BigInt(payload.length);
  const bits = spec.lengthBits ?? (length < 126n ? 7 : length < 65536n ? 16 : 64);
  const header = Buffer.alloc(bits === 7 ? 2 : bits === 16 ? 4 : 10);
  header[0] = (fin ? 0x80 : 0) | (rsv << 4) | opcode;
  const maskBit = masked ? 0x80 : 0;
  if (bits === 7) header[1] = maskBit | Number(length & 0x7fn);
  else if (bits === 16) {
    header[1] = maskBit | 126;
    header.writeUInt16BE(Number(length & 0xffffn), 2);
  } else {
    header[1] = maskBit | 127;
    header.writeBigUInt64BE(length, 2);
  }
  if (!masked) return Buffer.concat([header, payload]);
  const mask = Buffer.from([0x5a, 0x0f, 0xc3, 0x96]);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i % 4]!;
  return Buffer.concat([header, mask, body]);
}

const text = (s: string) => frame({ opcode: 1, payload: Buffer.from(s) });
const relayText = (n: number) => text(`agent-${n}\n{"seq":${n},"é":"ü"}`);

/** `bytes` cut into reads at every position in `cuts`. */
function cut(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const reads: Buffer[] = [];
  let from = 0;
  for (const c of at) {
    reads.push(bytes.subarray(from, c));
    from = c;
  }
  reads.push(bytes.subarray(from));
  return reads;
}

/** Every single cut and every read of one byte: the frame boundaries fall everywhere. */
async function everyCut(bytes: Buffer, closeAfter = 0): Promise<void> {
  for (let c = 1; c < bytes.length; c++) await assertSame(cut(bytes, [c]), closeAfter);
  await assertSame(
    cut(
      bytes,
      Array.from({ length: bytes.length }, (_, i) => i),
    ),
    closeAfter,
  );
}

test('plain relay frames, text and binary, 7- and 16-bit lengths: the same messages as ws, cut anywhere', async () => {
  const bytes = Buffer.concat([
    relayText(1),
    frame({ opcode: 2, payload: Buffer.from([0, 1, 2, 0xff, 0xfe, 10]) }),
    text(`agent-2\n${'x'.repeat(300)}`),
    frame({ opcode: 1, payload: Buffer.alloc(0) }),
    text(`agent-3\n${'ü'.repeat(250)}`),
    relayText(4),
  ]);
  const outcome = await assertSame([bytes]);
  assert.equal(outcome.events.length, 6);
  assert.equal((await both([bytes])).byReader, 6, 'whole frames in one read: all read by the reader, none by ws');
  assert.equal((await both(cut(bytes, [100]))).byReader, 5, 'a frame cut by a read is ws’s (it gets the missing bytes), the frames after it the reader’s');
  assert.equal(outcome.open, true);
  await everyCut(bytes);
});

test('a frame ws refuses stops the reader: the frames before it are relayed, the rest is ws’s (same close code)', async () => {
  const attacks: Array<[string, Buffer, string]> = [
    ['unmasked', frame({ opcode: 1, payload: Buffer.from('agent-1\nx'), masked: false }), 'WS_ERR_EXPECTED_MASK'],
    ['RSV1 without an extension', frame({ opcode: 1, rsv: 4, payload: Buffer.from('agent-1\nx') }), 'WS_ERR_UNEXPECTED_RSV_1'],
    ['RSV2 and RSV3', frame({ opcode: 2, rsv: 3, payload: Buffer.from('agent-1\nx') }), 'WS_ERR_UNEXPECTED_RSV_2_3'],
    ['unknown data opcode', frame({ opcode: 3, payload: Buffer.from('agent-1\nx') }), 'WS_ERR_INVALID_OPCODE'],
    ['unknown control opcode', frame({ opcode: 0xb, payload: Buffer.alloc(0) }), 'WS_ERR_INVALID_OPCODE'],
    ['continuation with no message', frame({ opcode: 0, payload: Buffer.from('x') }), 'WS_ERR_INVALID_OPCODE'],
    ['invalid UTF-8', frame({ opcode: 1, payload: Buffer.from([0x61, 0x0a, 0xc3, 0x28]) }), 'WS_ERR_INVALID_UTF8'],
    [
      'a lone surrogate in UTF-8',
      frame({ opcode: 1, payload: Buffer.concat([Buffer.from('a\n'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.alloc(40, 0x41)]) }),
      'WS_ERR_INVALID_UTF8',
    ],
    ['overlong UTF-8, long frame', frame({ opcode: 1, payload: Buffer.concat([Buffer.alloc(500, 0x41), Buffer.from([0xc0, 0xaf])]) }), 'WS_ERR_INVALID_UTF8'],
    ['16-bit length over the bound', frame({ opcode: 1, payload: Buffer.alloc(MAX_PAYLOAD + 1, 0x41) }), 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'],
    [
      '64-bit length over the bound, no payload sent',
      frame({ opcode: 2, payload: Buffer.alloc(8), claimedLength: 1n << 40n }),
      'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH',
    ],
    ['64-bit length 2^64 - 1', frame({ opcode: 1, payload: Buffer.alloc(8), claimedLength: (1n << 64n) - 1n }), 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH'],
    ['ping over 125 bytes', frame({ opcode: 9, payload: Buffer.alloc(126, 0x70), lengthBits: 16 }), 'WS_ERR_INVALID_CONTROL_PAYLOAD_LENGTH'],
    ['fragmented ping', frame({ opcode: 9, fin: false, payload: Buffer.from('p') }), 'WS_ERR_EXPECTED_FIN'],
    ['close with a 1-byte body', frame({ opcode: 8, payload: Buffer.from([3]) }), 'WS_ERR_INVALID_CONTROL_PAYLOAD_LENGTH'],
    ['close with an invalid code', frame({ opcode: 8, payload: Buffer.from([0x03, 0xe7]) }), 'WS_ERR_INVALID_CLOSE_CODE'],
    [
      'a new message inside a fragmented one',
      Buffer.concat([frame({ opcode: 1, fin: false, payload: Buffer.from('agent-1\n') }), relayText(9)]),
      'WS_ERR_INVALID_OPCODE',
    ],
  ];
  for (const [name, attack, code] of attacks) {
    const bytes = Buffer.concat([relayText(1), relayText(2), attack, relayText(3)]);
    const outcome = await assertSame([bytes]);
    assert.deepEqual(outcome.events.slice(0, 2), (await both([Buffer.concat([relayText(1), relayText(2)])])).ws.events, name);
    assert.equal(outcome.events.at(-1), `error ${code}`, `${name}: refused by ws`);
    assert.equal(outcome.open, false, name);
    await everyCut(bytes);
  }
});

test('control frames between and inside fragmented messages, and a close: as ws, cut anywhere', async () => {
  const bytes = Buffer.concat([
    relayText(1),
    frame({ opcode: 9, payload: Buffer.from('ping-1') }),
    frame({ opcode: 1, fin: false, payload: Buffer.from('agent-7\n{"part":') }),
    frame({ opcode: 10, payload: Buffer.from('pong') }),
    frame({ opcode: 0, fin: false, payload: Buffer.from([0xc3]) }),
    frame({ opcode: 9, payload: Buffer.alloc(0) }),
    frame({ opcode: 0, payload: Buffer.from([0xa9, 0x7d]) }),
    relayText(2),
    frame({ opcode: 2, fin: false, payload: Buffer.from('agent-8\n') }),
    frame({ opcode: 0, payload: Buffer.from([1, 2, 3]) }),
    frame({ opcode: 8, payload: Buffer.from([0x03, 0xe8, 0x62, 0x79, 0x65]) }),
    relayText(3),
  ]);
  const outcome = await assertSame([bytes]);
  assert.ok(outcome.events.includes(`text ${Buffer.from('agent-7\n{"part":é}').toString('hex')}`), 'the fragmented text message, whole');
  assert.equal(outcome.events.filter((e) => e.startsWith('text') || e.startsWith('binary')).length, 4, 'nothing after the close frame');
  await everyCut(bytes);
});

test('the relay closing the sender in the middle of a read: what follows is ws’s, as without the reader', async () => {
  const bytes = Buffer.concat([relayText(1), relayText(2), relayText(3), relayText(4)]);
  const outcome = await assertSame([bytes], 2);
  assert.equal(outcome.open, false);
  assert.equal(outcome.events.length, 4, 'ws still reads what follows a close it sent, and the relay ignores it');
  await everyCut(bytes, 2);
});

test('random frames, valid or not, cut into random reads: the reader does what ws does (property)', async () => {
  const payload = fc.oneof(
    fc.string({ maxLength: 300 }).map((s) => Buffer.from(`agent-1\n${s}`)),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    fc.constantFrom(Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from([0xf0, 0x9f, 0x98, 0x80]), Buffer.from([0xed, 0xbf, 0xbf])),
  );
  const spec = fc.record(
    {
      fin: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.boolean() }),
      rsv: fc.oneof({ weight: 10, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 7 }) }),
      opcode: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(1, 2) }, { weight: 3, arbitrary: fc.integer({ min: 0, max: 15 }) }),
      masked: fc.oneof({ weight: 10, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      payload,
      lengthBits: fc.constantFrom(undefined, undefined, undefined, 16 as const, 64 as const),
      claimedLength: fc.oneof({ weight: 10, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }) }),
    },
    { requiredKeys: ['opcode', 'payload'] },
  );
  await fc.assert(
    fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 }), fc.nat(6), async (specs, cuts, closeAfter) => {
      const bytes = Buffer.concat(specs.map((s) => frame(s as FrameSpec)));
      await assertSame(
        cut(
          bytes,
          cuts.map((c) => c % (bytes.length + 1)),
        ),
        closeAfter,
      );
    }),
    { numRuns: 2000 },
  );
});
