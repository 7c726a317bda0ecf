/** `hostadm services [list|start|stop|restart|enable|disable]`: a thin layer over the services class. */
import type { ConnectionOptions } from '../client-commands.ts';
import { runCommand } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';
import { openClient } from '../lib/session.ts';

export async function runServicesList(opts: ConnectionOptions & { json?: boolean }): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const { services } = await session.client.admin.services.list_services();
      const list = Object.values(services).sort((a, b) => a.name.localeCompare(b.name));
      if (opts.json) printJson(list);
      else {
        const yes = (v: string) => (v === 'true' ? 'yes' : 'no');
        await printTable(
          ['SERVICE', 'RUNNING', 'AT BOOT', 'DESCRIPTION'],
          list.map((s) => [s.name, yes(s.is_running), yes(s.is_enabled), s.description]),
        );
      }
    } finally {
      await session.close();
    }
  });
}

const DONE_WORDS = { start: 'started', stop: 'stopped', restart: 'restarted', enable: 'enabled at boot', disable: 'disabled at boot' } as const;

export async function runServicesAction(verb: keyof typeof DONE_WORDS, names: string[], opts: ConnectionOptions & { json?: boolean }): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const reply = await session.client.admin.services[verb]({ services: names });
      if (opts.json) printJson(reply);
      else process.stdout.write(`${DONE_WORDS[verb]}: ${Object.values(reply).flat().join(', ')}\n`);
    } finally {
      await session.close();
    }
  });
}
