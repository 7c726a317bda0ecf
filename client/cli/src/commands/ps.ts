/** `hostadm ps`: `systemmanager procinfo` as a table, or `--json` (an array of processes with `pid`). */
import type { ConnectionOptions } from '../client-commands.ts';
import { runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable, terminalWidth } from '../lib/output.ts';
import { openClient } from '../lib/session.ts';

export interface PsOptions extends ConnectionOptions {
  json?: boolean;
  sort: string;
  filterUser?: string;
}

/** `1.5G` / `812M` / `1056K` → bytes, for sorting. */
function sizeValue(text: string): number {
  const m = /^([\d.]+)([KMGT]?)$/i.exec(text.trim());
  if (!m) return 0;
  return Number(m[1]) * 1024 ** ' KMGT'.indexOf((m[2] || ' ').toUpperCase());
}

const timeValue = (text: string) => text.split(':').reduce((acc, part) => acc * 60 + Number(part || 0), 0);

export async function runPs(opts: PsOptions): Promise<void> {
  await runCommand(async () => {
    const sorts = ['pid', 'cpu', 'res', 'time', 'user'];
    if (!sorts.includes(opts.sort)) throw usageError(`--sort: expected ${sorts.join(', ')}, not ${opts.sort}`);
    const session = await openClient(opts);
    try {
      const { procinfo } = await session.client.admin.systemmanager.procinfo();
      let rows = Object.entries(procinfo).map(([pid, p]) => ({ pid, ...p }));
      if (opts.filterUser) rows = rows.filter((p) => p.username === opts.filterUser);
      const by: Record<string, (a: (typeof rows)[number], b: (typeof rows)[number]) => number> = {
        pid: (a, b) => Number(a.pid) - Number(b.pid),
        cpu: (a, b) => parseFloat(b.wcpu) - parseFloat(a.wcpu) || Number(a.pid) - Number(b.pid),
        res: (a, b) => sizeValue(b.res) - sizeValue(a.res) || Number(a.pid) - Number(b.pid),
        time: (a, b) => timeValue(b.time) - timeValue(a.time) || Number(a.pid) - Number(b.pid),
        user: (a, b) => a.username.localeCompare(b.username) || Number(a.pid) - Number(b.pid),
      };
      rows.sort(by[opts.sort]);
      if (opts.json) {
        printJson(rows);
        return;
      }
      const width = terminalWidth();
      await printTable(
        ['PID', 'USER', 'STATE', 'CPU%', 'THR', 'RES', 'SIZE', 'TIME', 'COMMAND'],
        rows.map((p) => [p.pid, p.username, p.state, p.wcpu, p.thr, p.res, p.size, p.time, p.command]),
        width ? { maxWidths: { 8: Math.max(20, width - 70) } } : {},
      );
    } finally {
      await session.close();
    }
  });
}
