/**
 * A client that closes is answered at once by the bridge on both runtimes: the close handshake
 * completes (code 1000 back from the bridge), so a CLI command or an SDK script exits as soon as it is
 * done. Before, workerd never answered the close frame and Node's ws waited ~10 s for it (CLI commands
 * took 2.2-2.8 s against workerd, SDK scripts hung ~11 s at exit).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rsaKey } from '../helpers/keys.ts';
import { startTestBridge } from '../bridge/helpers.ts';
import { listBridgeHosts, NodeWebSocket, type WebSocketConstructor } from '../../client/sdk/src/node.ts';

test("the bridge answers a client's close frame: the socket closes cleanly with 1000, not by the client giving up", async (t) => {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const closes: Array<{ code: number; wasClean: boolean }> = [];
  const Recording = class extends (NodeWebSocket as unknown as typeof import('ws').WebSocket) {
    constructor(url: string) {
      super(url);
      this.addEventListener('close', (event) => closes.push({ code: event.code, wasClean: event.wasClean }));
    }
  } as unknown as WebSocketConstructor;
  const hosts = await listBridgeHosts({
    bridgeUrl: bridge.url,
    key: { privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8') },
    joinToken: await bridge.token('client'),
    webSocket: Recording,
  });
  assert.deepEqual(hosts, []);
  for (let i = 0; i < 100 && closes.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(closes, [{ code: 1000, wasClean: true }], 'the bridge sent its close frame back');
});
