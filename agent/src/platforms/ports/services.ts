/**
 * The `services` port: background daemons on one platform. Names reaching it were validated by the
 * contract and resolved against `inventory()` by the handler, so a port never sees an unknown name.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { RunResult } from '../../runner/runner.ts';

/** What a request can address: enough to act on a service, without probing whether it runs. */
export interface ServiceRef {
  /** The key of `list_services` and what requests name. */
  name: string;
  /** The setting that enables it at boot: an rc.conf variable, a systemd unit, an init script. */
  tag: string;
  /** What the platform's tools are given: the rc.d script file name, the unit, the init script. */
  handle: string;
  enabled: boolean;
  /** Set when the boot setting cannot be changed (a static systemd unit): the reason. */
  bootFixed?: string;
}

/** One `list_services` record before the handler turns it into strings. */
export interface ServiceStatus {
  name: string;
  description: string;
  /** Full path of the script or unit file. */
  path: string;
  tag: string;
  enabled: boolean;
  running: boolean;
}

export type RuntimeAction = 'start' | 'stop' | 'restart';

/** Reverts one boot-setting change (the handler calls it when a later change of the batch fails). */
export type Undo = () => Promise<void>;

export interface ServicesPort {
  /** Every service and whether it runs now; probes each one, so it is slower than `inventory`. */
  list(): Promise<ServiceStatus[]>;
  /** Every service the host knows, without probing whether it runs. */
  inventory(): Promise<ServiceRef[]>;
  /**
   * Starts, stops or restarts one service. A service already in the asked state counts as done;
   * anything else that fails throws a HOST_ERROR naming the command and its message.
   */
  run(service: ServiceRef, action: RuntimeAction): Promise<void>;
  /** Turns starting at boot on or off, and resolves to what undoes exactly that change. */
  setEnabled(service: ServiceRef, enabled: boolean): Promise<Undo>;
}

/** A failed host command as the error the client sees: what ran, how it ended, what it said. */
export function commandFailed(what: string, result: RunResult): HostadmError {
  const how = result.timedOut ? 'timed out' : result.code !== null ? `exited with code ${result.code}` : `was killed by ${result.signal ?? 'a signal'}`;
  // rc.d scripts and init scripts print their reasons on either stream.
  const said = (result.stderr.trim() || result.stdout.trim()).slice(0, 500);
  return new HostadmError('HOST_ERROR', `${what} ${how}${said === '' ? '' : `: ${said}`}`);
}

/**
 * Runs `probe` over `items` with at most `limit` at once, keeping the order of `items` in the result.
 * Status probes are one process each; a host has a hundred or more, and running them one after the
 * other makes `list_services` take seconds.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, probe: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await probe(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
