import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolString, keyedBy, noArgs, oneOrMany, resultSuccess, str } from './fields.ts';
import { portSpec } from './fields-system.ts';

/** Known port (`known_ports`, keyed by `<port>/<protocol>`). */
export const knownPortRecord = lazy(() =>
  z
    .object({
      description: str('Comment text of the services database entry (may be empty)'),
      name: str('Service name'),
      port: str('`<number>/<protocol>`'),
    })
    .describe('A well-known port'),
);

/** Firewall state (`status`). */
export const firewallStateRecord = lazy(() =>
  z
    .object({
      is_enabled: boolString('`true` when the firewall starts at boot'),
      is_running: boolString('`true` when the firewall is running now'),
    })
    .describe('Firewall state'),
);

// The original accepted one string or an array; the spec says array. One string is accepted and normalized.
// Port 0 (which the original let through) cannot be opened or closed in any packet filter: 1 to 65535 only.
const ports = lazy(() => oneOrMany(portSpec('A port, `<number>/<tcp|udp>`, number 1 to 65535'), 'Ports, each `<number>/<tcp|udp>`'));

export const firewall = defineClass({
  namespace: 'admin',
  name: 'firewall',
  description: 'Host packet firewall: open ports, state, start/stop, boot setting',
  limitedAccess: 'read',
  actions: {
    known_ports: action({
      description: 'List well-known ports (static list, independent of what is open)',
      args: noArgs,
      reply: () => keyedBy('`<port>/<protocol>`', knownPortRecord(), 'Known ports keyed by `<port>/<protocol>`'),
      access: 'read',
    }),
    list_open: action({
      description: 'List the ports opened in the firewall',
      args: noArgs,
      reply: () => z.object({ openports: z.array(str('`<number>/<protocol>`')).describe('Open ports, each `<number>/<protocol>`') }).describe('Open ports'),
      access: 'read',
    }),
    status: action({
      description: 'Report whether the firewall runs and whether it starts at boot',
      args: noArgs,
      reply: firewallStateRecord,
      access: 'read',
    }),
    open: action({
      description: 'Open ports in the firewall (restarts it when running)',
      args: () => z.strictObject({ ports: ports().describe('Ports to open, each `<number>/<tcp|udp>`') }),
      reply: resultSuccess,
      access: 'write',
    }),
    close: action({
      description: 'Close ports in the firewall (restarts it when running)',
      args: () => z.strictObject({ ports: ports().describe('Ports to close, each `<number>/<tcp|udp>`') }),
      reply: resultSuccess,
      access: 'write',
    }),
    start: action({ description: 'Start the firewall', args: noArgs, reply: resultSuccess, access: 'write' }),
    stop: action({ description: 'Stop the firewall', args: noArgs, reply: resultSuccess, access: 'write' }),
    restart: action({
      description: 'Reload the firewall (not usually needed)',
      args: noArgs,
      reply: resultSuccess,
      access: 'write',
    }),
    enable: action({ description: 'Start the firewall at boot', args: noArgs, reply: resultSuccess, access: 'write' }),
    disable: action({
      description: 'Do not start the firewall at boot',
      args: noArgs,
      reply: resultSuccess,
      access: 'write',
    }),
    'reset-defaults': action({
      description: 'Reset all firewall settings and restart it (error where unsupported)',
      args: noArgs,
      reply: resultSuccess,
      access: 'write',
    }),
  },
});
