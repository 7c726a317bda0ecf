import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { absolutePath, keyedBy, noArgs, str } from './fields.ts';
import { componentName } from './fields-storage.ts';

const beName = (description: string) => componentName(description);

export const beRecord = lazy(() =>
  z
    .object({
      active: str('Flags: `N` active now, `R` active on reboot, `-` inactive; flags combine (`NR`)'),
      date: str('Creation date, `YYYY-MM-DD`'),
      mount: str('Mount point, or `-`'),
      nick: str('Nickname (time-like string)'),
      space: str('Size, for example `12G`'),
    })
    .describe('A boot environment'),
);

export const beadm = defineClass({
  namespace: 'admin',
  name: 'beadm',
  description: 'Boot environments',
  limitedAccess: 'read',
  actions: {
    listbes: action({
      description: 'List boot environments',
      args: noArgs,
      reply: () => z.object({ listbes: keyedBy('Boot environment name', beRecord(), 'Boot environment records keyed by name') }),
      access: 'read',
    }),
    renamebe: action({
      description: 'Rename a boot environment (`target` is the existing one, `source` the new name)',
      args: () =>
        z.strictObject({
          source: beName('The new name'),
          target: beName('The existing boot environment'),
        }),
      reply: () => z.object({ renamebe: z.object({ source: str('The new name'), target: str('The previous name') }).describe('The rename') }),
      access: 'write',
    }),
    activatebe: action({
      description: 'Make a boot environment the default at next boot',
      args: () => z.strictObject({ target: beName('Boot environment to activate') }),
      reply: () => z.object({ activatebe: z.object({ target: str('The activated boot environment') }).describe('The activation') }),
      access: 'write',
    }),
    createbe: action({
      description: 'Create a boot environment, cloned from the active one or from `clonefrom`',
      args: () =>
        z.strictObject({
          newbe: beName('Name of the new boot environment'),
          clonefrom: z
            .string()
            .max(255, 'must be at most 255 characters')
            .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]*(@[A-Za-z0-9_][A-Za-z0-9_.:-]*)?$/, 'must be a boot environment name, or <name>@<snapshot>')
            .describe('Inactive boot environment (or `<be>@<snapshot>`) to clone; default the active one')
            .optional(),
        }),
      reply: () =>
        z.object({
          createbe: z
            .object({
              clonefrom: str('The clone source given; absent when the active environment was cloned').optional(),
              newbe: str('The new boot environment'),
            })
            .describe('The new boot environment'),
        }),
      access: 'write',
    }),
    destroybe: action({
      description: 'Destroy a boot environment (forcibly unmounted first)',
      args: () => z.strictObject({ target: beName('Boot environment to destroy') }),
      reply: () => z.object({ destroybe: z.object({ target: str('The destroyed boot environment') }).describe('The destruction') }),
      access: 'write',
    }),
    mountbe: action({
      description: 'Mount a boot environment',
      args: () =>
        z.strictObject({
          be: beName('Boot environment to mount'),
          mountpoint: absolutePath('Where to mount it; default a temporary directory').optional(),
        }),
      reply: () =>
        z.object({
          mountbe: z.object({ be: str('The mounted boot environment'), mountpoint: str('Where it was mounted').optional() }).describe('The mount'),
        }),
      access: 'write',
    }),
    umountbe: action({
      description: 'Unmount a boot environment (forced even when in use)',
      args: () => z.strictObject({ be: beName('Boot environment to unmount') }),
      reply: () => z.object({ umountbe: z.object({ be: str('The unmounted boot environment') }).describe('The unmount') }),
      access: 'write',
    }),
  },
});
