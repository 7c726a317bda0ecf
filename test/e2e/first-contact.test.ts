/**
 * The first contact with a host through a bridge it does not trust, played by an attacker: a password
 * sign-in inside the channel is invisible on the wire and in the bridge's files; guesses through the
 * bridge are blacklisted per client key, across reconnects; a host that refuses passwords is not offered
 * to a client that asks for it by name; a client key never becomes usable on a host without the
 * password or the host administrator's say.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentFor } from '../helpers/agent.ts';
import { rsaKey, type TestKey, keyPems } from '../helpers/keys.ts';
import { BRIDGE_RUNTIME, startTestBridge, type TestBridge } from '../bridge/helpers.ts';
import { bridgeTransport, connect, HostadmRequestError, KeyNotRegisteredError, listBridgeHosts, NodeWebSocket } from '../../client/sdk/src/node.ts';

/** Forwards a client's leg to the bridge and keeps every byte that crossed, both ways. */
async function recordingMiddle(t: TestContext, bridgeUrl: string): Promise<{ url: string; seen: () => string; binaryFrames: () => number }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const frames: string[] = [];
  let binaryFrames = 0;
  // Binary frames (hsc2's sealed frames) stay binary and are recorded byte for byte (as latin1).
  const record = (data: RawData, binary: boolean): string | Buffer => {
    const bytes = data as Buffer;
    if (binary) binaryFrames++;
    frames.push(bytes.toString(binary ? 'latin1' : 'utf8'));
    return binary ? Buffer.from(bytes) : bytes.toString();
  };
  server.on('connection', (client, request) => {
    const upstream = new WebSocket(new URL(request.url ?? '/', bridgeUrl).toString().replace(/^http/, 'ws'));
    const queue: Array<string | Buffer> = [];
    upstream.on('open', () => queue.splice(0).forEach((f) => upstream.send(f, { binary: typeof f !== 'string' })));
    upstream.on('message', (data: RawData, binary) => client.send(record(data, binary), { binary }));
    upstream.on('close', () => client.close());
    client.on('close', () => upstream.close());
    client.on('message', (data: RawData, binary) => {
      const frame = record(data, binary);
      if (upstream.readyState === WebSocket.OPEN) upstream.send(frame, { binary });
      else queue.push(frame);
    });
  });
  const { port } = server.address() as { port: number };
  return { url: `ws://127.0.0.1:${port}${new URL(bridgeUrl).pathname}`, seen: () => frames.join('\n'), binaryFrames: () => binaryFrames };
}

async function hostBehindBridge(
  t: TestContext,
  options: { password: string; allowPasswordAuth?: boolean },
): Promise<{ bridge: TestBridge; agent: Awaited<ReturnType<typeof agentFor>> }> {
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, {
    simPassword: options.password,
    ...(options.allowPasswordAuth === false ? { config: { allowPasswordAuth: false } } : {}),
    bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'web1' }), nickname: 'web1' },
  });
  await agent.bridgeLink?.ready();
  return { bridge, agent };
}

/** The SDK reaching `web1` through `bridgeUrl` with `key` (first use accepted), optionally enrolling and signing in by password. */
function reachWeb1(bridgeUrl: string, key: TestKey, options: { joinToken?: string; password?: string } = {}) {
  return connect({
    transport: bridgeTransport({
      bridgeUrl,
      host: { name: 'web1' },
      key: keyPems(key),
      ...(options.joinToken ? { joinToken: options.joinToken } : {}),
      onHostKey: () => true,
      webSocket: NodeWebSocket,
    }),
    ...(options.password !== undefined ? { auth: { username: 'admin', password: options.password } } : {}),
    reconnect: false,
  });
}

/** Every file under `dir`, as text (the bridge's database, WAL and secrets). */
function filesUnder(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    out += statSync(path).isDirectory() ? filesUnder(path) : readFileSync(path).toString('latin1');
  }
  return out;
}

test('a password sign-in inside the channel crosses the bridge sealed: not in any frame, not in its files; then the key alone signs in', async (t) => {
  const password = `pw-${randomBytes(12).toString('hex')}`;
  const { bridge } = await hostBehindBridge(t, { password });
  const middle = await recordingMiddle(t, bridge.url);
  const key = rsaKey();
  const first = await reachWeb1(middle.url, key, { joinToken: await bridge.token('client'), password });
  assert.equal(first.session?.method, 'password');
  await first.registerKey({ privatePem: keyPems(key).privatePem, certPem: keyPems(key).publicPem, nickname: 'first contact' });
  await first.close();

  const seen = middle.seen();
  assert.ok(middle.binaryFrames() > 0 && !seen.includes('hsc1.'), 'sealed frames crossed, as hsc2 (binary)');
  assert.ok(!seen.includes(password), 'the password is in no frame the bridge relayed');
  assert.ok(!seen.includes(Buffer.from(password).toString('base64')), 'nor in base64');
  if (BRIDGE_RUNTIME === 'node') assert.ok(!filesUnder(bridge.dataDir).includes(password), "nor in the bridge's files");

  // The next connection proves the key and is signed in with no password at all.
  const second = await reachWeb1(bridge.url, key);
  t.after(() => second.close());
  assert.equal(second.session?.method, 'key', "signed in by the channel's key proof alone");
  assert.ok((await second.admin.systemmanager.memorystats()).memorystats);
  const hosts = await listBridgeHosts({ bridgeUrl: bridge.url, key: keyPems(key), webSocket: NodeWebSocket });
  assert.deepEqual(
    hosts.map((h) => [h.nickname, h.access]),
    [['web1', 'key']],
  );
});

test('password guesses through the bridge are blacklisted per client key, across reconnects', async (t) => {
  const { bridge, agent } = await hostBehindBridge(t, { password: 'right-one' });
  const key = rsaKey();
  const factory = bridgeTransport({
    bridgeUrl: bridge.url,
    host: { name: 'web1' },
    key: keyPems(key),
    joinToken: await bridge.token('client'),
    onHostKey: () => true,
    webSocket: NodeWebSocket,
  });
  const codes: number[] = [];
  for (let i = 0; i < 7; i++) {
    // A new connection (and a new connection id at the bridge) for every guess.
    const code = await connect({ transport: factory, auth: { username: 'admin', password: `guess-${i}` }, reconnect: false }).then(
      async (c) => {
        await c.close();
        return 200;
      },
      (err: unknown) => (err instanceof HostadmRequestError ? err.code : -1),
    );
    codes.push(code);
  }
  assert.deepEqual(codes.slice(0, 5), [401, 401, 401, 401, 401], `the first five are checked: ${codes.join(', ')}`);
  assert.deepEqual(codes.slice(5), [429, 429], 'then the key is blocked, whatever connection it comes on');
  const blocked = await connect({ transport: factory, auth: { username: 'admin', password: 'right-one' }, reconnect: false }).catch((e: unknown) => e);
  assert.ok(blocked instanceof HostadmRequestError && blocked.code === 429, 'even the right password waits out the block');
  assert.equal(agent.services.keys.checksums().length, 0, 'no key was registered');
});

test('a host that refuses passwords is not offered to a client naming it, and its key stays unknown there', async (t) => {
  const { bridge } = await hostBehindBridge(t, { password: 'unused', allowPasswordAuth: false });
  const key = rsaKey();
  const hosts = await listBridgeHosts({
    bridgeUrl: bridge.url,
    key: keyPems(key),
    joinToken: await bridge.token('client'),
    reach: ['web1'],
    webSocket: NodeWebSocket,
  });
  assert.deepEqual(hosts, [], 'nothing to reach: the host accepts neither this key nor a password');
  await assert.rejects(reachWeb1(bridge.url, key, { password: 'unused' }), /web1 is not online .* for this key \(hosts this key may reach: none\)/);
});

test('a host that accepts passwords but is given none: a clear error naming what to do, not a silent 401', async (t) => {
  const { bridge } = await hostBehindBridge(t, { password: 'unused' });
  const key = rsaKey();
  await assert.rejects(
    reachWeb1(bridge.url, key, { joinToken: await bridge.token('client') }),
    (e: unknown) => e instanceof KeyNotRegisteredError && /does not know this key yet/.test(e.message),
  );
});
