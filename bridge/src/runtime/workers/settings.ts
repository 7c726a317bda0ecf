/** @module The Workers relay's settings: what differs from the Node defaults, and the console logger (workerd's log). */
import type { RelayConfigOverrides } from '../../relay/config.ts';
import type { RelayLogger } from '../../relay/ports.ts';

/** What differs from the Node defaults, and why (see socket.ts). */
export const WORKERS_CONFIG: RelayConfigOverrides = {
  // Peers' protocol pings are answered by the runtime, not seen here: silence is not evidence.
  silentCloseSeconds: Number.POSITIVE_INFINITY,
  // Every revocation made through this bridge reaches the hub at once; the re-read only catches
  // rows changed behind its back (`wrangler d1 execute`), and each re-read wakes the object.
  revocationPollSeconds: 60,
};

/** Under test hooks: counters reach `/metrics` within about a second, as the Node bridge's at once. */
export const TEST_CONFIG: RelayConfigOverrides = { metricsFlushSeconds: 1 };

export function consoleLogger(debug: boolean): RelayLogger {
  const line = (level: string, obj: object, msg?: string) => {
    const fields = Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, v instanceof Error ? v.message : v]));
    console.log(JSON.stringify({ level, msg, ...fields }));
  };
  return {
    debug: (obj, msg) => {
      if (debug) line('debug', obj, msg);
    },
    info: (obj, msg) => line('info', obj, msg),
    warn: (obj, msg) => line('warn', obj, msg),
    error: (obj, msg) => line('error', obj, msg),
  };
}
