/**
 * The SDK through a real bridge: `connect({ transport: bridgeTransport(...) })` to a sim agent that
 * dialled out to the bridge. Typed calls, events, a queued job, host-key pinning, and a reconnect
 * after the bridge restarts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { agentFor, registerKey } from '../helpers/agent.ts';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { startTestBridge, until } from '../bridge/helpers.ts';
import { MAX_SEALED_PLAINTEXT_BYTES } from '../../shared/src/crypto/index.ts';
import {
  bridgeTransport,
  connect,
  ConnectionError,
  HostadmRequestError,
  NodeWebSocket,
  type HostadmClient,
  type HostadmEvent,
  type TransportFactory,
} from '../../client/sdk/src/node.ts';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function keyPems(key: TestKey) {
  return {
    privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
  };
}

async function setup(t: TestContext) {
  const port = await freePort();
  const bridge = await startTestBridge(t, { listen: { host: '127.0.0.1', port } });
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  await registerKey(t, agent, key);
  return { bridge, agent, key };
}

async function bridgeClient(t: TestContext, options: Parameters<typeof bridgeTransport>[0]): Promise<HostadmClient> {
  const client = await connect({ transport: bridgeTransport(options), reconnect: { initialDelayMs: 100, maxDelayMs: 500 } });
  t.after(() => client.close());
  return client;
}

/** A client of the sim agent through `bridge`, with a fresh join token, trusting the host key on first use. */
async function simhostClient(t: TestContext, bridge: Awaited<ReturnType<typeof startTestBridge>>, key: TestKey): Promise<HostadmClient> {
  return bridgeClient(t, {
    bridgeUrl: bridge.url,
    host: { name: 'simhost' },
    key: keyPems(key),
    joinToken: await bridge.token('client'),
    onHostKey: () => true,
    webSocket: NodeWebSocket,
  });
}

test('the SDK through the bridge: typed call, event, queued job, first-use pin then mismatch', async (t) => {
  const { bridge, agent, key } = await setup(t);
  let seen: { fingerprint: string; hostKey: string } | null = null;
  const client = await bridgeClient(t, {
    bridgeUrl: bridge.url,
    host: { name: 'simhost' },
    key: keyPems(key),
    joinToken: await bridge.token('client'),
    onHostKey: (fingerprint, hostKey) => {
      seen = { fingerprint, hostKey };
      return true;
    },
    webSocket: NodeWebSocket,
  });
  assert.equal(seen!.fingerprint, agent.services.hostKey.fingerprint, "first use shows the agent's real fingerprint");

  const mem = await client.admin.systemmanager.memorystats();
  assert.ok(mem.memorystats, 'a typed call answers through the channel');
  const query = await client.query();
  assert.equal((query as Record<string, string>)['admin/users'], 'read/write');

  const stream = client.events.subscribe(['dispatcher']);
  await stream.ready;
  const job = await client.rpc.dispatcher.run({ bridged1: ['echo through', 'echo bridge'] });
  const done = await job.done;
  assert.equal(done.success, 'true');
  let heard: HostadmEvent | null = null;
  for await (const event of stream) {
    if (event.name === 'dispatcher' && (event.args as { proc_id?: string }).proc_id === 'bridged1' && event.args.state === 'finished') {
      heard = event;
      break;
    }
  }
  assert.ok(heard, 'the event came through the bridge');

  // A wrong pinned key: the handshake aborts, naming both fingerprints.
  const wrong = Buffer.alloc(32, 7).toString('base64');
  await assert.rejects(
    connect({
      transport: bridgeTransport({
        bridgeUrl: bridge.url,
        host: { fingerprint: agent.services.hostKey.fingerprint },
        key: keyPems(key),
        pinnedHostKey: wrong,
        webSocket: NodeWebSocket,
      }),
      reconnect: false,
    }),
    (e: unknown) =>
      e instanceof ConnectionError &&
      /host-key-mismatch/.test(e.message) &&
      e.message.includes(agent.services.hostKey.fingerprint) &&
      /pinned SHA256:/.test(e.message),
  );

  // The right pin works with no callback; an unknown host fails at once (not at the timeout), listing
  // the hosts this key may reach.
  const pinnedClient = await bridgeClient(t, {
    bridgeUrl: bridge.url,
    host: { nickname: 'simhost' },
    key: keyPems(key),
    pinnedHostKey: seen!.hostKey,
    webSocket: NodeWebSocket,
  });
  assert.ok((await pinnedClient.admin.systemmanager.memorystats()).memorystats);
  await assert.rejects(
    connect({
      transport: bridgeTransport({
        bridgeUrl: bridge.url,
        host: { name: 'nosuchhost' },
        key: keyPems(key),
        pinnedHostKey: seen!.hostKey,
        webSocket: NodeWebSocket,
      }),
      reconnect: false,
      connectTimeoutMs: 60_000,
    }),
    (e: unknown) => e instanceof ConnectionError && /nosuchhost is not online/.test(e.message) && /may reach: simhost \(SHA256:/.test(e.message),
  );
});

test("the channel's key proof is the sign-in: the client sends no auth_token and keeps the host's token and ttl", async (t) => {
  const { bridge, agent, key } = await setup(t);
  const inner = bridgeTransport({
    bridgeUrl: bridge.url,
    host: { name: 'simhost' },
    key: keyPems(key),
    joinToken: await bridge.token('client'),
    pinnedHostKey: agent.services.hostKey.publicRaw,
    webSocket: NodeWebSocket,
  });
  const sent: string[] = [];
  // The same transport, noting the name of every envelope the client sends on the channel.
  const recording: TransportFactory = {
    description: inner.description,
    async open(handlers, options) {
      const transport = await inner.open(handlers, options);
      return {
        ...transport,
        send: (text) => {
          sent.push((JSON.parse(text) as { name: string }).name);
          transport.send(text);
        },
      };
    },
  };
  const client = await connect({ transport: recording, reconnect: false });
  t.after(() => client.close());
  const session = client.session!;
  assert.equal(session.method, 'key');
  assert.equal(session.ttlSeconds, agent.services.config.tokenTtlSeconds, "the host's ttl, as its C2 reply gave it");
  assert.equal(agent.services.sessions.lookup(session.token)?.user, 'admin', 'the token is the session the host opened for the key');
  assert.ok((await client.admin.systemmanager.memorystats()).memorystats, 'the first call is served in the session C2 opened');
  assert.deepEqual(sent, ['systemmanager'], 'nothing but the call went over the channel: no auth_token');
});

test('the SDK client comes back after the bridge restarts', async (t) => {
  const { bridge, agent, key } = await setup(t);
  const client = await simhostClient(t, bridge, key);
  assert.ok((await client.admin.systemmanager.memorystats()).memorystats);
  let disconnects = 0;
  let reconnects = 0;
  client.on('disconnect', () => disconnects++);
  client.on('reconnect', () => reconnects++);

  const restarted = await bridge.restart();
  await until(() => disconnects > 0, 'the client noticed the bridge went away', 5000);
  // The agent's link reconnects with backoff and is announced again.
  const started = Date.now();
  await until(async () => (await restarted.metrics()).connections.agent === 1, 'the agent rejoined the restarted bridge', 10_000);
  assert.ok(Date.now() - started < 10_000);
  void agent;
  await until(() => reconnects > 0 && client.state === 'open', 'the SDK client reconnected through the restarted bridge', 15_000);
  const again = await client.admin.systemmanager.memorystats();
  assert.ok(again.memorystats, 'calls work again after the reconnect');
});

test('a request too large for the channel fails at once with a local 413; the channel keeps working', async (t) => {
  const { bridge, key } = await setup(t);
  const client = await simhostClient(t, bridge, key);
  const huge = { note: 'x'.repeat(MAX_SEALED_PLAINTEXT_BYTES + 1) };
  // No timeout of its own: before the fix the request waited for the SDK's default request timeout.
  const refused = await client.request('rpc', 'query', huge).then(
    () => assert.fail('an oversized request was answered'),
    (err: unknown) => err,
  );
  assert.ok(refused instanceof HostadmRequestError, `a request error, not ${String(refused)}`);
  assert.equal(refused.code, 413);
  assert.equal(refused.local, true, 'refused before sending');
  assert.match(refused.message, /too large/);
  assert.equal(client.state, 'open');
  assert.ok((await client.admin.systemmanager.memorystats()).memorystats, 'the next call goes through the same channel');
});

test("two SDK clients' frames interleaved on the host's bridge link: each goes to its own channel", async (t) => {
  const { bridge, key } = await setup(t);
  // The same key twice: enrolled by the first, signed in by the second (two connections, two client ids).
  const open = async (joinToken?: string) =>
    bridgeClient(t, {
      bridgeUrl: bridge.url,
      host: { name: 'simhost' },
      key: keyPems(key),
      ...(joinToken ? { joinToken } : {}),
      onHostKey: () => true,
      webSocket: NodeWebSocket,
    });
  const first = await open(await bridge.token('client'));
  const second = await open();
  // Calls in flight on both at once: the host receives the two clients' sealed frames alternately, so
  // a frame opened under the other client's channel would fail authentication and end that channel.
  const calls = Array.from({ length: 40 }, (_, i) => ((i % 2 === 0 ? first : second) as HostadmClient).admin.systemmanager.memorystats());
  const answers = await Promise.all(calls);
  assert.equal(answers.filter((a) => a.memorystats).length, 40, 'every call of both clients is answered');
  assert.equal(first.state, 'open');
  assert.equal(second.state, 'open');
});
