/** @module What the Worker and its Durable Object are bound to (infra/wrangler.jsonc). */
import type { RelayHub } from './relay-hub.ts';

export interface BridgeEnv {
  /** Keys, used join tokens, blacklist: the same tables as the Node bridge's SQLite file. */
  DB: D1Database;
  /** The relay objects (class `RelayHub`): the shared room `main`, `host/<fp>` per host, `directory/<uuid>` per directory socket. */
  RELAY_HUB: DurableObjectNamespace<RelayHub>;
  /** Bearer secret of the /admin routes (`wrangler secret put ADMIN_SECRET`; ≥ 32 characters). */
  ADMIN_SECRET: string;
  /** HS256 key of join tokens, as text (`wrangler secret put JOIN_SECRET`; ≥ 32 characters). */
  JOIN_SECRET: string;
  /** What `rpc/identify` on the bridge answers as its hostname (default "bridge"). */
  BRIDGE_HOSTNAME?: string;
  /** "debug" logs every close; default "info". */
  LOG_LEVEL?: string;
  /**
   * "1" only in tests: enables `/_hub/<name>/...` (a hub per test), the `/__test/*` routes (clock,
   * sweep, config, simulated hibernation) and the `x-hostadm-test-address` header. Never set in
   * production: the wrangler configuration does not.
   */
  HOSTADM_TEST_HOOKS?: string;
}

export const MIN_SECRET_LENGTH = 32;

/** Set by the Worker on every request it sends to an object (never taken from a client): its name and scope. */
export const OBJECT_HEADER = 'x-hostadm-object';
export const SCOPE_HEADER = 'x-hostadm-scope';
