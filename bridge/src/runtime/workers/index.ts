/**
 * @module The Worker entry (infra/wrangler.jsonc `main`): each request goes to the Durable Object of
 * the room its path names (relay/rooms.ts, docs/bridge-protocol.md §2.10), which runs the shared Hono
 * app next to that room's WebSockets (relay-hub.ts):
 *
 *   /relay/host/<fp>   → object `host/<fp>`           (one per host: its agent and the clients reaching it)
 *   /relay/directory   → object `directory/<uuid>`    (one per directory socket)
 *   anything else      → object `main`                (the shared room /relay, /admin, /metrics, /healthz)
 *
 * With test hooks on, `/_hub/<name>/<path>` does the same inside scope `<name>` (objects `<name>`,
 * `<name>/host/<fp>`, ...), so each test gets fresh objects and its own rows on one workerd.
 */
import { DIRECTORY_ROOM, roomOfPath } from '../../relay/rooms.ts';
import { OBJECT_HEADER, SCOPE_HEADER, type BridgeEnv } from './env.ts';

export { RelayHub } from './relay-hub.ts';

const MAIN = 'main';
const HUB_PATH = /^\/_hub\/([A-Za-z0-9_-]{1,64})(\/.*)$/;

/** The object a path goes to, within `scope` ('' in a deployment). */
export function objectFor(path: string, scope: string): string {
  const shared = scope || MAIN;
  if (!path.startsWith('/relay/')) return shared;
  const room = roomOfPath(path.slice('/relay'.length));
  if (room === null || room === '') return shared;
  const name = room === DIRECTORY_ROOM ? `${DIRECTORY_ROOM}/${crypto.randomUUID()}` : room;
  return scope ? `${scope}/${name}` : name;
}

export default {
  async fetch(request: Request, env: BridgeEnv): Promise<Response> {
    const url = new URL(request.url);
    let scope = '';
    const match = env.HOSTADM_TEST_HOOKS === '1' ? HUB_PATH.exec(url.pathname) : null;
    if (match) {
      scope = match[1]!;
      url.pathname = match[2]!;
    }
    const object = objectFor(url.pathname, scope);
    const forwarded = new Request(url, request);
    forwarded.headers.set(OBJECT_HEADER, object);
    forwarded.headers.set(SCOPE_HEADER, scope);
    return env.RELAY_HUB.get(env.RELAY_HUB.idFromName(object)).fetch(forwarded);
  },
} satisfies ExportedHandler<BridgeEnv>;
