/**
 * `firewall`: the host's packet filter. Ports are validated by the contract (`<1-65535>/<tcp|udp>`,
 * one string or an array) and handled each once; the platform persists open ports and applies them
 * to the running firewall itself. `known_ports` is the host's services database keyed by
 * `<port>/<protocol>` directly in `args`; where a port has several names the first entry wins, as in
 * getservbyport(3).
 *
 * Changes run one at a time per agent: open and close read the open ports, then write them back, so
 * two at once would lose one of them.
 */
import { firewall } from '@hostadm/shared/api/firewall.ts';
import { implementClass } from './types.ts';
import { serialized } from './serialized.ts';
import { formatPortSpec, parsePortSpec, uniquePorts, type KnownPort } from '../platforms/ports/firewall.ts';

const SUCCESS = { result: 'success' } as const;
const bool = (value: boolean) => (value ? 'true' : 'false');

export const firewallImpl = implementClass(firewall, ({ platform }) => {
  const port = platform.ports.firewall;
  if (!port) return null;
  const oneAtATime = serialized();
  return {
    known_ports: async () => keyedByPort(await port.knownPorts()),
    list_open: async () => ({ openports: (await port.listOpen()).map(formatPortSpec) }),
    status: async () => {
      const state = await port.status();
      return { is_enabled: bool(state.enabled), is_running: bool(state.running) };
    },
    open: async (args) => {
      await oneAtATime(() => port.change('open', uniquePorts(args.ports.map(parsePortSpec))));
      return SUCCESS;
    },
    close: async (args) => {
      await oneAtATime(() => port.change('close', uniquePorts(args.ports.map(parsePortSpec))));
      return SUCCESS;
    },
    start: async () => {
      await oneAtATime(() => port.run('start'));
      return SUCCESS;
    },
    stop: async () => {
      await oneAtATime(() => port.run('stop'));
      return SUCCESS;
    },
    restart: async () => {
      await oneAtATime(() => port.run('restart'));
      return SUCCESS;
    },
    enable: async () => {
      await oneAtATime(() => port.setEnabled(true));
      return SUCCESS;
    },
    disable: async () => {
      await oneAtATime(() => port.setEnabled(false));
      return SUCCESS;
    },
    'reset-defaults': async () => {
      await oneAtATime(() => port.resetDefaults());
      return SUCCESS;
    },
  };
});

function keyedByPort(list: readonly KnownPort[]): Record<string, KnownPort> {
  const out: Record<string, KnownPort> = {};
  for (const entry of list) if (!Object.hasOwn(out, entry.port)) out[entry.port] = { description: entry.description, name: entry.name, port: entry.port };
  return out;
}
