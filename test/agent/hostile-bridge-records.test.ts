/**
 * The test is the bridge: a WebSocket server of its own that the agent's real BridgeLink dials, signs
 * in and then relays for clients that speak hsc3 (shared/src/crypto) with real keys. What such a
 * bridge chooses and an honest one would not: the destination line of every frame, and how many
 * envelopes it lets a client pack into one record (docs/bridge-protocol.md §3.10).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelSender, parseChannelClosedNotice, startClientHandshake, utf8Encode, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { agentFor, registerKey } from '../helpers/agent.ts';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { hostileBridge, type Envelope, type HostileBridge } from '../helpers/hostile-bridge.ts';

/** A client behind the bridge with an hsc3 channel, signed in with its key (C2), and its replies opened. */
interface Hsc3Client {
  id: string;
  channel: SecureChannel;
  /** Every frame this client's sender handed to the bridge, in order. */
  sent: Uint8Array[];
  send(envelopes: Envelope[]): Promise<void>;
  /** Opens the agent's records for this client until `count` envelopes (not events) have arrived. */
  replies(count: number): Promise<Envelope[]>;
}

async function hsc3Client(bridge: HostileBridge, key: TestKey, id: string): Promise<Hsc3Client> {
  const hs = await startClientHandshake({
    clientKeyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    clientSpkiPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
    channels: ['hsc3', 'hsc2'],
  });
  const since = bridge.frames.length;
  bridge.sendText(id, JSON.stringify({ id: 'c1', name: 'auth_ssl', namespace: 'rpc', args: hs.c1Args }));
  const a1 = JSON.parse(((await bridge.next(id, (f) => 'text' in f, since)) as { text: string }).text) as Envelope;
  const { channel, c2Args } = await hs.finish(a1.args);
  assert.equal(channel.version, 'hsc3');
  const sent: Uint8Array[] = [];
  const sender = new ChannelSender(channel, utf8Encode(`${id}\n`), {
    text: () => assert.fail('no text frames on hsc3'),
    binary: (frame) => {
      sent.push(frame);
      bridge.sendBinary(frame);
    },
    failed: (cause) => assert.fail(String(cause)),
  });
  let cursor = bridge.frames.length;
  const client: Hsc3Client = {
    id,
    channel,
    sent,
    async send(envelopes) {
      for (const e of envelopes) sender.send(JSON.stringify(e));
      await sender.drained();
    },
    async replies(count) {
      const out: Envelope[] = [];
      while (out.length < count) {
        const frame = await bridge.next(id, () => true, cursor);
        cursor = bridge.frames.indexOf(frame) + 1;
        if (!('bytes' in frame)) assert.fail(`plain frame to ${id}: ${frame.text}`);
        for (const text of channel.openRecordSync(frame.bytes)) {
          const env = JSON.parse(text) as Envelope;
          if (env.name !== 'event' && env.id !== 'hsc1-ticket') out.push(env);
        }
      }
      return out;
    },
  };
  await client.send([{ id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: c2Args }]);
  const [signedIn] = await client.replies(1);
  assert.equal(signedIn!.name, 'response', JSON.stringify(signedIn));
  return client;
}

/** An agent with an RSA client key registered for admin, and the bridge it is linked to. */
async function setup(t: TestContext) {
  const agent = await agentFor(t);
  const key = rsaKey();
  await registerKey(t, agent, key);
  return { agent, key, bridge: await hostileBridge(t, agent) };
}

const query = (id: string): Envelope => ({ id, name: 'query', namespace: 'rpc', args: {} });

test("a record from client A relayed to client B's channel as well: B's channel closes as tampered, nothing runs twice, A goes on", async (t) => {
  const { bridge, key } = await setup(t);
  const a = await hsc3Client(bridge, key, 'client-a');
  const b = await hsc3Client(bridge, key, 'client-b');
  const since = bridge.frames.length;
  await a.send([query('a-1')]);
  // The bridge chooses the destination line: it sends A's record to B too.
  const record = a.sent.at(-1)!;
  const body = record.subarray(record.indexOf(0x0a) + 1);
  bridge.sendBinary(Buffer.concat([Buffer.from('client-b\n'), body]));
  const notice = (await bridge.next('client-b', (f) => 'text' in f, since)) as { text: string };
  assert.match(parseChannelClosedNotice(notice.text) ?? '', /failed authentication/);
  const [reply] = await a.replies(1);
  assert.equal(reply!.id, 'a-1');
  await a.send([query('a-2')]);
  assert.deepEqual(
    (await a.replies(1)).map((r) => r.id),
    ['a-2'],
    'A is served once per request and keeps its channel',
  );
  assert.ok(!bridge.frames.slice(since).some((f) => f.to === 'client-b' && 'bytes' in f), 'nothing sealed went to B after the copy');
  assert.ok(b.channel.closed === false, "B's own side knows nothing yet: it learns from the notice");
});

test('a record of more envelopes than a connection may have in flight: the ones past the limit are answered 429, as on a direct connection', async (t) => {
  const { bridge, key } = await setup(t);
  const a = await hsc3Client(bridge, key, 'client-a');
  const count = LIMITS.maxInFlightPerConnection + 36;
  await a.send(Array.from({ length: count }, (_, i) => query(`q${i}`)));
  const replies = await a.replies(count);
  const refused = replies.filter((r) => r.name === 'error' && (r.args as { code?: number }).code === 429);
  assert.equal(refused.length, 36, `answers: ${replies.filter((r) => r.name === 'response').length} served, ${refused.length} refused`);
  assert.deepEqual(
    refused.map((r) => r.id),
    Array.from({ length: 36 }, (_, i) => `q${LIMITS.maxInFlightPerConnection + i}`),
    'the first 64 in record order are served',
  );
  // Once they are answered, the connection takes requests again.
  await a.send([query('after')]);
  assert.equal((await a.replies(1))[0]!.name, 'response');
});
