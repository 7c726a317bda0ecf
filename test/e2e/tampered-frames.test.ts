/**
 * A bridge (or network) that alters, replays or reorders a sealed frame from the client: the host
 * refuses it, applies nothing twice, and says it closed the channel, so the SDK's call fails at once
 * with the reason instead of waiting for its timeout. A man in the middle sits between the SDK and a
 * real bridge and changes the client's leg on command.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentFor, registerKey } from '../helpers/agent.ts';
import { rsaKey, keyPems } from '../helpers/keys.ts';
import { startTestBridge, until } from '../bridge/helpers.ts';
import { bridgeTransport, connect, ConnectionError, NodeWebSocket, type HostadmClient } from '../../client/sdk/src/node.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';

/** What the man in the middle does to the next sealed frame the client sends. */
type Meddle = 'flip-a-bit' | 'replay' | 'swap-with-next' | 'drop';

interface Middle {
  url: string;
  meddleNext(how: Meddle): void;
  /** The next binary frame to the client gets a body longer than any peer seals (garbage; the socket takes it). */
  inflateNextToClient(): void;
  /** Sealed frames the client sent, by kind: hsc2 frames and hsc3 records are binary, hsc1 frames text. */
  seen: { binary: number; text: number };
}

/**
 * `oldBridge`: strips `binary_frames` from the bridge's announcements (a bridge that does not relay
 * binary frames), so the SDK offers hsc1 only. `stripOffer`: removes the whole offer (`all`) or hsc3
 * alone (`hsc3`) from C1 on its way.
 */
async function manInTheMiddle(t: TestContext, bridgeUrl: string, options: { oldBridge?: boolean; stripOffer?: StripOffer } = {}): Promise<Middle> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  let next: Meddle | null = null;
  let held: Frame | null = null;
  let inflate = false;
  const seen = { binary: 0, text: 0 };
  server.on('connection', (client, request) => {
    const upstream = new WebSocket(new URL(request.url ?? '/', bridgeUrl).toString().replace(/^http/, 'ws'));
    const queue: Frame[] = [];
    const send = (ws: WebSocket, f: Frame) => ws.send(f.data, { binary: f.binary });
    upstream.on('open', () => queue.splice(0).forEach((f) => send(upstream, f)));
    const toBridge = (frame: Frame) => (upstream.readyState === WebSocket.OPEN ? send(upstream, frame) : queue.push(frame));
    upstream.on('message', (data: RawData, binary) => {
      if (binary && inflate) {
        inflate = false;
        const head = (data as Buffer).subarray(0, (data as Buffer).indexOf(0x0a) + 1);
        return client.send(Buffer.concat([head, Buffer.alloc(LIMITS.maxRelayFrameBytes, 0x5a)]), { binary: true });
      }
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
        if (options.stripOffer === 'all') delete env.args.channels;
        else env.args.channels = (env.args.channels as string[]).filter((v) => v !== 'hsc3');
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
  return { url: `ws://127.0.0.1:${port}${path}`, meddleNext: (how) => void (next = how), inflateNextToClient: () => void (inflate = true), seen };
}

type Frame = { data: string; binary: false } | { data: Buffer; binary: true };

/**
 * hsc3: what the SDK and a current agent negotiate; hsc2: the same SDK with an agent from before hsc3
 * (it answers hsc2 at most); hsc1: a bridge that does not relay binary frames.
 */
type Version = 'hsc1' | 'hsc2' | 'hsc3';
type StripOffer = 'all' | 'hsc3';

async function setup(
  t: TestContext,
  version: Version = 'hsc3',
  stripOffer?: StripOffer,
): Promise<{ client: HostadmClient; middle: Middle; agent: Awaited<ReturnType<typeof agentFor>> }> {
  const bridge = await startTestBridge(t);
  const joinToken = await bridge.token('agent', { nickname: 'simhost' });
  const olderAgent = version === 'hsc2' ? { channelVersions: ['hsc2'] as const } : {};
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken, nickname: 'simhost', ...olderAgent } });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  await registerKey(t, agent, key);
  const middle = await manInTheMiddle(t, bridge.url, { oldBridge: version === 'hsc1', ...(stripOffer ? { stripOffer } : {}) });
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
  // The client's sealed frames are of the version's kind only: hsc2 and hsc3 binary, hsc1 text (an old bridge).
  assert.deepEqual(middle.seen, version !== 'hsc1' ? { binary: middle.seen.binary, text: 0 } : { binary: 0, text: middle.seen.text });
  assert.ok(middle.seen.binary + middle.seen.text > 0);
  if (version !== 'hsc1') {
    // Two calls in one tick: one record on hsc3, two frames on hsc2 (the version the agent chose).
    const before = middle.seen.binary;
    await Promise.all([client.query(), client.query()]);
    assert.equal(middle.seen.binary - before, version === 'hsc3' ? 1 : 2, `the channel is ${version}`);
  }
  return { client, middle, agent };
}

const closedBecause = (pattern: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ConnectionError, `a ConnectionError, got ${String(e)}`);
  assert.match(e.message, /the host closed the secure channel/);
  assert.match(e.message, pattern);
  assert.doesNotMatch(e.message, /timed out|timeout/i);
  return true;
};

/** Lets the SDK's frame (hsc3: the record of what this tick sent) leave before the next call is made. */
const nextTick = () => new Promise((resolve) => setImmediate(resolve));

for (const version of ['hsc3', 'hsc2', 'hsc1'] as const) {
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
    await nextTick();
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
    await nextTick();
    const next = client.query();
    for (const outcome of await Promise.allSettled([dropped, next])) {
      assert.equal(outcome.status, 'rejected');
      closedBecause(/missing or out of order/)((outcome as PromiseRejectedResult).reason);
    }
    assert.equal(adds(), 0, 'the dropped change was never applied');
  });
}

for (const strip of ['all', 'hsc3'] as const) {
  test(`a bridge that strips ${strip === 'all' ? 'the offer' : 'hsc3 from the offer'} in C1 is caught: the host refuses the key proof as a downgrade`, async (t) => {
    await assert.rejects(setup(t, 'hsc3', strip), (e: unknown) => {
      assert.ok(e instanceof ConnectionError, `a ConnectionError, got ${String(e)}`);
      assert.match(e.message, /channel downgrade detected/);
      return true;
    });
  });
}

test('hsc3: calls made in one tick travel in one record; an altered record fails them all and applies none', async (t) => {
  const { client, middle, agent } = await setup(t, 'hsc3');
  const adds = () => agent.services.audit.recent(1000).filter((r) => r.transport === 'bridge' && r.action === 'groupadd').length;
  const before = middle.seen.binary;
  await Promise.all([client.admin.users.groupadd({ name: 'together_a' }), client.admin.users.groupadd({ name: 'together_b' })]);
  assert.equal(middle.seen.binary - before, 1, 'both requests crossed in one sealed frame');
  assert.equal(adds(), 2);
  middle.meddleNext('flip-a-bit');
  const outcomes = await Promise.allSettled([client.admin.users.groupadd({ name: 'altered_a' }), client.admin.users.groupadd({ name: 'altered_b' })]);
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 'rejected');
    closedBecause(/failed authentication/)((outcome as PromiseRejectedResult).reason);
  }
  assert.equal(adds(), 2, 'nothing of the altered record was applied');
});

test('hsc3: a bridge that sends the SDK a frame longer than any peer seals: the channel fails as malformed from its length, not after decrypting it', async (t) => {
  const { client, middle } = await setup(t, 'hsc3');
  middle.inflateNextToClient();
  await assert.rejects(client.query(), (e: unknown) => {
    assert.ok(e instanceof ConnectionError, `a ConnectionError, got ${String(e)}`);
    assert.match(e.message, /channel error \(malformed\)/);
    assert.match(e.message, /longer than any peer seals/);
    return true;
  });
});
