/**
 * One boot-environment tool driven through the runner: bectl(8) (FreeBSD base since 12), beadm(1)
 * (sysutils/beadm) or zectl (Linux). Their command lines agree on everything the interface needs
 * except where `flavours` says: how to force an unmount and a destroy, and whether a mount point
 * may be given. A failure is the tool's own words: beadm prints its `ERROR: ...` on standard output
 * and sometimes exits 0, so a line with `ERROR` is a failure whatever the exit code (as the original
 * read it).
 */
import { HostadmError, unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner, RunResult } from '../../runner/runner.ts';
import { failureText } from '../../runner/runner.ts';
import type { BeadmPort } from '../ports/beadm.ts';
import { parseBeList, type BeColumns } from './be-list.ts';

export interface BeTool {
  /** The program (`bectl`, `beadm`, `zectl`). */
  command: string;
  columns: BeColumns;
  /** Flags that make destroy unmount first without asking (`-F`). */
  destroyFlags: string[];
  /** Flags that force an unmount of a busy environment (`-f`); null where the tool has none. */
  unmountFlags: string[] | null;
  /** The tool's unmount verb. */
  unmountVerb: 'umount' | 'unmount';
  /** Whether `mount` takes a mount point. */
  mountpointArg: boolean;
}

export const BECTL: BeTool = {
  command: 'bectl',
  columns: { space: true },
  destroyFlags: ['-F'],
  unmountFlags: ['-f'],
  unmountVerb: 'umount',
  mountpointArg: true,
};
export const BEADM: BeTool = {
  command: 'beadm',
  columns: { space: true },
  destroyFlags: ['-F'],
  unmountFlags: ['-f'],
  unmountVerb: 'umount',
  mountpointArg: true,
};
export const ZECTL: BeTool = {
  command: 'zectl',
  columns: { space: false },
  destroyFlags: ['-F'],
  unmountFlags: null,
  unmountVerb: 'unmount',
  mountpointArg: false,
};

const TIMEOUT = { timeoutMs: 120_000 };

function errorLine(result: RunResult): string | undefined {
  return `${result.stdout}\n${result.stderr}`.split('\n').find((l) => /^ERROR\b/.test(l.trim()));
}

/** Where `mount` says it mounted: bectl prints the path alone, beadm `Mounted successfully on '<path>'`, zectl the path. */
export function mountedAt(stdout: string): string | undefined {
  const quoted = /Mounted successfully on '([^']+)'/.exec(stdout);
  if (quoted) return quoted[1];
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.startsWith('/'));
}

export function beToolPort(runner: CommandRunner, tool: () => Promise<BeTool>): BeadmPort {
  const run = async (args: string[]): Promise<string> => {
    const t = await tool();
    const argv = [t.command, ...args];
    const result = await runner.run(argv, TIMEOUT);
    const error = errorLine(result);
    if (result.code !== 0 || error !== undefined) {
      throw new HostadmError('HOST_ERROR', error?.trim() ? `${argv.slice(0, 2).join(' ')}: ${error.trim()}` : failureText(argv.slice(0, 2).join(' '), result));
    }
    return result.stdout;
  };
  const list = async () => parseBeList(await run(['list', '-H']), (await tool()).columns);
  return {
    list,
    async rename(existing, newName) {
      await run(['rename', existing, newName]);
    },
    async activate(name) {
      await run(['activate', name]);
    },
    async create(newName, clonefrom) {
      await run(['create', ...(clonefrom !== undefined ? ['-e', clonefrom] : []), newName]);
    },
    async destroy(name) {
      const t = await tool();
      await run(['destroy', ...t.destroyFlags, name]);
    },
    async mount(name, mountpoint) {
      const t = await tool();
      if (mountpoint !== undefined && !t.mountpointArg)
        throw unsupported(`mountpoint: ${t.command} mounts at a directory of its own choosing; leave mountpoint out`);
      const stdout = await run(['mount', name, ...(mountpoint !== undefined ? [mountpoint] : [])]);
      const where = mountedAt(stdout) ?? mountpoint ?? (await list())[name]?.mount;
      if (!where || where === '-') throw new HostadmError('HOST_ERROR', `${t.command} mount ${name} did not say where it mounted it`);
      return where;
    },
    async unmount(name) {
      const t = await tool();
      await run([t.unmountVerb, ...(t.unmountFlags ?? []), name]);
    },
  };
}
