/** Process checks and signals as both Linux and FreeBSD run them (`ps -p`, `kill -s`). */
import { badRequest, HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner, type RunOptions } from '../../runner/runner.ts';

export function posixProcessControl(runner: CommandRunner, options: RunOptions) {
  return {
    async processExists(pid: number): Promise<boolean> {
      const result = await runner.run(['ps', '-p', String(pid), '-o', 'pid='], options);
      return result.code === 0 && result.stdout.trim() === String(pid);
    },
    async signalProcess(pid: number, signal: string): Promise<void> {
      const result = await runner.run(['kill', '-s', signal, '--', String(pid)], options);
      if (result.code === 0) return;
      if (/no such process/i.test(result.stderr)) throw badRequest(`pid: no process ${pid}`, [{ field: 'pid', message: 'no such process' }]);
      throw new HostadmError('HOST_ERROR', `kill failed: ${failureText('kill', result)}`);
    },
  };
}
