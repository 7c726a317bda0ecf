import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { keyedBy, noArgs, onOff, safeName, str } from './fields.ts';
import { PROP_NAME, isPropValue } from './fields-storage.ts';

/** A jail uuid or tag: a safe name (no leading `-` or `.`, no `/`) that also never holds `..`. */
const jailName = lazy(() => safeName('Jail uuid or tag').refine((v) => !v.includes('..'), 'must not contain `..`'));

/** One word of a command: any text but control characters (it is an argv element, never seen by a shell). */
const COMMAND_WORD = /^[^\u0000-\u001f\u007f]+$/;

/**
 * The command of `execjail`, as one argv: a JSON array of words, or a string split at every run of
 * spaces (no quoting, no escapes, no shell: `a  b` is `["a", "b"]`; a word holding a space needs the
 * array form). The program (first word) must not start with `-`.
 */
export const commandArgv = lazy(() =>
  z
    .union([
      z
        .array(z.string().max(4096, 'each word must be at most 4096 characters').regex(COMMAND_WORD, 'words must not hold control characters'))
        .min(1, 'must hold the program')
        .max(256, 'must hold at most 256 words')
        .describe('The argv: program, then its arguments'),
      z
        .string()
        .max(8192, 'must be at most 8192 characters')
        .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not hold control characters (tabs and newlines included)')
        .regex(/[^ ]/, 'must hold the program')
        .describe('Program and arguments separated by spaces (split at each run of spaces; no quoting)'),
    ])
    .transform((v) => (Array.isArray(v) ? v : v.split(/ +/).filter((w) => w !== '')))
    .refine((argv) => argv.length > 0 && argv.length <= 256 && argv.every((w) => w !== ''), 'must be 1 to 256 non-empty words')
    .refine((argv) => !(argv[0] ?? '').startsWith('-'), 'the program must not start with -')
    .describe('The command as one argv: a JSON array of words, or a string split at runs of spaces (no shell)'),
);
const poolName = lazy(() => safeName('ZFS pool name'));

/** `<iface>|<address>[/<prefix>]`, comma-separated: the form of `ip4_addr` / `ip6_addr`. */
const IP_ADDR_LIST = /^[A-Za-z0-9_.]+\|[0-9A-Fa-f.:]+(\/[0-9]{1,3})?(,[A-Za-z0-9_.]+\|[0-9A-Fa-f.:]+(\/[0-9]{1,3})?)*$/;

/** The reason a `<property>=<value>` list is refused, or null when it is valid. */
function propsProblem(props: string): string | null {
  const pairs = props.trim().split(/ +/);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return `\`${pair}\` is not <property>=<value>`;
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (!PROP_NAME.test(name)) return `\`${name}\` is not a property name (lower-case letters, digits, _)`;
    const ipForm = (name === 'ip4_addr' || name === 'ip6_addr') && IP_ADDR_LIST.test(value);
    if (!ipForm && !isPropValue(value)) {
      return `value of \`${name}\` may hold only letters, digits and . , : @ + / % _ - (and <iface>|<address> for ip4_addr/ip6_addr)`;
    }
  }
  return null;
}

/** Space-separated `<property>=<value>` pairs, each name and value checked. */
const propsArg = (description: string) =>
  z
    .string()
    .max(4096, 'must be at most 4096 characters')
    .regex(/^ *[^ ]/, 'must hold at least one <property>=<value> pair')
    .regex(/^[^\t\r\n]*$/, 'pairs are separated by spaces only')
    .superRefine((v, ctx) => {
      const problem = propsProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .describe(description);

/** Output lines of iocage split at the first `:` (label to text). */
const labelText = (description: string) => keyedBy('Label (text before the first `:`)', str('Text after the label'), description);

export const jailRecord = lazy(() =>
  z
    .object({
      boot: onOff('Starts at host boot'),
      ip4: str('IPv4 address, or `-`'),
      jid: str('Jail id; `-` when not running'),
      state: str('Running state: `up` or `down`'),
      tag: str('Friendly name'),
      type: str('`basejail` or `thickjail` (iocage may also report `template` or `plugin`)'),
    })
    .describe('A jail'),
);

/** Property name to string value; see JAIL_SETTING_NAMES (jail-settings.ts) for the full set (mode 2 entries hold `TAG` plus the property). */
export const jailSettingsRecord = lazy(() =>
  z.record(z.string().describe('Property name (or `TAG` in release mode)'), str('Property value')).describe('Jail settings: property name to string value'),
);

export const jailUsageRecord = lazy(() =>
  z
    .object({
      ava: str('Available space'),
      crt: str('Compression ratio, for example `1.00x`'),
      qta: str('Quota'),
      res: str('Reserved space'),
      tag: str('Jail name'),
      use: str('Used space'),
    })
    .describe('Jail resource usage'),
);

const progress = lazy(() =>
  keyedBy(
    'Progress message (`INFO` when nothing was done)',
    z.string().describe('Empty string, or the INFO text'),
    'Progress messages with empty-string values; `{INFO: <message>}` when the jail was already in that state',
  ),
);

/** `{<action>: {success: <message>}}`. */
const successMessage = <K extends string>(key: K, description: string) => {
  const inner = z.object({ success: str(description) }).describe(description);
  return z.object({ [key]: inner } as Record<K, typeof inner>);
};

export const jail = defineClass({
  namespace: 'admin',
  name: 'jail',
  description: 'Jails (operating-system-level virtualization)',
  limitedAccess: 'read',
  actions: {
    listjails: action({
      description: 'List jails',
      args: noArgs,
      reply: () => z.object({ listjails: keyedBy('Jail uuid', jailRecord(), 'Jail records keyed by uuid') }),
      access: 'read',
    }),
    getjailsettings: action({
      description: 'Show jail properties: one, or all of a jail, or one across downloaded releases (`switches: -r`)',
      args: () =>
        z
          .strictObject({
            jail: jailName().optional(),
            prop: z
              .union([z.literal('all'), z.string().regex(PROP_NAME, 'must be a property name (lower-case letters, digits, _)')])
              .describe('One property name (see Jail settings), or `all`; default `all` with `jail`')
              .optional(),
            switches: z.literal('-r').describe('`-r`: report the property for every downloaded release').optional(),
          })
          .refine((a) => a.jail !== undefined || (a.switches !== undefined && a.prop !== undefined && a.prop !== 'all'), {
            message: 'give `jail` (optionally with `prop`), or `switches: -r` with one `prop`',
            path: ['jail'],
          }),
      reply: () =>
        z.object({
          getjailsettings: keyedBy('Jail uuid or tag (release uuid in `-r` mode)', jailSettingsRecord(), 'Settings keyed by jail'),
        }),
      access: 'read',
    }),
    df: action({
      description: 'Show jail disk usage',
      args: noArgs,
      reply: () => z.object({ df: keyedBy('Jail uuid', jailUsageRecord(), 'Usage records keyed by uuid') }),
      access: 'read',
    }),
    startjail: action({
      description: 'Start a jail',
      args: () => z.strictObject({ jail: jailName() }),
      reply: () => z.object({ startjail: keyedBy('The jail as given', progress(), 'Progress of the start, keyed by jail') }),
      access: 'write',
    }),
    stopjail: action({
      description: 'Stop a jail',
      args: () => z.strictObject({ jail: jailName() }),
      reply: () => z.object({ stopjail: keyedBy('The jail as given', progress(), 'Progress of the stop, keyed by jail') }),
      access: 'write',
    }),
    capjail: action({
      description: 'Re-apply resource limits to a running jail without restarting it',
      args: () => z.strictObject({ jail: jailName() }),
      reply: () => successMessage('capjail', 'Message, `jail <jail> capped.`'),
      access: 'write',
    }),
    clonejail: action({
      description: 'Clone a jail, optionally with properties that differ from the source',
      args: () =>
        z.strictObject({
          jail: jailName().describe('Source jail uuid or tag'),
          props: propsArg('Space-separated `<property>=<value>` pairs that differ from the source').optional(),
        }),
      reply: () =>
        z.object({
          clonejail: z
            .object({
              jail: str('The source jail'),
              props: str('The properties given; empty string when none'),
              success: labelText('iocage output lines'),
            })
            .describe('The clone result'),
        }),
      access: 'write',
    }),
    createjail: action({
      description: 'Create a jail from space-separated properties (for example tag and release)',
      args: () =>
        z.strictObject({
          props: propsArg('Space-separated `<property>=<value>` pairs, for example `tag=www release=11.0-RELEASE`'),
          switches: z.enum(['-b', '-c', '-e']).describe('`-e` empty jail, `-b` basejail, `-c` clone-based (thin) jail').optional(),
        }),
      reply: () =>
        z.object({
          createjail: z
            .object({
              props: str('The properties given'),
              switches: str('The switches given; empty string when none'),
              success: z
                .union([z.object({ uuid: str('uuid of the new empty jail') }).describe('With `-e`'), labelText('iocage output lines')])
                .describe('`{uuid}` with `-e`, else iocage output lines'),
            })
            .describe('The create result'),
        }),
      access: 'write',
    }),
    destroyjail: action({
      description: 'Destroy a stopped jail (irreversible, no confirmation; fails when the jail runs)',
      args: () => z.strictObject({ jail: jailName() }),
      reply: () =>
        z.object({
          destroyjail: z.object({ success: labelText('iocage output lines') }).describe('The destroy result'),
        }),
      access: 'write',
    }),
    execjail: action({
      description: 'Run a command inside a jail as a given user',
      args: () =>
        z.strictObject({
          jail: jailName(),
          command: commandArgv(),
          user: safeName('Account inside the jail that runs the command'),
        }),
      reply: () =>
        z.object({
          execjail: z.object({ success: labelText('Command output lines') }).describe('The command output'),
        }),
      // Runs any command as any jail user, root included: as strong as dispatcher `run`.
      access: 'full',
    }),
    cleanjails: action({
      description: 'Destroy all jail datasets and their data',
      args: noArgs,
      reply: () => successMessage('cleanjails', 'Message, `All jails have been cleaned.`'),
      // Destroys every jail (or release, template) hostadm made, whatever its owner: as strong as execjail.
      access: 'full',
    }),
    cleanreleases: action({
      description: 'Delete all fetched releases (unsafe while basejails exist)',
      args: noArgs,
      reply: () => successMessage('cleanreleases', 'Message, `All RELEASEs have been cleaned.`'),
      // Destroys every jail (or release, template) hostadm made, whatever its owner: as strong as execjail.
      access: 'full',
    }),
    cleantemplates: action({
      description: 'Destroy all jail templates',
      args: noArgs,
      reply: () => successMessage('cleantemplates', 'Message, `All templates have been cleaned.`'),
      // Destroys every jail (or release, template) hostadm made, whatever its owner: as strong as execjail.
      access: 'full',
    }),
    cleanall: action({
      description: 'Destroy everything of the jail system',
      args: noArgs,
      reply: () => successMessage('cleanall', 'Message, `All iocage datasets have been cleaned.`'),
      // Destroys every jail (or release, template) hostadm made, whatever its owner: as strong as execjail.
      access: 'full',
    }),
    activatepool: action({
      description: 'Activate a pool for jails, or without `pool` report the active one',
      args: () => z.strictObject({ pool: poolName().describe('Pool to activate; omit to report the active pool').optional() }),
      reply: () =>
        z.object({
          activatepool: z
            .union([
              z.object({ success: str('Message, `pool <pool> activated.`') }).describe('With `pool`'),
              z
                .object({
                  'currently active': z.object({ pool: str('Active pool name (may carry a leading space)') }).describe('The active pool'),
                })
                .describe('Without `pool`'),
            ])
            .describe('Activation message, or the active pool'),
        }),
      access: 'write',
    }),
    deactivatepool: action({
      description: 'Deactivate a jail pool (no data removed; its jails become inaccessible)',
      args: () => z.strictObject({ pool: poolName() }),
      reply: () => successMessage('deactivatepool', 'Message, `pool <pool> deactivated.`'),
      access: 'write',
    }),
  },
});
