/**
 * The simulated host's rc.d services (the `services` slice): what a FreeBSD 14 server with a web
 * server and a database shows. Descriptions and tags are those of the real scripts (`desc=`,
 * `rcvar=`), including the ports' scripts, which carry no `desc`, and ipfw, whose tag is
 * `firewall_enable`.
 */
import type { SimContext } from './index.ts';
import type { ServicesPort, ServiceStatus } from '../ports/services.ts';

/** The simulated host keeps each service as the port reports it. */
export type SimService = ServiceStatus;

export type SimServices = Record<string, SimService>;

function base(name: string, description: string, enabled: boolean, tag = `${name}_enable`): SimService {
  return { name, description, path: `/etc/rc.d/${name}`, tag, enabled, running: enabled };
}

function port(name: string, enabled: boolean): SimService {
  return { name, description: '', path: `/usr/local/etc/rc.d/${name}`, tag: `${name}_enable`, enabled, running: enabled };
}

export function seedServices(): SimServices {
  const list = [
    base('cron', 'Daemon to execute scheduled commands', true),
    base('devd', 'Device state change daemon', true),
    base('inetd', 'Internet "super-server"', false),
    base('ipfw', 'Firewall, traffic shaper, packet scheduler, in-kernel NAT', false, 'firewall_enable'),
    base('local_unbound', 'Local caching forwarding resolver', false),
    base('moused', 'Mouse daemon', false),
    base('ntpd', 'Network Time Protocol daemon', true),
    base('pf', 'Packet filter', false),
    base('powerd', 'Modify the power profile based on AC line state', false),
    base('sendmail', 'Electronic mail transport agent', false),
    base('sshd', 'Secure Shell Daemon', true),
    base('syslogd', 'System log daemon', true),
    port('nginx', true),
    port('postgresql', true),
  ];
  return Object.fromEntries(list.map((s) => [s.name, s]));
}

export function simServices(ctx: SimContext): ServicesPort {
  const slice = ctx.store.slice('services', seedServices);
  const get = (name: string): SimService => {
    const service = slice.get()[name];
    // The handler resolves names through inventory() first; getting here means a bug, not a client error.
    if (!service) throw new Error(`sim services: no service ${name}`);
    return service;
  };
  return {
    async list(): Promise<ServiceStatus[]> {
      return Object.values(slice.get()).map((s) => ({ ...s }));
    },
    async inventory() {
      return Object.values(slice.get()).map((s) => ({ name: s.name, tag: s.tag, handle: s.name, enabled: s.enabled }));
    },
    async run(service, action) {
      get(service.name);
      slice.update((draft) => {
        (draft[service.name] as SimService).running = action !== 'stop';
      });
    },
    async setEnabled(service, enabled) {
      const before = get(service.name).enabled;
      const set = (value: boolean) =>
        slice.update((draft) => {
          (draft[service.name] as SimService).enabled = value;
        });
      set(enabled);
      return async () => set(before);
    },
  };
}
