/**
 * hsc3 records (docs/bridge-protocol.md §3.10), with the tests playing the bridge: records replayed,
 * reordered, truncated, altered, reflected, hsc2 frames fed as records and back, and records whose
 * sealed layout is wrong (a length past the end, zero, trailing bytes, too many entries). Each kills
 * the channel with its reason and delivers nothing of that record, on both AES-GCM engines.
 */
import assert from 'node:assert/strict';
import { createCipheriv } from 'node:crypto';
import { describe, test } from 'node:test';
import { ChannelError, SecureChannel, type ChannelErrorReason } from './channel.ts';
import { ChannelSender } from './channel-sender.ts';
import { MAX_SEALED_PLAINTEXT_BYTES } from './channel-frames.ts';
import { MAX_RECORD_ENVELOPES, MAX_RECORD_PLAINTEXT_BYTES } from './channel-records.ts';
import { randomBytes } from './subtle.ts';
import type { SessionSecrets } from './transcript.ts';

const secrets = (): SessionSecrets => ({ kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) });
const copy = (x: SessionSecrets) => ({ kC2a: x.kC2a.slice(), kA2c: x.kA2c.slice(), sid: x.sid.slice() });
const env = (i: number) => JSON.stringify({ id: String(i), name: 'identify', namespace: 'rpc', args: { note: 'é✓' } });

/**
 * A client→agent record sealed with the session's keys outside the channel, as a peer that ignores
 * the channel's limits would (or garbage of that size, when `authentic` is false).
 */
function sealedByHand(s: SessionSecrets, seq: number, plain: Uint8Array, authentic = true): Uint8Array {
  const seqBytes = Buffer.alloc(8);
  seqBytes.writeBigUInt64BE(BigInt(seq));
  if (!authentic) return new Uint8Array(Buffer.concat([seqBytes, Buffer.alloc(plain.length + 16, 0x5a)]));
  const cipher = createCipheriv('aes-256-gcm', s.kC2a, Buffer.concat([Buffer.alloc(4), seqBytes]));
  cipher.setAAD(Buffer.concat([Buffer.from('hostadm-hsc3 record'), s.sid, Buffer.of(1), seqBytes]));
  return new Uint8Array(Buffer.concat([seqBytes, cipher.update(plain), cipher.final(), cipher.getAuthTag()]));
}

/** A record's plaintext laid out by hand: each entry as [declared length, bytes]. */
function layout(entries: [number, Uint8Array][], trailing: number[] = []): Uint8Array {
  const parts = entries.flatMap(([length, bytes]) => [Buffer.from([length >>> 24, length >>> 16, length >>> 8, length & 0xff]), Buffer.from(bytes)]);
  return new Uint8Array(Buffer.concat([...parts, Buffer.from(trailing)]));
}
const entry = (text: string): [number, Uint8Array] => {
  const bytes = new TextEncoder().encode(text);
  return [bytes.length, bytes];
};

for (const engine of ['auto', 'webcrypto'] as const) {
  describe(`hsc3 records (${engine === 'auto' ? 'node:crypto' : 'WebCrypto'} engine)`, () => {
    async function pair(s = secrets(), version: 'hsc2' | 'hsc3' = 'hsc3') {
      return {
        client: await SecureChannel.create('client', copy(s), { engine, version }),
        agent: await SecureChannel.create('agent', copy(s), { engine, version }),
        s,
      };
    }
    async function refused(p: Promise<unknown>, reason: ChannelErrorReason): Promise<void> {
      await assert.rejects(p, (e: unknown) => e instanceof ChannelError && e.reason === reason);
    }
    /** What a sender hands to the wire for `texts` sent in one tick. */
    async function framesOf(channel: SecureChannel, texts: string[], head = new Uint8Array(0)): Promise<Uint8Array[]> {
      const frames: Uint8Array[] = [];
      const sender = new ChannelSender(channel, head, {
        text: () => assert.fail('no text frames on hsc3'),
        binary: (frame) => frames.push(frame),
        failed: (cause) => assert.fail(String(cause)),
      });
      for (const text of texts) sender.send(text);
      assert.equal(frames.length, 0, 'nothing leaves before the tick ends');
      await sender.drained();
      return frames;
    }

    test('envelopes sent in one tick leave as one record and open in order, in both directions', async () => {
      const { client, agent } = await pair();
      const head = new TextEncoder().encode('agent-1\n');
      const [frame, ...more] = await framesOf(client, [env(0), env(1), env(2)], head);
      assert.equal(more.length, 0);
      assert.deepEqual([...frame!.subarray(0, head.length)], [...head]);
      assert.deepEqual(await agent.openRecord(frame!.subarray(head.length)), [env(0), env(1), env(2)]);
      const replies = await framesOf(agent, [env(10), env(11)]);
      assert.deepEqual(await client.openRecord(replies[0]!), [env(10), env(11)]);
    });

    test('a replayed, reordered or reflected record is refused and kills the channel', async () => {
      let { client, agent } = await pair();
      const first = (await framesOf(client, [env(0), env(1)]))[0]!;
      assert.equal((await agent.openRecord(first)).length, 2);
      await refused(agent.openRecord(first), 'replay');
      await refused(agent.openRecord((await framesOf(client, [env(2)]))[0]!), 'closed');

      ({ client, agent } = await pair());
      const [r0] = await framesOf(client, [env(0)]);
      const [r1] = await framesOf(client, [env(1)]);
      await refused(agent.openRecord(r1!), 'gap');
      await refused(agent.openRecord(r0!), 'closed');

      ({ client, agent } = await pair());
      // The client's own record sent back to it: the direction byte in the additional data differs.
      await refused(client.openRecord((await framesOf(client, [env(0)]))[0]!), 'tampered');
    });

    test('a flipped byte anywhere and a truncated record are refused; nothing of the record is delivered', async () => {
      for (const at of [3, 7, 9, 30, -1]) {
        const { client, agent } = await pair();
        const frame = (await framesOf(client, [env(0), env(1)]))[0]!.slice();
        frame[at < 0 ? frame.length + at : at]! ^= 0x40;
        await refused(agent.openRecord(frame), at >= 0 && at < 8 ? 'gap' : 'tampered');
      }
      for (const keep of [23, 40]) {
        const { client, agent } = await pair();
        const frame = (await framesOf(client, [env(0), env(1)]))[0]!;
        await refused(agent.openRecord(frame.subarray(0, keep)), keep < 24 ? 'malformed' : 'tampered');
      }
    });

    test('a sealed record whose lengths are wrong fails as malformed, all or nothing', async () => {
      const good = entry(env(0));
      const cases: [string, Uint8Array][] = [
        ['a length past the end', layout([good, [500, new TextEncoder().encode(env(1))]])],
        ['a zero length', layout([good, [0, new Uint8Array(0)]])],
        ['trailing bytes', layout([good], [0, 0, 1])],
        ['an entry that is not UTF-8', layout([good, [2, Uint8Array.of(0xc3, 0x28)]])],
        ['too many entries', layout(Array.from({ length: MAX_RECORD_ENVELOPES + 1 }, () => entry('1')))],
      ];
      for (const [what, plain] of cases) {
        const { client, agent } = await pair();
        // A client that seals a bad layout itself: the one way to get one past the tag.
        const frame = await client.sealRecord(plain);
        await assert.rejects(agent.openRecord(frame), (e: unknown) => e instanceof ChannelError && e.reason === 'malformed', what);
        await refused(agent.openRecord(await client.sealRecord(layout([good]))), 'closed');
      }
      const { client, agent } = await pair();
      const full = layout(Array.from({ length: MAX_RECORD_ENVELOPES }, () => entry('1')));
      assert.equal((await agent.openRecord(await client.sealRecord(full))).length, MAX_RECORD_ENVELOPES);
      await assert.rejects(client.sealRecord(new Uint8Array(0)), RangeError);
    });

    test('a record longer than any peer seals is refused unopened, authentic or not; so is an entry over the envelope limit', async () => {
      // A hostile bridge's oversized frame: refused as malformed from its length (not decrypted, then found tampered).
      const over = new Uint8Array(MAX_RECORD_PLAINTEXT_BYTES + 1);
      let { agent, s } = await pair();
      await refused(agent.openRecord(sealedByHand(s, 0, over, false)), 'malformed');
      // A peer that ignores the cap and seals it anyway: refused all the same.
      ({ agent, s } = await pair());
      await refused(agent.openRecord(sealedByHand(s, 0, over)), 'malformed');
      // At the cap exactly: two entries that fill it are delivered...
      const half = (MAX_RECORD_PLAINTEXT_BYTES - 8) / 2;
      const filler = (n: number) => `"${'a'.repeat(n - 2)}"`;
      const atCap = layout([entry(filler(Math.floor(half))), entry(filler(Math.ceil(half)))]);
      assert.equal(atCap.length, MAX_RECORD_PLAINTEXT_BYTES);
      ({ agent, s } = await pair());
      assert.deepEqual(
        (await agent.openRecord(sealedByHand(s, 0, atCap))).map((e) => e.length),
        [Math.floor(half), Math.ceil(half)],
      );
      // ...one entry larger than an envelope may be (hsc1's limit, kept per entry) is not; at the limit it is.
      ({ agent, s } = await pair());
      await refused(agent.openRecord(sealedByHand(s, 0, layout([entry(filler(MAX_SEALED_PLAINTEXT_BYTES + 1))]))), 'malformed');
      ({ agent, s } = await pair());
      assert.equal((await agent.openRecord(sealedByHand(s, 0, layout([entry(filler(MAX_SEALED_PLAINTEXT_BYTES))]))))[0]!.length, MAX_SEALED_PLAINTEXT_BYTES);
    });

    test('an hsc2 frame is never taken for an hsc3 record, nor back, even under the same keys', async () => {
      const s = secrets();
      const hsc2 = await pair(s, 'hsc2');
      const hsc3 = await pair(s, 'hsc3');
      // hsc2's frame of one envelope, fed to an hsc3 channel: its label is not the record's.
      await refused(hsc3.agent.openRecord(await hsc2.client.sealBinary(env(0))), 'tampered');
      const record = (await framesOf(hsc3.client, [env(0)]))[0]!;
      await refused(hsc2.agent.openBinary(record), 'tampered');
      // The methods of the other version are refused outright.
      await refused((await pair(s, 'hsc3')).agent.openBinary(record), 'malformed');
      await refused((await pair(s, 'hsc2')).agent.openRecord(record), 'malformed');
      await assert.rejects(hsc3.client.sealBinary(env(0)), TypeError);
    });
  });
}

test('the inline record methods keep the same rules and refuse what is not theirs', async () => {
  const s = secrets();
  const client = await SecureChannel.create('client', copy(s), { version: 'hsc3' });
  const agent = await SecureChannel.create('agent', copy(s), { version: 'hsc3' });
  const plain = layout([entry(env(0))]);
  const r0 = client.sealRecordSync(plain);
  assert.deepEqual(agent.openRecordSync(r0), [env(0)]);
  assert.throws(
    () => agent.openRecordSync(r0),
    (e: unknown) => e instanceof ChannelError && e.reason === 'replay',
  );
  assert.throws(
    () => agent.openRecordSync(client.sealRecordSync(plain)),
    (e: unknown) => e instanceof ChannelError && e.reason === 'closed',
  );
  assert.throws(() => client.sealBinarySync(env(0)), TypeError);
  const fresh = await SecureChannel.create('agent', copy(s), { version: 'hsc3' });
  assert.throws(
    () => fresh.openRecordSync(sealedByHand(s, 0, new Uint8Array(MAX_RECORD_PLAINTEXT_BYTES + 1))),
    (e: unknown) => e instanceof ChannelError && e.reason === 'malformed' && /longer than any peer seals/.test(e.message),
  );
});
