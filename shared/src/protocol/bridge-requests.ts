/**
 * The two requests a bridge sends to its peers (docs/bridge-protocol.md §2.1, §2.4), named by their
 * fixed ids: identify on connect, and the key list right after sign-in. A peer answers exactly these,
 * recognised by id, name and arguments together: an `rpc/settings` with another id is not the key list.
 * Before identify, a bridge that offers it sends its greeting (§2.3): a sign-in challenge for this
 * connection, which saves the peer the `auth_ssl` stage-1 round trip.
 */
import { isChallengeShaped } from '../crypto/signed-messages.ts';
import type { WireEnvelope } from './envelope.ts';

export const BRIDGE_IDENT_ID = 'bridge_request_ident';
export const BRIDGE_LIST_KEYS_ID = 'bridge_request_list_keys';

export const BRIDGE_IDENT_REQUEST = { id: BRIDGE_IDENT_ID, name: 'identify', namespace: 'rpc', args: '' } as const;
export const BRIDGE_LIST_KEYS_REQUEST = { id: BRIDGE_LIST_KEYS_ID, name: 'settings', namespace: 'rpc', args: { action: 'list_ssl_checksums' } } as const;

/** Which of the bridge's own requests `env` is, or null. */
export function bridgeRequestOf(env: WireEnvelope): 'identify' | 'list-keys' | null {
  if (env.namespace !== 'rpc') return null;
  if (env.id === BRIDGE_IDENT_ID && env.name === 'identify') return 'identify';
  const args = env.args;
  if (
    env.id === BRIDGE_LIST_KEYS_ID &&
    env.name === 'settings' &&
    typeof args === 'object' &&
    args !== null &&
    (args as { action?: unknown }).action === 'list_ssl_checksums'
  ) {
    return 'list-keys';
  }
  return null;
}

/** The name of the greeting event (its args: `{test_string, expires_in, early_relay?}`). */
export const BRIDGE_GREETING_EVENT = 'bridge_greeting';

/**
 * The relay destination that names, in a host's room (`/relay/host/<fp>`), the agent of that room
 * when it is announced to the sender. A peer that has not yet seen the announcement (a client whose
 * frame goes out with its stage 2: docs/bridge-protocol.md §2.3, "Relay in the sign-in's flight")
 * uses it; ids are `agent-…` and `client-…`, so it names no connection.
 */
export const ROOM_HOST_DESTINATION = '@host';

/**
 * The greeting's test string, when `env` is a greeting whose test string has the shape a bridge issues
 * (32 letters and digits: signers refuse anything else); else null, and the peer uses stage 1.
 */
export function greetingChallengeOf(env: WireEnvelope): string | null {
  return greetingOf(env)?.testString ?? null;
}

/**
 * The greeting, when `env` is one with a well-shaped test string: that string, and whether the bridge
 * holds relay frames sent behind a stage 2 until it is judged and takes ROOM_HOST_DESTINATION
 * (`early_relay: true`; a bridge from before says nothing, and the peer then waits for its announcement).
 */
export function greetingOf(env: WireEnvelope): { testString: string; earlyRelay: boolean } | null {
  if (env.name !== 'event' || env.namespace !== 'events' || typeof env.args !== 'object' || env.args === null) return null;
  const event = env.args as { name?: unknown; args?: unknown };
  if (event.name !== BRIDGE_GREETING_EVENT || typeof event.args !== 'object' || event.args === null) return null;
  const { test_string: testString, early_relay: earlyRelay } = event.args as { test_string?: unknown; early_relay?: unknown };
  if (typeof testString !== 'string' || !isChallengeShaped('bridge-signin', testString)) return null;
  return { testString, earlyRelay: earlyRelay === true };
}
