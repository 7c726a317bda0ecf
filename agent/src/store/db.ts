import { openSqlite, type SqliteDb } from '@hostadm/shared/node/sqlite.ts';
import { tightenPrivateTree } from '@hostadm/shared/node/private-files.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as schema from './schema.ts';

export type AgentDb = SqliteDb<typeof schema>;

export interface OpenedStore {
  db: AgentDb;
  /** Paths under the data directory whose modes were wider than 0700/0600 and were tightened. */
  tightened: string[];
  close(): void;
}

const MIGRATIONS = fileURLToPath(new URL('./migrations', import.meta.url));

/**
 * Opens (and migrates) the agent's database in its data directory: created 0600, WAL so readers (list,
 * audit) do not block the writer, a busy timeout for a second process (the CLI) reading.
 */
export function openStore(dataDir: string): OpenedStore {
  // Keys, tokens and the audit log live here: nobody but the agent's user reads them.
  const tightened = tightenPrivateTree(dataDir);
  const { db, close } = openSqlite(join(dataDir, 'agent.db'), { schema, migrationsFolder: MIGRATIONS });
  return { db, tightened, close };
}
