/**
 * `services`: background daemons. Every name of a request is checked against the host's services
 * before anything runs (an unknown one is a 400 naming it), then the services are handled in the
 * order given.
 *
 * When one fails at run time:
 * - start / stop / restart go on with the others, then answer 500 naming the services that were
 *   handled and the ones that failed with their reasons (a start cannot be taken back);
 * - enable / disable put back the boot settings they had already changed and answer 500 saying so:
 *   a boot setting is either changed for the whole request or not at all.
 * Either 500 also carries the success reply's array (`services_started`, ...: what is done) and
 * `services_failed` (name → reason), so a client does not lose what did happen.
 * A service already in the asked state counts as handled and is listed in the reply.
 */
import { services } from '@hostadm/shared/api/services.ts';
import { badRequest, HostadmError, type FieldError } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { RuntimeAction, ServiceRef, ServicesPort, ServiceStatus, Undo } from '../platforms/ports/services.ts';

export const servicesImpl = implementClass(services, ({ platform }) => {
  const port = platform.ports.services;
  if (!port) return null;
  return {
    list_services: async () => ({ services: records(await port.list()) }),
    start: async (args) => ({ services_started: await runEach(port, args.services, 'start', 'services_started') }),
    stop: async (args) => ({ services_stopped: await runEach(port, args.services, 'stop', 'services_stopped') }),
    restart: async (args) => ({ services_restarted: await runEach(port, args.services, 'restart', 'services_restarted') }),
    enable: async (args) => ({ services_enabled: await setEach(port, args.services, true) }),
    disable: async (args) => ({ services_disabled: await setEach(port, args.services, false) }),
  };
});

type ServiceRecord = { description: string; is_enabled: 'true' | 'false'; is_running: 'true' | 'false'; name: string; path: string; tag: string };

/** The wire's records, keyed and ordered by name. */
function records(list: readonly ServiceStatus[]): Record<string, ServiceRecord> {
  const out: Record<string, ServiceRecord> = {};
  for (const s of [...list].sort((a, b) => a.name.localeCompare(b.name))) {
    out[s.name] = {
      description: s.description,
      is_enabled: s.enabled ? 'true' : 'false',
      is_running: s.running ? 'true' : 'false',
      name: s.name,
      path: s.path,
      tag: s.tag,
    };
  }
  return out;
}

/** The services a request names, each once, in its order; any unknown name refuses the whole request. */
async function resolve(port: ServicesPort, names: readonly string[]): Promise<ServiceRef[]> {
  const known = new Map((await port.inventory()).map((s) => [s.name, s]));
  const errors: FieldError[] = [];
  names.forEach((name, i) => {
    if (!known.has(name)) errors.push({ field: `services.${i}`, message: `no service named ${name} on this host` });
  });
  if (errors.length > 0) {
    const unknown = names.filter((n) => !known.has(n));
    throw badRequest(`services: unknown service${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; nothing was changed`, errors);
  }
  return [...new Set(names)].map((n) => known.get(n) as ServiceRef);
}

const DONE: Record<RuntimeAction, string> = { start: 'started', stop: 'stopped', restart: 'restarted' };

async function runEach(port: ServicesPort, names: readonly string[], action: RuntimeAction, replyKey: string): Promise<string[]> {
  const targets = await resolve(port, names);
  const done: string[] = [];
  const failed: Record<string, string> = {};
  for (const service of targets) {
    try {
      await port.run(service, action);
      done.push(service.name);
    } catch (err) {
      failed[service.name] = reason(err);
    }
  }
  const failures = Object.entries(failed);
  if (failures.length > 0) {
    const handled = done.length > 0 ? `${done.join(', ')} ${DONE[action]}` : `nothing ${DONE[action]}`;
    const listed = failures.map(([name, why]) => `${name} (${why})`).join('; ');
    throw new HostadmError('HOST_ERROR', `services ${action}: ${handled}; failed: ${listed}`, {
      partial: { [replyKey]: done, services_failed: failed },
    });
  }
  return done;
}

async function setEach(port: ServicesPort, names: readonly string[], enabled: boolean): Promise<string[]> {
  const targets = await resolve(port, names);
  const verb = enabled ? 'enable' : 'disable';
  // Refused before the first change, like an unknown name: these cannot be changed at all.
  const fixed: FieldError[] = [];
  targets.forEach((s) => {
    if (s.enabled !== enabled && s.bootFixed) fixed.push({ field: `services.${names.indexOf(s.name)}`, message: s.bootFixed });
  });
  if (fixed.length > 0) throw badRequest(`services: cannot ${verb} ${fixed.map((f) => f.message).join('; ')}; nothing was changed`, fixed);

  const undos: Array<{ name: string; undo: Undo }> = [];
  for (const service of targets) {
    if (service.enabled === enabled) continue;
    try {
      undos.push({ name: service.name, undo: await port.setEnabled(service, enabled) });
    } catch (err) {
      const rolledBack = await rollBack(undos);
      // Done after all: those already in the asked state, and those whose change could not be put back.
      const done = targets.filter((s) => s.enabled === enabled || rolledBack.stuck.includes(s.name)).map((s) => s.name);
      throw new HostadmError('HOST_ERROR', `services ${verb}: failed for ${service.name} (${reason(err)}); ${rolledBack.summary}`, {
        partial: { [enabled ? 'services_enabled' : 'services_disabled']: done, services_failed: { [service.name]: reason(err) } },
      });
    }
  }
  return targets.map((s) => s.name);
}

/** Undoes the changes already made, newest first, and says how that went and which could not be put back. */
async function rollBack(undos: ReadonlyArray<{ name: string; undo: Undo }>): Promise<{ summary: string; stuck: string[] }> {
  if (undos.length === 0) return { summary: 'nothing was changed', stuck: [] };
  const restored: string[] = [];
  const stuck: Array<{ name: string; why: string }> = [];
  for (const { name, undo } of [...undos].reverse()) {
    try {
      await undo();
      restored.push(name);
    } catch (err) {
      stuck.push({ name, why: reason(err) });
    }
  }
  const names = stuck.map((s) => s.name);
  if (stuck.length === 0) return { summary: `the boot setting of ${restored.join(', ')} was put back, so nothing was changed`, stuck: names };
  const failedBack = stuck.map((s) => `${s.name} (${s.why})`).join('; ');
  return { summary: `putting back the boot setting failed for ${failedBack}${restored.length > 0 ? `; ${restored.join(', ')} put back` : ''}`, stuck: names };
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
