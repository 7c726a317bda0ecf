import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as schema from './schema.ts';

export type AgentDb = BetterSQLite3Database<typeof schema>;

export interface OpenedStore {
  db: AgentDb;
  close(): void;
}

const MIGRATIONS = fileURLToPath(new URL('./migrations', import.meta.url));

/** Opens (and migrates) the agent's database in its data directory. */
export function openStore(dataDir: string): OpenedStore {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const sqlite = new Database(join(dataDir, 'agent.db'));
  // WAL keeps readers (list, audit) from blocking the writer; busy_timeout covers a second process (CLI) reading.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: MIGRATIONS });
  return { db, close: () => sqlite.close() };
}
