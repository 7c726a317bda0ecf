/**
 * `jail`: jails (iocage on FreeBSD, namespace containers on Linux, a simulated iocage in sim). Names,
 * properties and the command are validated by the contract; the port resolves a jail by uuid or tag
 * (404 naming `jail`), refuses what the spec's states forbid (409: destroying a running jail, exec or
 * cap on a stopped one) and rolls a failed create back. Here the replies take the spec's shapes:
 * progress messages as keys, `{INFO: ...}` when nothing was done, output lines split at the first `:`.
 *
 * Changes run one at a time per agent: two creates with the same tag, or a destroy during a start,
 * would otherwise race on the same jail.
 */
import { jail } from '@hostadm/shared/api/jail.ts';
import { implementClass } from './types.ts';
import { serialized } from './serialized.ts';
import { labelLines, progressKeys, splitProps, type JailProgress } from '../platforms/ports/jail.ts';

const progressOf = (p: JailProgress): Record<string, string> => (p.changed ? progressKeys(p.messages) : { INFO: p.info });

export const jailImpl = implementClass(jail, ({ platform }) => {
  const port = platform.ports.jail;
  if (!port) return null;
  const oneAtATime = serialized();
  return {
    listjails: async () => {
      const out: Record<string, { boot: 'on' | 'off'; ip4: string; jid: string; state: string; tag: string; type: string }> = {};
      for (const j of await port.list()) out[j.uuid] = { boot: j.boot, ip4: j.ip4, jid: j.jid, state: j.state, tag: j.tag, type: j.type };
      return { listjails: out };
    },
    getjailsettings: async (args) => {
      if (args.jail === undefined) return { getjailsettings: await port.releaseSettings(args.prop ?? 'all') };
      return { getjailsettings: { [args.jail]: await port.settings(args.jail, args.prop ?? 'all') } };
    },
    df: async () => {
      const out: Record<string, { ava: string; crt: string; qta: string; res: string; tag: string; use: string }> = {};
      for (const u of await port.usage()) out[u.uuid] = { ava: u.ava, crt: u.crt, qta: u.qta, res: u.res, tag: u.tag, use: u.use };
      return { df: out };
    },
    startjail: async (args) => ({ startjail: { [args.jail]: progressOf(await oneAtATime(() => port.start(args.jail))) } }),
    stopjail: async (args) => ({ stopjail: { [args.jail]: progressOf(await oneAtATime(() => port.stop(args.jail))) } }),
    capjail: async (args) => {
      await oneAtATime(() => port.cap(args.jail));
      return { capjail: { success: `jail ${args.jail} capped.` } };
    },
    clonejail: async (args) => {
      const created = await oneAtATime(() => port.clone(args.jail, splitProps(args.props)));
      return { clonejail: { jail: args.jail, props: args.props ?? '', success: labelLines(created.lines) } };
    },
    createjail: async (args) => {
      const created = await oneAtATime(() => port.create(splitProps(args.props), args.switches));
      const success = args.switches === '-e' ? { uuid: created.uuid } : labelLines(created.lines);
      return { createjail: { props: args.props, switches: args.switches ?? '', success } };
    },
    destroyjail: async (args) => ({ destroyjail: { success: labelLines(await oneAtATime(() => port.destroy(args.jail))) } }),
    execjail: async (args) => {
      const output = await port.exec(args.jail, args.user, args.command);
      return { execjail: { success: labelLines(output.split('\n')) } };
    },
    cleanjails: async () => {
      await oneAtATime(() => port.clean('jails'));
      return { cleanjails: { success: 'All jails have been cleaned.' } };
    },
    cleanreleases: async () => {
      await oneAtATime(() => port.clean('releases'));
      return { cleanreleases: { success: 'All RELEASEs have been cleaned.' } };
    },
    cleantemplates: async () => {
      await oneAtATime(() => port.clean('templates'));
      return { cleantemplates: { success: 'All templates have been cleaned.' } };
    },
    cleanall: async () => {
      await oneAtATime(() => port.clean('all'));
      return { cleanall: { success: 'All iocage datasets have been cleaned.' } };
    },
    activatepool: async (args) => {
      if (args.pool === undefined) return { activatepool: { 'currently active': { pool: ` ${await port.activePool()}` } } };
      const pool = args.pool;
      await oneAtATime(() => port.activate(pool));
      return { activatepool: { success: `pool ${pool} activated.` } };
    },
    deactivatepool: async (args) => {
      await oneAtATime(() => port.deactivate(args.pool));
      return { deactivatepool: { success: `pool ${args.pool} deactivated.` } };
    },
  };
});
