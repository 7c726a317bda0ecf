/**
 * @module SQLite for the Node programs (agent and bridge): Node's built-in `node:sqlite` (DatabaseSync)
 * under Drizzle's synchronous SQLite core, the same query builder the Workers bridge uses over D1.
 *
 * Why node:sqlite: it ships inside Node, so `npm ci` needs no compiler and no download (better-sqlite3
 * ran `node-gyp rebuild`, which fetches Node's headers, and a prebuilt-binary driver still needs a
 * binary for each platform and Node ABI). Drizzle 0.45 has no node:sqlite driver (1.0, which has one,
 * is a release candidate), so this file is that driver: a session on Drizzle's public `SQLiteSession`,
 * `SQLitePreparedQuery` and `SQLiteTransaction` classes, shaped like Drizzle's better-sqlite3 one. It
 * is synchronous, as better-sqlite3 was: the stores run a transaction's reads and writes with nothing
 * else interleaved, and `.get()`/`.all()`/`.run()` return values, not promises.
 */
import { DatabaseSync, StatementSync, type SQLInputValue } from 'node:sqlite';
import * as drizzleUtils from 'drizzle-orm/utils';
import {
  createTableRelationsHelpers,
  entityKind,
  extractTablesRelationalConfig,
  fillPlaceholders,
  type ExtractTablesWithRelations,
  type Query,
  type RelationalSchemaConfig,
  type TablesRelationalConfig,
} from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import {
  BaseSQLiteDatabase,
  SQLitePreparedQuery,
  SQLiteSession,
  SQLiteSyncDialect,
  SQLiteTransaction,
  type PreparedQueryConfig,
  type SelectedFieldsOrdered,
  type SQLiteExecuteMethod,
  type SQLiteTransactionConfig,
} from 'drizzle-orm/sqlite-core';
import { createPrivateFile } from './private-files.ts';

/**
 * What `.run()` returns, as better-sqlite3's RunResult had it. node:sqlite types `changes` as
 * `number | bigint` for databases opened with `readBigInts`; these are not, so it is a number.
 */
export interface SqliteRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A Drizzle database on node:sqlite: the synchronous SQLite API (`.get()`, `.all()`, `.run()`, `transaction`). */
export type SqliteDb<TSchema extends Record<string, unknown>> = BaseSQLiteDatabase<'sync', SqliteRunResult, TSchema>;

type MapResultRow = (fields: SelectedFieldsOrdered, row: unknown[], joinsNotNullableMap: Record<string, boolean> | undefined) => unknown;
/**
 * Drizzle's own decoder from a positional row to the selected shape (column decoders, nested
 * selections, nulls for unmatched joins): exported at runtime and used by every Drizzle driver, but
 * marked internal in its typings. Checked here once so a Drizzle upgrade that moves it fails at start.
 */
const mapResultRow = (drizzleUtils as unknown as { mapResultRow?: MapResultRow }).mapResultRow;
if (typeof mapResultRow !== 'function') throw new Error('drizzle-orm/utils no longer exports mapResultRow: shared/src/node/sqlite.ts needs updating');
const decodeRow: MapResultRow = mapResultRow;

type Params = SQLInputValue[];

/** node:sqlite returns rows with a null prototype; raw `db.all(sql...)` callers get ordinary objects, as before. */
const plainObject = (row: Record<string, unknown>) => ({ ...row });
type RowMapper = (rows: unknown[][]) => unknown;

class NodeSqlitePreparedQuery<T extends PreparedQueryConfig & { type: 'sync'; run: SqliteRunResult }> extends SQLitePreparedQuery<T> {
  static override readonly [entityKind]: string = 'NodeSqlitePreparedQuery';
  /** Set by Drizzle's select builder: which joined tables may come back as all-null (left joins). */
  joinsNotNullableMap?: Record<string, boolean>;
  private readonly stmt: StatementSync;
  private readonly fields: SelectedFieldsOrdered | undefined;
  private readonly customResultMapper: RowMapper | undefined;

  constructor(
    stmt: StatementSync,
    query: Query,
    fields: SelectedFieldsOrdered | undefined,
    executeMethod: SQLiteExecuteMethod,
    customResultMapper: RowMapper | undefined,
  ) {
    super('sync', executeMethod, query);
    this.stmt = stmt;
    this.fields = fields;
    this.customResultMapper = customResultMapper;
  }

  private params(placeholderValues: Record<string, unknown> | undefined): Params {
    return fillPlaceholders(this.query.params, placeholderValues ?? {}) as Params;
  }

  run(placeholderValues?: Record<string, unknown>): T['run'] {
    const { changes, lastInsertRowid } = this.stmt.run(...this.params(placeholderValues));
    return { changes: Number(changes), lastInsertRowid };
  }

  all(placeholderValues?: Record<string, unknown>): T['all'] {
    if (!this.fields && !this.customResultMapper) {
      this.stmt.setReturnArrays(false);
      return this.stmt.all(...this.params(placeholderValues)).map(plainObject);
    }
    const rows = this.values(placeholderValues);
    if (this.customResultMapper) return this.customResultMapper(rows);
    return rows.map((row) => decodeRow(this.fields!, row, this.joinsNotNullableMap));
  }

  get(placeholderValues?: Record<string, unknown>): T['get'] {
    const params = this.params(placeholderValues);
    if (!this.fields && !this.customResultMapper) {
      this.stmt.setReturnArrays(false);
      const row = this.stmt.get(...params);
      return row && plainObject(row);
    }
    this.stmt.setReturnArrays(true);
    const row = this.stmt.get(...params) as unknown[] | undefined;
    if (!row) return undefined;
    if (this.customResultMapper) return this.customResultMapper([row]);
    return decodeRow(this.fields!, row, this.joinsNotNullableMap);
  }

  values(placeholderValues?: Record<string, unknown>): T['values'] & unknown[][] {
    this.stmt.setReturnArrays(true);
    return this.stmt.all(...this.params(placeholderValues)) as unknown as T['values'] & unknown[][];
  }
}

/**
 * Runs `body` between BEGIN and COMMIT (ROLLBACK when it throws), or in a savepoint when a transaction
 * is already open. A promise would let other work interleave with the transaction, so one is refused.
 */
function inTransaction<T>(client: DatabaseSync, savepoint: string, behavior: SQLiteTransactionConfig['behavior'], body: () => T): T {
  const nested = client.isTransaction;
  client.exec(nested ? `SAVEPOINT ${savepoint}` : `BEGIN ${(behavior ?? 'deferred').toUpperCase()}`);
  try {
    const result = body();
    if (result instanceof Promise) throw new TypeError('a SQLite transaction must be synchronous: its function returned a promise');
    client.exec(nested ? `RELEASE SAVEPOINT ${savepoint}` : 'COMMIT');
    return result;
  } catch (error) {
    // SQLite may have rolled back already (some errors end the transaction themselves).
    if (client.isTransaction) client.exec(nested ? `ROLLBACK TO SAVEPOINT ${savepoint}; RELEASE SAVEPOINT ${savepoint}` : 'ROLLBACK');
    throw error;
  }
}

class NodeSqliteSession<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends SQLiteSession<
  'sync',
  SqliteRunResult,
  TFullSchema,
  TSchema
> {
  static override readonly [entityKind]: string = 'NodeSqliteSession';
  readonly client: DatabaseSync;
  private readonly syncDialect: SQLiteSyncDialect;
  private readonly relational: RelationalSchemaConfig<TSchema> | undefined;

  constructor(client: DatabaseSync, dialect: SQLiteSyncDialect, relational: RelationalSchemaConfig<TSchema> | undefined) {
    super(dialect);
    this.client = client;
    this.syncDialect = dialect;
    this.relational = relational;
  }

  prepareQuery(
    query: Query,
    fields: SelectedFieldsOrdered | undefined,
    executeMethod: SQLiteExecuteMethod,
    _isResponseInArrayMode: boolean,
    customResultMapper?: RowMapper,
  ) {
    return new NodeSqlitePreparedQuery(this.client.prepare(query.sql), query, fields, executeMethod, customResultMapper);
  }

  transaction<T>(transaction: (tx: NodeSqliteTransaction<TFullSchema, TSchema>) => T, config: SQLiteTransactionConfig = {}): T {
    const tx = new NodeSqliteTransaction<TFullSchema, TSchema>('sync', this.syncDialect, this, this.relational);
    return inTransaction(this.client, 'sp0', config.behavior, () => transaction(tx));
  }
}

class NodeSqliteTransaction<TFullSchema extends Record<string, unknown>, TSchema extends TablesRelationalConfig> extends SQLiteTransaction<
  'sync',
  SqliteRunResult,
  TFullSchema,
  TSchema
> {
  static override readonly [entityKind]: string = 'NodeSqliteTransaction';
  private readonly nodeSession: NodeSqliteSession<TFullSchema, TSchema>;
  private readonly syncDialect: SQLiteSyncDialect;

  constructor(
    resultType: 'sync',
    dialect: SQLiteSyncDialect,
    session: NodeSqliteSession<TFullSchema, TSchema>,
    relational: RelationalSchemaConfig<TSchema> | undefined,
    nestedIndex = 0,
  ) {
    super(resultType, dialect, session, relational, nestedIndex);
    this.nodeSession = session;
    this.syncDialect = dialect;
  }

  override transaction<T>(transaction: (tx: NodeSqliteTransaction<TFullSchema, TSchema>) => T): T {
    const tx = new NodeSqliteTransaction<TFullSchema, TSchema>('sync', this.syncDialect, this.nodeSession, this.schema, this.nestedIndex + 1);
    return inTransaction(this.nodeSession.client, `sp${this.nestedIndex + 1}`, undefined, () => transaction(tx));
  }
}

export interface OpenedSqlite<TSchema extends Record<string, unknown>> {
  db: SqliteDb<TSchema>;
  close(): void;
}

export interface SqliteOptions<TSchema extends Record<string, unknown>> {
  schema: TSchema;
  /** drizzle-kit's output folder; pending migrations are applied at open, in one transaction. */
  migrationsFolder: string;
}

/**
 * Opens `file` (created 0600 first, so SQLite and its -wal/-shm files never exist wider), in WAL mode
 * (readers do not block the writer, and the CLI can read while a program runs) with a 5 s busy
 * timeout (covers a second process writing), synchronous=NORMAL and foreign keys enforced, then
 * migrates it.
 */
export function openSqlite<TSchema extends Record<string, unknown>>(file: string, options: SqliteOptions<TSchema>): OpenedSqlite<TSchema> {
  // Node 22.13 unflagged node:sqlite; arrays of values (Drizzle decodes rows by position) came in 22.16.
  if (typeof StatementSync.prototype.setReturnArrays !== 'function') {
    throw new Error(`node:sqlite in Node ${process.version} lacks StatementSync.setReturnArrays: Node 22.16 or later is needed`);
  }
  createPrivateFile(file);
  const client = new DatabaseSync(file, { enableForeignKeyConstraints: true });
  try {
    client.exec('PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL;');
    // What better-sqlite3 compiled in, kept so durability and memory do not change with the driver:
    // in WAL mode, NORMAL syncs at checkpoints, not at every commit (a commit survives the program
    // crashing; a power cut may lose the last ones, never corrupt the file). SQLite's default FULL
    // costs an fsync per write: 10x slower inserts (test/bench/store.bench.ts). A 16 MB page cache.
    client.exec('PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16000;');
    const dialect = new SQLiteSyncDialect();
    const tables = extractTablesRelationalConfig<ExtractTablesWithRelations<TSchema>>(options.schema, createTableRelationsHelpers);
    const relational = { fullSchema: options.schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
    const session = new NodeSqliteSession<TSchema, ExtractTablesWithRelations<TSchema>>(client, dialect, relational);
    const db: SqliteDb<TSchema> = new BaseSQLiteDatabase('sync', dialect, session, relational);
    // Migrations need no relational schema; a session without one matches what `migrate` accepts.
    const migrations = new NodeSqliteSession<Record<string, unknown>, TablesRelationalConfig>(client, dialect, undefined);
    dialect.migrate(readMigrationFiles({ migrationsFolder: options.migrationsFolder }), migrations, { migrationsFolder: options.migrationsFolder });
    return { db, close: () => client.close() };
  } catch (error) {
    client.close();
    throw error;
  }
}
