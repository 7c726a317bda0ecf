/** `hostadm users`: `users usershow` (or `groupshow` with --groups) as a table, or `--json` (an array). */
import type { ConnectionOptions } from '../client-commands.ts';
import { runCommand } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';
import { openClient } from '../lib/session.ts';

export interface UsersOptions extends ConnectionOptions {
  json?: boolean;
  groups?: boolean;
}

export async function runUsers(opts: UsersOptions): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const users = session.client.admin.users;
      if (opts.groups) {
        const groups = Object.values(await users.groupshow()).sort((a, b) => Number(a.gid) - Number(b.gid));
        if (opts.json) printJson(groups);
        else
          await printTable(
            ['GROUP', 'GID', 'MEMBERS'],
            groups.map((g) => [g.name, g.gid, g.users.filter(Boolean).join(',')]),
          );
        return;
      }
      const list = Object.values(await users.usershow()).sort((a, b) => Number(a.uid) - Number(b.uid));
      if (opts.json) printJson(list);
      else
        await printTable(
          ['USER', 'UID', 'GID', 'HOME', 'SHELL', 'COMMENT'],
          list.map((u) => [u.name, u.uid, u.gid, u.home_dir, u.shell, u.comment]),
        );
    } finally {
      await session.close();
    }
  });
}
