/**
 * What the Linux VM host keeps in `<data>/vm/`: `state.json` (the setup and each guest's directory,
 * properties and disk files), `isos/` (the ISO store), `pools/<pool>/<guest>/` (the disks) and `run/`
 * (QMP sockets and pid files, short names so a socket path stays under the kernel's 108 bytes).
 * Writes go to a temporary file renamed over the old one, so a crash never leaves half a state.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LinuxGuest {
  /** Directory holding the disk files. */
  dir: string;
  props: Record<string, string>;
  /** Disk name (`disk0`) to file name inside `dir`. */
  disks: Record<string, string>;
  /** The ISO `install` booted it from, until it stops. */
  installIso?: string;
}

export interface LinuxVmState {
  version: 1;
  setup: { nic: string; pool: string } | null;
  guests: Record<string, LinuxGuest>;
}

export class VmStore {
  readonly root: string;
  readonly isoDir: string;
  readonly runDir: string;
  private readonly file: string;

  constructor(dataDir: string) {
    this.root = join(dataDir, 'vm');
    this.isoDir = join(this.root, 'isos');
    this.runDir = join(this.root, 'run');
    this.file = join(this.root, 'state.json');
  }

  read(): LinuxVmState {
    try {
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as LinuxVmState;
      if (parsed.version === 1) return parsed;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return { version: 1, setup: null, guests: {} };
  }

  /** Applies `change` to a copy and writes it; if `change` throws, nothing is written. */
  update<R>(change: (draft: LinuxVmState) => R): R {
    const draft = this.read();
    const result = change(draft);
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(draft, null, 2), { mode: 0o600 });
    renameSync(tmp, this.file);
    return result;
  }

  poolDir(pool: string): string {
    return join(this.root, 'pools', pool);
  }

  /** QMP socket and pid file of a guest: named by a hash, so any guest name fits a socket path. */
  runPaths(name: string): { qmp: string; pid: string } {
    const id = createHash('sha256').update(name).digest('hex').slice(0, 16);
    return { qmp: join(this.runDir, `${id}.qmp`), pid: join(this.runDir, `${id}.pid`) };
  }

  ensureDirs(): void {
    for (const dir of [this.root, this.isoDir, this.runDir]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
}
