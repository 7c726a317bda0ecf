/**
 * The `firewall` port: the host's packet filter, one family per platform (ipfw on FreeBSD, an
 * nftables table of ours on Linux, a simulated ipfw in sim). Ports reaching it were validated by the
 * contract (`<1-65535>/<tcp|udp>`), deduplicated and put in `portOrder` by the handler.
 */

export type Protocol = 'tcp' | 'udp';

/** One port of the wire's `<number>/<protocol>` form, split. */
export interface PortSpec {
  number: number;
  protocol: Protocol;
}

/** One services-database entry (`known_ports`). */
export interface KnownPort {
  /** `<number>/<protocol>` */
  port: string;
  name: string;
  description: string;
}

export interface FirewallState {
  /** Starts at boot. */
  enabled: boolean;
  /** Filtering now, as the kernel says. */
  running: boolean;
}

export type FirewallRuntimeAction = 'start' | 'stop' | 'restart';

export interface FirewallPort {
  /** The host's services database, in its order (the handler keys it by port). */
  knownPorts(): Promise<KnownPort[]>;
  /** The ports the firewall lets in, in `portOrder`. */
  listOpen(): Promise<PortSpec[]>;
  status(): Promise<FirewallState>;
  /**
   * Lets these ports in (`open`) or stops letting them in (`close`), persistently, and applies that
   * to the running firewall. Ports already in the asked state are no error.
   */
  change(action: 'open' | 'close', ports: readonly PortSpec[]): Promise<void>;
  run(action: FirewallRuntimeAction): Promise<void>;
  setEnabled(enabled: boolean): Promise<void>;
  /** Back to the platform's defaults and restarted; UNSUPPORTED (with the reason) where there are none to go back to. */
  resetDefaults(): Promise<void>;
}

/** `22/tcp` → `{number: 22, protocol: 'tcp'}`; the contract has already checked the form. */
export function parsePortSpec(text: string): PortSpec {
  const [number, protocol] = text.split('/');
  return { number: Number(number), protocol: protocol === 'udp' ? 'udp' : 'tcp' };
}

export function formatPortSpec(port: PortSpec): string {
  return `${port.number}/${port.protocol}`;
}

/** By number, then tcp before udp. */
export function portOrder(a: PortSpec, b: PortSpec): number {
  return a.number - b.number || a.protocol.localeCompare(b.protocol);
}

/** Each port once, in `portOrder`. */
export function uniquePorts(ports: readonly PortSpec[]): PortSpec[] {
  const byKey = new Map(ports.map((p) => [formatPortSpec(p), p]));
  return [...byKey.values()].sort(portOrder);
}
