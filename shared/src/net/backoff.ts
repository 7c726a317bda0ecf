/**
 * The wait before a reconnect attempt, for every program that redials (the agent's bridge link, the
 * SDK's client). Attempt 0 comes at once, spread over 0–initial/2 (a peer that restarted is usually
 * back by then); attempt n ≥ 1 waits half to all of min(max, initial · 2^(n−1)). The jitter keeps many
 * agents or clients of one restarted peer from redialing in step; the cap keeps a long outage from
 * growing the wait without bound. Runtime-neutral.
 */
export interface BackoffBounds {
  initialMs: number;
  maxMs: number;
}

export function backoffDelay(attempt: number, { initialMs, maxMs }: BackoffBounds, random: () => number = Math.random): number {
  if (attempt <= 0) return random() * (initialMs / 2);
  const base = Math.min(maxMs, initialMs * 2 ** (attempt - 1));
  return base / 2 + random() * (base / 2);
}
