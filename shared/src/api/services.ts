import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolString, keyedBy, noArgs, oneOrMany, safeName, str } from './fields.ts';

/** Service (`list_services`, under `services`, keyed by service name). */
export const serviceRecord = lazy(() =>
  z
    .object({
      description: str('Service description'),
      is_enabled: boolString('`true` when the service starts at boot'),
      is_running: boolString('`true` when the service runs now'),
      name: str('Service name'),
      path: str('Full path of the service script'),
      tag: str('The setting name that enables the service, for example `sshd_enable`'),
    })
    .describe('A background daemon'),
);

const serviceNames = (description: string) =>
  z.strictObject({
    services: oneOrMany(safeName('Service name'), `${description}: an array of names, or one name`),
  });

const nameList = (description: string) => z.array(z.string()).describe(description);

export const services = defineClass({
  namespace: 'admin',
  name: 'services',
  description: 'Background daemons: list, start/stop/restart, boot setting',
  limitedAccess: 'read',
  actions: {
    list_services: action({
      description: 'List services',
      args: noArgs,
      reply: () => z.object({ services: keyedBy('Service name', serviceRecord(), 'Services keyed by name') }).describe('Services'),
      access: 'read',
    }),
    start: action({
      description: 'Start services',
      args: () => serviceNames('Services to start'),
      reply: () => z.object({ services_started: nameList('Services that started') }).describe('Started services'),
      access: 'write',
    }),
    stop: action({
      description: 'Stop services',
      args: () => serviceNames('Services to stop'),
      reply: () => z.object({ services_stopped: nameList('Services that stopped') }).describe('Stopped services'),
      access: 'write',
    }),
    restart: action({
      description: 'Restart services (stop, then start at once)',
      args: () => serviceNames('Services to restart'),
      reply: () => z.object({ services_restarted: nameList('Services that restarted') }).describe('Restarted services'),
      access: 'write',
    }),
    enable: action({
      description: 'Start services at boot',
      args: () => serviceNames('Services to enable'),
      reply: () => z.object({ services_enabled: nameList('Services now started at boot') }).describe('Enabled services'),
      access: 'write',
    }),
    disable: action({
      description: 'Do not start services at boot',
      args: () => serviceNames('Services to disable'),
      reply: () => z.object({ services_disabled: nameList('Services no longer started at boot') }).describe('Disabled services'),
      access: 'write',
    }),
  },
});
