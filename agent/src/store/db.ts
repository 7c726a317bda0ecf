import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { createPrivateFile, tightenPrivateTree } from '@hostadm/shared/node/private-files.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as schema from './schema.ts';

export type AgentDb = BetterSQLite3Database<typeof schema>;

export interface OpenedStore {
  db: AgentDb;
  /** Paths under the data directory whose modes were wider than 0700/0600 and were tightened. */
  tightened: string[];
  close(): void;
}

const MIGRATIONS = fileURLToPath(new URL('./migrations', import.meta.url));

/** Opens (and migrates) the agent's database in its data directory. */
export function openStore(dataDir: string): OpenedStore {
  // Keys, tokens and the audit log live here: nobody but the agent's user reads them.
  const tightened = tightenPrivateTree(dataDir);
  const file = join(dataDir, 'agent.db');
  createPrivateFile(file);
  const sqlite = new Database(file);
  // WAL keeps readers (list, audit) from blocking the writer; busy_timeout covers a second process (CLI) reading.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: MIGRATIONS });
  return { db, tightened, close: () => sqlite.close() };
}
