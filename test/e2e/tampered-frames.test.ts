/**
 * A bridge (or network) that alters, replays or reorders a sealed frame from the client: the host
 * refuses it, applies nothing twice, and says it closed the channel, so the SDK's call fails at once
 * with the reason instead of waiting for its timeout. A man in the middle sits between the SDK and a
 * real bridge and changes the client's leg on command.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentFor, clientFor } from '../helpers/agent.ts';
import { rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, until } from '../bridge/helpers.ts';
import { bridgeTransport, connect, ConnectionError, NodeWebSocket, type HostadmClient } from '../../client/sdk/src/node.ts';

/** What the man in the middle does to the next sealed frame the client sends. */
type Meddle = 'flip-a-bit' | 'replay' | 'swap-with-next' | 'drop';

interface Middle {
  url: string;
  meddleNext(how: Meddle): void;
  /** Sealed frames the client sent, by kind: hsc2 frames are binary, hsc1 frames text. */
  seen: { binary: number; text: number };
}

/**
 * `oldBridge`: strips `binary_frames` from the bridge's announcements (a bridge that does not relay
 * binary frames), so the SDK offers hsc1 only. `stripOffer`: removes the hsc2 offer from C1 on its way.
 */
async function manInTheMiddle(t: TestContext, bridgeUrl: string, options: { oldBridge?: boolean; stripOffer?: boolean } = {}): Promise<Middle> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  let next: Meddle | null = null;
  let held: Frame | null = null;
  const seen = { binary: 0, text: 0 };
  server.on('connection', (client, request) => {
    const upstream = new WebSocket(new URL(request.url ?? '/', bridgeUrl).toString().replace(/^http/, 'ws'));
    const queue: Frame[] = [];
    const send = (ws: WebSocket, f: Frame) => ws.send(f.data, { binary: f.binary });
    upstream.on('open', () => queue.splice(0).forEach((f) => send(upstream, f)));
    const toBridge = (frame: Frame) => (upstream.readyState === WebSocket.OPEN ? send(upstream, frame) : queue.push(frame));
    upstream.on('message', (data: RawData, binary) => {
      if (binary) return client.send(data as Buffer, { binary: true });
      const text = data.toString();
      if (!options.oldBridge || !text.startsWith('{')) return client.send(text);
      const env = JSON.parse(text) as { args?: { args?: Record<string, unknown> } };
      delete env.args?.args?.binary_frames;
      client.send(JSON.stringify(env));
    });
    upstream.on('close', () => client.close());
    client.on('close', () => upstream.close());
    client.on('message', (data: RawData, binary) => {
      const frame: Frame = binary ? { data: Buffer.from(data as Buffer), binary: true } : { data: data.toString(), binary: false };
      const nl = frame.data.indexOf('\n');
      const sealed = nl > 0 && (frame.binary || (frame.data as string).startsWith('hsc1.', nl + 1));
      if (!sealed && options.stripOffer && typeof frame.data === 'string' && frame.data.includes('"channels"')) {
        const env = JSON.parse(frame.data.slice(nl + 1)) as { args: Record<string, unknown> };
        delete env.args.channels;
        return toBridge({ data: `${frame.data.slice(0, nl + 1)}${JSON.stringify(env)}`, binary: false });
      }
      if (sealed) seen[frame.binary ? 'binary' : 'text']++;
      if (!sealed || next === null) return toBridge(frame);
      if (held !== null) {
        // swap-with-next, second frame: it goes first, the held one after it.
        toBridge(frame);
        toBridge(held);
        held = null;
        next = null;
        return;
      }
      if (next === 'swap-with-next') {
        held = frame;
        return;
      }
      if (next === 'drop') {
        next = null;
        return;
      }
      if (next === 'replay') {
        toBridge(frame);
        toBridge(frame);
      } else if (typeof frame.data === 'string') {
        const body = Buffer.from(frame.data.slice(nl + 1 + 'hsc1.'.length), 'base64');
        body[body.length - 1]! ^= 1;
        toBridge({ data: `${frame.data.slice(0, nl + 1)}hsc1.${body.toString('base64')}`, binary: false });
      } else {
        frame.data[frame.data.length - 1]! ^= 1;
        toBridge(frame);
      }
      next = null;
    });
  });
  const { port } = server.address() as { port: number };
  const path = new URL(bridgeUrl).pathname;
  return { url: `ws://127.0.0.1:${port}${path}`, meddleNext: (how) => void (next = how), seen };
}

type Frame = { data: string; binary: false } | { data: Buffer; binary: true };

const keyPems = (key: TestKey) => ({
  privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
});

type Version = 'hsc1' | 'hsc2';

async function setup(
  t: TestContext,
  version: Version = 'hsc2',
  stripOffer = false,
): Promise<{ client: HostadmClient; middle: Middle; agent: Awaited<ReturnType<typeof agentFor>> }> {
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  const admin = await clientFor(t, agent, 'admin');
  const token = await admin.login('admin');
  await admin.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof: signatureProof(key, 'register-proof', token) });
  admin.close();
  const middle = await manInTheMiddle(t, bridge.url, { oldBridge: version === 'hsc1', stripOffer });
  // A long request timeout: a failure that only came from it would name it, not the channel.
  const client = await connect({
    transport: bridgeTransport({
      bridgeUrl: middle.url,
      host: { name: 'simhost' },
      key: keyPems(key),
      joinToken: await bridge.token('client'),
      onHostKey: () => true,
      webSocket: NodeWebSocket,
    }),
    reconnect: false,
    requestTimeoutMs: 120_000,
  });
  t.after(() => client.close());
  assert.ok((await client.admin.systemmanager.memorystats()).memorystats, 'the channel works before anyone meddles');
  // The client's sealed frames are of the version's kind only: hsc2 binary, hsc1 text (an old bridge).
  assert.deepEqual(middle.seen, version === 'hsc2' ? { binary: middle.seen.binary, text: 0 } : { binary: 0, text: middle.seen.text });
  assert.ok(middle.seen.binary + middle.seen.text > 0);
  return { client, middle, agent };
}

const closedBecause = (pattern: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ConnectionError, `a ConnectionError, got ${String(e)}`);
  assert.match(e.message, /the host closed the secure channel/);
  assert.match(e.message, pattern);
  assert.doesNotMatch(e.message, /timed out|timeout/i);
  return true;
};

for (const version of ['hsc2', 'hsc1'] as const) {
  test(`${version}: an altered frame: the call fails at once, saying the frame failed authentication`, async (t) => {
    const { client, middle } = await setup(t, version);
    middle.meddleNext('flip-a-bit');
    await assert.rejects(client.admin.systemmanager.memorystats(), closedBecause(/failed authentication/));
  });

  test(`${version}: a replayed frame: applied once, and the client is told the channel closed`, async (t) => {
    const { client, middle, agent } = await setup(t, version);
    const adds = () => agent.services.audit.recent(1000).filter((r) => r.transport === 'bridge' && r.action === 'groupadd').length;
    middle.meddleNext('replay');
    // The host may close the channel before its reply to the first copy is out: the call then fails too.
    await client.admin.users.groupadd({ name: 'replayed' }).catch(closedBecause(/arrived twice/));
    await assert.rejects(client.admin.systemmanager.memorystats(), closedBecause(/arrived twice/));
    await until(() => adds() >= 1, 'the groupadd in the audit log');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(adds(), 1, 'the replayed groupadd reached the host once');
  });

  test(`${version}: two frames swapped on the way: refused as out of order, nothing applied from the later one first`, async (t) => {
    const { client, middle } = await setup(t, version);
    middle.meddleNext('swap-with-next');
    const first = client.admin.systemmanager.memorystats();
    const second = client.query();
    const outcomes = await Promise.allSettled([first, second]);
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      closedBecause(/missing or out of order/)((outcome as PromiseRejectedResult).reason);
    }
  });

  test(`${version}: a dropped frame: the next one is refused as out of order, and both calls fail with that reason`, async (t) => {
    const { client, middle, agent } = await setup(t, version);
    const adds = () => agent.services.audit.recent(1000).filter((r) => r.transport === 'bridge' && r.action === 'groupadd').length;
    middle.meddleNext('drop');
    const dropped = client.admin.users.groupadd({ name: 'never_arrives' });
    const next = client.query();
    for (const outcome of await Promise.allSettled([dropped, next])) {
      assert.equal(outcome.status, 'rejected');
      closedBecause(/missing or out of order/)((outcome as PromiseRejectedResult).reason);
    }
    assert.equal(adds(), 0, 'the dropped change was never applied');
  });
}

test('a bridge that strips the hsc2 offer from C1 is caught: the host refuses the key proof as a downgrade', async (t) => {
  await assert.rejects(setup(t, 'hsc2', true), (e: unknown) => {
    assert.ok(e instanceof ConnectionError, `a ConnectionError, got ${String(e)}`);
    assert.match(e.message, /channel downgrade detected/);
    return true;
  });
});
