/**
 * The node:sqlite driver under Drizzle (sqlite.ts): what the agent's and the bridge's stores rely on:
 * a private WAL database, migrations applied once, rows decoded to the schema's types, and
 * synchronous transactions that roll back on a throw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq, sql, TransactionRollbackError } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { openSqlite } from './sqlite.ts';

const owners = sqliteTable('owners', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
});
const items = sqliteTable('items', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  ownerId: integer('owner_id').references(() => owners.id),
  label: text('label').notNull(),
  done: integer('done', { mode: 'boolean' }).notNull(),
  at: integer('at', { mode: 'timestamp_ms' }).notNull(),
});
const schema = { owners, items };

/** A drizzle-kit style folder (journal + one .sql file per migration) holding `migrations`. */
function writeMigrations(folder: string, migrations: string[][]): void {
  mkdirSync(join(folder, 'meta'), { recursive: true });
  const entries = migrations.map((_, idx) => ({ idx, version: '6', when: 1_700_000_000_000 + idx, tag: `000${idx}_m`, breakpoints: true }));
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'sqlite', entries }));
  migrations.forEach((statements, idx) => writeFileSync(join(folder, `000${idx}_m.sql`), statements.join('\n--> statement-breakpoint\n')));
}

const CREATE = [
  'CREATE TABLE `owners` (`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL, `name` text NOT NULL);',
  'CREATE TABLE `items` (`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL, `owner_id` integer REFERENCES `owners`(`id`), `label` text NOT NULL, `done` integer NOT NULL, `at` integer NOT NULL);',
];

function fixture(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-sqlite-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const migrationsFolder = join(dir, 'migrations');
  writeMigrations(migrationsFolder, [CREATE]);
  const file = join(dir, 'test.db');
  return { dir, file, migrationsFolder, open: () => openSqlite(file, { schema, migrationsFolder }) };
}

test('a new database is 0600 under umask 022, in WAL mode, synchronous NORMAL, with a busy timeout and foreign keys on', (t) => {
  const f = fixture(t);
  const old = process.umask(0o022);
  let store: ReturnType<typeof f.open>;
  try {
    store = f.open();
  } finally {
    process.umask(old);
  }
  t.after(() => store.close());
  assert.equal(statSync(f.file).mode & 0o777, 0o600);
  assert.equal(statSync(`${f.file}-wal`).mode & 0o777, 0o600);
  assert.deepEqual(store.db.get(sql`PRAGMA journal_mode`), { journal_mode: 'wal' });
  assert.deepEqual(store.db.get(sql`PRAGMA busy_timeout`), { timeout: 5000 });
  assert.deepEqual(store.db.get(sql`PRAGMA synchronous`), { synchronous: 1 }, 'NORMAL, as better-sqlite3 had it in WAL mode');
  assert.throws(() => store.db.insert(items).values({ ownerId: 42, label: 'orphan', done: false, at: new Date() }).run(), /FOREIGN KEY constraint failed/);
});

test('migrations run once: reopening keeps the rows, and a new migration is applied at the next open', (t) => {
  const f = fixture(t);
  const first = f.open();
  first.db.insert(owners).values({ name: 'ada' }).run();
  first.close();
  const second = f.open();
  assert.deepEqual(second.db.select().from(owners).all(), [{ id: 1, name: 'ada' }]);
  second.close();
  writeMigrations(f.migrationsFolder, [CREATE, ['CREATE INDEX `owners_name` ON `owners` (`name`);']]);
  const third = f.open();
  t.after(() => third.close());
  assert.deepEqual(third.db.all(sql`SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'owners_name'`), [{ name: 'owners_name' }]);
  assert.equal(third.db.all(sql`SELECT hash FROM __drizzle_migrations`).length, 2);
});

test('rows come back in the schema types: dates, booleans, null for an unmatched left join, numeric changes', (t) => {
  const f = fixture(t);
  const { db, close } = f.open();
  t.after(close);
  const at = new Date(1_750_000_000_123);
  const owner = db.insert(owners).values({ name: 'ada' }).returning().get();
  db.insert(items)
    .values([
      { ownerId: owner.id, label: 'owned', done: true, at },
      { ownerId: null, label: 'loose', done: false, at },
    ])
    .run();
  const rows = db
    .select({ label: items.label, done: items.done, at: items.at, owner: owners })
    .from(items)
    .leftJoin(owners, eq(items.ownerId, owners.id))
    .orderBy(items.id)
    .all();
  assert.deepEqual(rows, [
    { label: 'owned', done: true, at, owner: { id: owner.id, name: 'ada' } },
    { label: 'loose', done: false, at, owner: null },
  ]);
  assert.equal(db.select().from(items).where(eq(items.label, 'nothing')).get(), undefined);
  const { changes } = db.update(items).set({ done: true }).run();
  assert.equal(changes, 2);
  assert.equal(typeof changes, 'number');
});

test('a transaction commits what it did, and a throw, a rollback or a promise leaves nothing behind', async (t) => {
  const f = fixture(t);
  const { db, close } = f.open();
  t.after(close);
  const names = () =>
    db
      .select({ name: owners.name })
      .from(owners)
      .orderBy(owners.id)
      .all()
      .map((r) => r.name);

  assert.equal(
    db.transaction((tx) => tx.insert(owners).values({ name: 'kept' }).run().changes),
    1,
  );
  assert.throws(
    () =>
      db.transaction((tx) => {
        tx.insert(owners).values({ name: 'thrown' }).run();
        throw new Error('boom');
      }),
    /boom/,
  );
  assert.throws(
    () =>
      db.transaction((tx) => {
        tx.insert(owners).values({ name: 'rolled back' }).run();
        tx.rollback();
      }),
    TransactionRollbackError,
  );
  assert.throws(
    () =>
      db.transaction(async (tx) => {
        tx.insert(owners).values({ name: 'async' }).run();
      }),
    /must be synchronous/,
  );
  assert.deepEqual(names(), ['kept']);

  // A nested transaction is a savepoint: its failure undoes only its own writes.
  db.transaction((tx) => {
    tx.insert(owners).values({ name: 'outer' }).run();
    assert.throws(
      () =>
        tx.transaction((inner) => {
          inner.insert(owners).values({ name: 'inner' }).run();
          throw new Error('inner fails');
        }),
      /inner fails/,
    );
  });
  assert.deepEqual(names(), ['kept', 'outer']);
  // The connection is usable again after each of those (no transaction left open).
  db.insert(owners).values({ name: 'after' }).run();
  assert.deepEqual(names(), ['kept', 'outer', 'after']);
});

test('a second connection to the same file sees committed writes (the CLI beside a running program)', (t) => {
  const f = fixture(t);
  const program = f.open();
  const cli = f.open();
  t.after(() => {
    cli.close();
    program.close();
  });
  program.db.insert(owners).values({ name: 'from the program' }).run();
  assert.deepEqual(cli.db.select({ name: owners.name }).from(owners).all(), [{ name: 'from the program' }]);
  cli.db.update(owners).set({ name: 'renamed by the CLI' }).run();
  assert.deepEqual(program.db.select({ name: owners.name }).from(owners).all(), [{ name: 'renamed by the CLI' }]);
});
