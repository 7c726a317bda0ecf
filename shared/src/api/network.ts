import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolString, keyedBy, noArgs, str } from './fields.ts';

/** Network device (`list-devices`, keyed by device name). */
export const networkDeviceRecord = lazy(() =>
  z
    .object({
      MAC: str('Hardware address, lower-case colon-separated hex (empty when none)'),
      description: str('Device description'),
      ipv4: str('IPv4 address (`0.0.0.0` when none)'),
      ipv6: str('First IPv6 address (may carry `%<scope>`; empty when none)'),
      is_active: boolString('`true` when the interface is up'),
      is_dhcp: boolString('`true` when the interface is configured by DHCP'),
      is_wireless: boolString('`true` for a wireless interface'),
      netmask: str('IPv4 netmask, dotted'),
      status: str('Link status, for example `active`, `associated` or `no carrier`'),
    })
    .describe('A network device'),
);

export const network = defineClass({
  namespace: 'admin',
  name: 'network',
  description: 'Network devices',
  limitedAccess: 'read',
  actions: {
    'list-devices': action({
      description: 'List network devices',
      args: noArgs,
      reply: () => keyedBy('Device name', networkDeviceRecord(), 'Network devices keyed by name'),
      access: 'read',
    }),
  },
});
