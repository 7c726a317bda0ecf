/**
 * The simulated host's persistent state: one JSON document in the data directory, split into
 * named slices (accounts, services, processes, ...) that each sim class owns. A restarted sim
 * agent shows the same host. Every change is atomic: a change that throws leaves nothing behind,
 * and the file is replaced by rename.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

interface SimDocument {
  version: 2;
  slices: Record<string, unknown>;
}

export interface SimSlice<T> {
  /** The current state; treat as read-only (change it through `update`). */
  get(): T;
  /** Applies a change to a copy and persists it; if `change` throws, nothing changes. */
  update<R>(change: (draft: T) => R): R;
}

export class SimStore {
  readonly path: string;
  private doc: SimDocument;

  constructor(path: string) {
    this.path = path;
    this.doc = readDocument(path) ?? { version: 2, slices: {} };
  }

  /** The slice `name`, created from `seed()` the first time this host sees it. */
  slice<T>(name: string, seed: () => T): SimSlice<T> {
    if (!Object.hasOwn(this.doc.slices, name)) {
      this.doc.slices[name] = seed();
      this.save();
    }
    return {
      get: () => this.doc.slices[name] as T,
      update: <R>(change: (draft: T) => R): R => {
        const draft = structuredClone(this.doc.slices[name]) as T;
        const result = change(draft);
        this.doc.slices[name] = draft;
        this.save();
        return result;
      },
    };
  }

  private save(): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.doc, null, 2), { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}

function readDocument(path: string): SimDocument | null {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = JSON.parse(raw) as SimDocument;
  if (parsed.version !== 2) throw new Error(`${path}: unsupported sim state version ${String(parsed.version)}; remove it to start afresh`);
  return parsed;
}
