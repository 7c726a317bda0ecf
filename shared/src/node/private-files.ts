/**
 * Data directories 0700 and the files in them 0600, for the agent, the bridge and the CLI alike: they
 * hold keys, secrets, tokens and databases. Modes are set at creation and tightened on every start when
 * something (a restore, a copy, a umask) left them wider. Node only (the Workers bridge has no files).
 */
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const OTHERS = 0o077;

/** Creates `dir` (0700) when missing, or tightens it; returns the paths whose mode it changed. */
export function ensurePrivateDir(dir: string): string[] {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  return tighten(dir, DIR_MODE) ? [dir] : [];
}

/**
 * Creates an empty file 0600 if it does not exist, so a library that creates it with the process
 * umask (SQLite does, and copies the database's mode to its -wal and -shm files) finds it private.
 */
export function createPrivateFile(path: string): void {
  closeSync(openSync(path, 'a', FILE_MODE));
  tighten(path, FILE_MODE);
}

/**
 * Tightens `dir` and everything under it (directories 0700, files 0600), `maxDepth` levels down;
 * symbolic links are left alone (never followed). Returns the paths whose mode it changed.
 */
export function tightenPrivateTree(dir: string, maxDepth = 4): string[] {
  const changed = ensurePrivateDir(dir);
  const walk = (path: string, depth: number) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) {
        if (tighten(child, DIR_MODE)) changed.push(child);
        if (depth < maxDepth) walk(child, depth + 1);
      } else if (entry.isFile() && tighten(child, FILE_MODE)) {
        changed.push(child);
      }
    }
  };
  walk(dir, 1);
  return changed;
}

function tighten(path: string, mode: number): boolean {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink() || (stat.mode & OTHERS) === 0) return false;
  chmodSync(path, mode);
  return true;
}
