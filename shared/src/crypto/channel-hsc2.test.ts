/**
 * hsc2 sealed frames (docs/bridge-protocol.md §3.9), with the tests playing the bridge: bit flips,
 * replays, reorders, reflections, truncation, frames of the other version or spliced from hsc1 under
 * the same keys. Each kills the channel with the right reason, on both AES-GCM engines.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChannelError, SecureChannel, type ChannelErrorReason } from './channel.ts';
import { MAX_SEALED_BODY_BYTES } from './channel-frames.ts';
import { fromBase64, randomBytes } from './subtle.ts';
import type { SessionSecrets } from './transcript.ts';

const secrets = (): SessionSecrets => ({ kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) });
const copy = (x: SessionSecrets) => ({ kC2a: x.kC2a.slice(), kA2c: x.kA2c.slice(), sid: x.sid.slice() });
const env = (i: number) => JSON.stringify({ id: String(i), name: 'identify', namespace: 'rpc', args: {} });

for (const engine of ['auto', 'webcrypto'] as const) {
  describe(`hsc2 sealed frames (${engine === 'auto' ? 'node:crypto' : 'WebCrypto'} engine)`, () => {
    async function pair(s = secrets()) {
      return {
        client: await SecureChannel.create('client', copy(s), { engine, version: 'hsc2' }),
        agent: await SecureChannel.create('agent', copy(s), { engine, version: 'hsc2' }),
        s,
      };
    }
    async function refused(p: Promise<unknown>, reason: ChannelErrorReason): Promise<void> {
      await assert.rejects(p, (e: unknown) => e instanceof ChannelError && e.reason === reason);
    }

    test('round trip in both directions with the relay line in front; the line is not part of what is opened', async () => {
      const { client, agent } = await pair();
      const head = new TextEncoder().encode('agent-1\n');
      for (let i = 0; i < 4; i++) {
        const frame = await client.sealBinary(env(i), head);
        assert.deepEqual([...frame.subarray(0, head.length)], [...head]);
        assert.equal(await agent.openBinary(frame.subarray(head.length)), env(i));
        assert.equal(await client.openBinary(await agent.sealBinary(env(100 + i))), env(100 + i));
      }
      assert.equal(client.inline, engine === 'auto');
    });

    test('a flipped bit anywhere (seq, ciphertext, tag) is refused and kills the channel', async () => {
      for (const at of [7, 12, -1]) {
        const { client, agent } = await pair();
        const frame = (await client.sealBinary(env(0))).slice();
        frame[at < 0 ? frame.length + at : at]! ^= 1;
        await refused(agent.openBinary(frame), at === 7 ? 'gap' : 'tampered');
        await refused(agent.openBinary(await client.sealBinary(env(1))), 'closed');
      }
    });

    test('replayed, reordered and reflected frames fail', async () => {
      let { client, agent } = await pair();
      const first = await client.sealBinary(env(0));
      assert.equal(await agent.openBinary(first), env(0));
      await refused(agent.openBinary(first), 'replay');

      ({ client, agent } = await pair());
      await client.sealBinary(env(0));
      await refused(agent.openBinary(await client.sealBinary(env(1))), 'gap');

      ({ client, agent } = await pair());
      // The client's own frame sent back to it: the direction byte in the additional data differs.
      await refused(client.openBinary(await client.sealBinary(env(0))), 'tampered');
    });

    test('truncated frames, frames of the other version and hsc1 frames under the same keys are refused', async () => {
      await refused((await pair()).agent.openBinary(new Uint8Array(23)), 'malformed');
      await refused((await pair()).agent.open('hsc1.AAAA'), 'malformed');
      // The same keys and sid in an hsc1 channel: its frame, unwrapped from base64, still fails under hsc2's label.
      const { client, agent, s } = await pair();
      const hsc1 = await SecureChannel.create('client', copy(s), { engine });
      const spliced = fromBase64((await hsc1.seal(env(0))).slice('hsc1.'.length));
      await refused(agent.openBinary(spliced), 'tampered');
      await assert.rejects(client.seal(env(0)), TypeError, 'hsc1 sealing is refused on an hsc2 channel');
      const plain = await SecureChannel.create('agent', copy(s), { engine });
      await refused(plain.openBinary(await client.sealBinary(env(0))), 'malformed');
    });

    test('a frame longer than any peer seals (the socket may take far more) is refused from its length, hsc1 text too', async () => {
      const { agent, s } = await pair();
      await refused(agent.openBinary(new Uint8Array(MAX_SEALED_BODY_BYTES + 1)), 'malformed');
      const hsc1 = await SecureChannel.create('agent', copy(s), { engine });
      await assert.rejects(
        hsc1.open(`hsc1.${'A'.repeat(MAX_SEALED_BODY_BYTES)}`),
        (e: unknown) => e instanceof ChannelError && /longer than any peer seals/.test(e.message),
      );
    });
  });
}

test('the inline methods keep the same rules: replay and gap throw, a too-large envelope leaves the channel usable', async () => {
  const s = secrets();
  const client = await SecureChannel.create('client', copy(s), { version: 'hsc2', maxPlaintextBytes: 64 });
  const agent = await SecureChannel.create('agent', copy(s), { version: 'hsc2' });
  assert.throws(() => client.sealBinarySync('x'.repeat(65)), RangeError);
  const f0 = client.sealBinarySync(env(0));
  assert.equal(agent.openBinarySync(f0), env(0));
  assert.throws(
    () => agent.openBinarySync(f0),
    (e: unknown) => e instanceof ChannelError && e.reason === 'replay',
  );
  assert.throws(
    () => agent.openBinarySync(client.sealBinarySync(env(1))),
    (e: unknown) => e instanceof ChannelError && e.reason === 'closed',
  );
});
