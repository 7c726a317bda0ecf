/**
 * The simulated host's firewall: ipfw as the original drove it. Whether it runs and starts at boot
 * is the `ipfw` service of the services slice (so `services` and `firewall` always agree: stopping
 * ipfw there stops the firewall here); the open ports are the `firewall` slice. The services database
 * is an excerpt of FreeBSD 14's /etc/services, parsed like the real one. A stock FreeBSD host has no
 * firewall reset script, so `reset-defaults` answers as the real FreeBSD platform does there.
 */
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { SimContext } from './index.ts';
import { seedServices, type SimService } from './services.ts';
import { parseServicesDb } from '../common/services-db.ts';
import { formatPortSpec, parsePortSpec, uniquePorts, type FirewallPort } from '../ports/firewall.ts';

export interface SimFirewall {
  /** `<number>/<protocol>`, in port order. */
  open: string[];
}

/** From FreeBSD 14.1's /etc/services (the entries a server administrator meets first). */
const SERVICES_EXCERPT = `
ftp-data	 20/tcp	   #File Transfer [Default Data]
ftp-data	 20/udp	   #File Transfer [Default Data]
ftp		 21/tcp	   #File Transfer [Control]
ftp		 21/udp	   #File Transfer [Control]
ssh		 22/tcp	   #Secure Shell Login
ssh		 22/udp	   #Secure Shell Login
telnet		 23/tcp
telnet		 23/udp
smtp		 25/tcp	   mail		#Simple Mail Transfer
smtp		 25/udp	   mail		#Simple Mail Transfer
domain		 53/tcp	   #Domain Name Server
domain		 53/udp	   #Domain Name Server
http		 80/tcp	   www www-http	#World Wide Web HTTP
http		 80/udp	   www www-http	#World Wide Web HTTP
pop3		110/tcp	   #Post Office Protocol - Version 3
pop3		110/udp	   #Post Office Protocol - Version 3
ntp		123/tcp	   #Network Time Protocol
ntp		123/udp	   #Network Time Protocol
imap		143/tcp	   imap2 imap4	#Interim Mail Access Protocol v2
imap		143/udp	   imap2 imap4	#Interim Mail Access Protocol v2
https		443/tcp
https		443/udp
submission	587/tcp
submission	587/udp
imaps		993/tcp
imaps		993/udp
postgresql	5432/tcp   #PostgreSQL Database
postgresql	5432/udp   #PostgreSQL Database
`;

export function simFirewall(ctx: SimContext): FirewallPort {
  const services = ctx.store.slice('services', seedServices);
  // sshd runs on the simulated host, so its port is open: starting the firewall locks nobody out.
  const slice = ctx.store.slice<SimFirewall>('firewall', () => ({ open: ['22/tcp'] }));
  const updateIpfw = (change: (ipfw: SimService) => void) =>
    services.update((draft) => {
      // A services slice from before ipfw was simulated gets it from the seed.
      const ipfw = draft.ipfw ?? (seedServices().ipfw as SimService);
      change(ipfw);
      draft.ipfw = ipfw;
    });
  return {
    async knownPorts() {
      return parseServicesDb(SERVICES_EXCERPT);
    },
    async listOpen() {
      return slice.get().open.map(parsePortSpec);
    },
    async status() {
      const ipfw = services.get().ipfw;
      return { enabled: ipfw?.enabled ?? false, running: ipfw?.running ?? false };
    },
    async change(action, ports) {
      const asked = new Set(ports.map(formatPortSpec));
      slice.update((draft) => {
        const current = draft.open.map(parsePortSpec);
        const next = action === 'open' ? [...current, ...ports] : current.filter((p) => !asked.has(formatPortSpec(p)));
        draft.open = uniquePorts(next).map(formatPortSpec);
      });
    },
    async run(action) {
      updateIpfw((ipfw) => {
        ipfw.running = action !== 'stop';
      });
    },
    async setEnabled(enabled) {
      updateIpfw((ipfw) => {
        ipfw.enabled = enabled;
      });
    },
    async resetDefaults() {
      throw unsupported('reset-defaults: this FreeBSD host has no firewall reset script (/usr/local/share/trueos/scripts/reset-firewall, TrueOS only)');
    },
  };
}
