/** `hostadm events [names...]`: events as they arrive, one line each (`--json`: NDJSON). */
import type { ConnectionOptions } from '../client-commands.ts';
import type { HostadmEvent } from '../../../sdk/src/types.ts';
import { isObject } from '../../../sdk/src/contracts.ts';
import { EXIT, runCommand } from '../lib/exit.ts';
import { openClient } from '../lib/session.ts';

export interface EventsOptions extends ConnectionOptions {
  json?: boolean;
  count?: number;
}

/**
 * One line for people: time, event, job, state, then the first line of new output. The time is the
 * host's (when it published the event: the replayed one is older), in UTC.
 */
export function describeEvent(event: HostadmEvent): string {
  const published = event.time !== undefined ? new Date(event.time) : new Date();
  const at = Number.isNaN(published.getTime()) ? new Date() : published;
  const time = at.toISOString().slice(11, 19);
  const p = isObject(event.args) ? event.args : {};
  if (event.name !== 'dispatcher') return `${time} ${event.name} ${JSON.stringify(event.args)}`;
  const details = isObject(p.process_details) ? p.process_details : {};
  const id = String(p.proc_id ?? details.process_id ?? p.queueid ?? '?');
  const state = String(p.state ?? '');
  const parts = [time, 'dispatcher', id, state];
  if (typeof p.percent_done === 'string') parts.push(p.percent_done);
  if (state === 'finished') parts.push(p.success === 'true' ? 'ok' : `failed${p.reason ? `: ${String(p.reason)}` : ''}`);
  else {
    const log = typeof p.log === 'string' ? p.log : '';
    const first = log.split('\n').find((l) => l.trim() !== '');
    if (first) parts.push(`| ${first}${log.trim().includes('\n') ? ' …' : ''}`);
  }
  if (typeof p.event_system === 'string') parts.push(`(${p.event_system})`);
  return parts.filter(Boolean).join(' ');
}

export async function runEvents(names: string[], opts: EventsOptions): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts, { reconnect: true });
    try {
      const stream = session.client.events.subscribe(names.length > 0 ? names : ['dispatcher']);
      await stream.ready;
      process.stderr.write(`listening for ${names.length > 0 ? names.join(', ') : 'dispatcher'} events on ${session.target.url} (Ctrl-C to stop)\n`);
      let seen = 0;
      const stop = new Promise<void>((resolve) => process.once('SIGINT', resolve));
      const loop = (async () => {
        for await (const event of stream) {
          process.stdout.write(`${opts.json ? JSON.stringify(event) : describeEvent(event)}\n`);
          if (opts.count !== undefined && ++seen >= opts.count) break;
        }
      })();
      await Promise.race([loop, stop]);
      await stream.close();
      return EXIT.ok;
    } finally {
      await session.close();
    }
  });
}
