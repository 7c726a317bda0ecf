/**
 * `hostadm session status|stop`: the persisted sessions (HOSTADM_PERSIST) of this user, as their
 * sockets in the runtime directory answer (lib/control-session.ts).
 */
import { askSession, runtimeDir, SessionStatus, sessionSockets } from '../lib/control-session.ts';
import { EXIT, runCommand } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';

async function liveSessions(): Promise<{ socket: string; status: SessionStatus }[]> {
  const found = await Promise.all(
    sessionSockets().map(async (socket) => {
      const status = SessionStatus.safeParse(await askSession(socket, { op: 'status' }));
      return status.success ? { socket, status: status.data } : undefined;
    }),
  );
  return found.filter((s) => s !== undefined);
}

export async function runSessionStatus(opts: { json?: boolean }): Promise<void> {
  await runCommand(async () => {
    const sessions = await liveSessions();
    if (opts.json) {
      printJson(sessions.map((s) => ({ ...s.status, socket: s.socket })));
      return EXIT.ok;
    }
    if (sessions.length === 0) {
      process.stdout.write(`no persisted sessions (in ${runtimeDir()}; HOSTADM_PERSIST=10m turns them on)\n`);
      return EXIT.ok;
    }
    await printTable(
      ['PID', 'PROFILE', 'TARGET', 'CALLS', 'IDLE', 'EXITS IN'],
      sessions.map(({ status }) => [
        String(status.pid),
        status.profile ?? '-',
        status.target,
        String(status.calls),
        `${status.idleSeconds}s`,
        `${status.exitsInSeconds}s`,
      ]),
    );
    return EXIT.ok;
  });
}

export async function runSessionStop(): Promise<void> {
  await runCommand(async () => {
    const sessions = await liveSessions();
    await Promise.all(sessions.map((s) => askSession(s.socket, { op: 'stop' })));
    process.stdout.write(
      sessions.length === 0 ? 'no persisted sessions\n' : `stopped ${sessions.length} persisted session${sessions.length === 1 ? '' : 's'}\n`,
    );
    return EXIT.ok;
  });
}
