/**
 * @module The Worker entry (infra/wrangler.jsonc `main`): every request goes to the relay hub, a
 * Durable Object that runs the shared Hono app next to the peers' WebSockets (relay-hub.ts). One
 * hub serves the deployment ("main"); with test hooks on, `/_hub/<name>/<path>` reaches hub
 * `<name>` at `<path>`, so each test gets a fresh relay on one workerd.
 */
import type { BridgeEnv } from './env.ts';

export { RelayHub } from './relay-hub.ts';

const MAIN_HUB = 'main';
const HUB_PATH = /^\/_hub\/([A-Za-z0-9_-]{1,64})(\/.*)$/;

export default {
  async fetch(request: Request, env: BridgeEnv): Promise<Response> {
    let hub = MAIN_HUB;
    let forwarded = request;
    const url = new URL(request.url);
    const match = env.HOSTADM_TEST_HOOKS === '1' ? HUB_PATH.exec(url.pathname) : null;
    if (match) {
      hub = match[1]!;
      url.pathname = match[2]!;
      forwarded = new Request(url, request);
    }
    return env.RELAY_HUB.get(env.RELAY_HUB.idFromName(hub)).fetch(forwarded);
  },
} satisfies ExportedHandler<BridgeEnv>;
