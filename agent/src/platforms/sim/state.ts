/**
 * The simulated FreeBSD host's state, persisted as one JSON document in the data directory so a
 * restarted sim agent shows the same host. Writes are atomic (temp file + rename).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

export interface SimAccount {
  name: string;
  uid: number;
  gid: number;
  class: string;
  change: string;
  expire: string;
  comment: string;
  home_dir: string;
  shell: string;
  /** `scrypt$<salt b64>$<hash b64>`, or `*` for a locked account. */
  password: string;
}

export interface SimGroup {
  name: string;
  gid: number;
  members: string[];
}

export interface SimHostState {
  version: 1;
  hostname: string;
  accounts: Record<string, SimAccount>;
  groups: Record<string, SimGroup>;
}

export const DEFAULT_SIM_PASSWORD = 'hostadm';

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export function checkPassword(stored: string, password: string): boolean {
  const [scheme, saltB64, hashB64] = stored.split('$');
  if (scheme !== 'scrypt' || !saltB64 || !hashB64) return false;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = scryptSync(password, Buffer.from(saltB64, 'base64'), expected.length);
  return timingSafeEqual(expected, actual);
}

function account(name: string, uid: number, gid: number, comment: string, home: string, shell: string, pw: string): SimAccount {
  return { name, uid, gid, class: '', change: '0', expire: '0', comment, home_dir: home, shell, password: hashPassword(pw) };
}

/** A fresh FreeBSD-like host: root and admin in wheel (full access), operator in operator (limited). */
export function seedState(password: string): SimHostState {
  return {
    version: 1,
    hostname: 'simhost',
    accounts: {
      root: account('root', 0, 0, 'Charlie &', '/root', '/bin/csh', password),
      toor: { ...account('toor', 0, 0, 'Bourne-again Superuser', '/root', '/nonexistent', password), password: '*' },
      daemon: { ...account('daemon', 1, 1, 'Owner of many system processes', '/root', '/usr/sbin/nologin', password), password: '*' },
      operator: account('operator', 2, 5, 'System &', '/home/operator', '/bin/sh', password),
      admin: account('admin', 1001, 1001, 'Administrator', '/home/admin', '/bin/sh', password),
      nobody: { ...account('nobody', 65534, 65534, 'Unprivileged user', '/nonexistent', '/usr/sbin/nologin', password), password: '*' },
    },
    groups: {
      wheel: { name: 'wheel', gid: 0, members: ['root', 'admin'] },
      daemon: { name: 'daemon', gid: 1, members: [] },
      operator: { name: 'operator', gid: 5, members: ['root', 'operator'] },
      admin: { name: 'admin', gid: 1001, members: [] },
      nogroup: { name: 'nogroup', gid: 65533, members: [] },
      nobody: { name: 'nobody', gid: 65534, members: [] },
    },
  };
}

export class SimStateFile {
  readonly path: string;
  state: SimHostState;

  constructor(path: string, options: { password?: string }) {
    this.path = path;
    const existing = readState(path);
    if (!existing) {
      this.state = seedState(options.password ?? DEFAULT_SIM_PASSWORD);
      this.save();
    } else {
      this.state = existing;
      if (options.password !== undefined) this.resetBuiltinPasswords(options.password);
    }
  }

  /** Applies a change and persists it; the change must not be partial if it throws. */
  update(change: (state: SimHostState) => void): void {
    const draft = structuredClone(this.state);
    change(draft);
    this.state = draft;
    this.save();
  }

  private resetBuiltinPasswords(password: string): void {
    this.update((s) => {
      for (const name of ['root', 'admin', 'operator']) {
        const acct = s.accounts[name];
        if (acct) acct.password = hashPassword(password);
      }
    });
  }

  private save(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state, null, 2), { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}

function readState(path: string): SimHostState | null {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = JSON.parse(raw) as SimHostState;
  if (parsed.version !== 1) throw new Error(`${path}: unsupported sim state version ${String(parsed.version)}`);
  return parsed;
}
