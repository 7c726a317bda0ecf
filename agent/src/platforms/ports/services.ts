/**
 * The `services` port: background daemons on one platform. Names reaching it were validated by the
 * contract and resolved against `inventory()` by the handler, so a port never sees an unknown name.
 */

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
