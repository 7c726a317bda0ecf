/**
 * drizzle-load-hook.ts: with the hook in place drizzle-orm still loads as one set of ES modules (a
 * class reached through `drizzle-orm` and through `drizzle-orm/sqlite-core` is the same class, which
 * Drizzle's `is()` checks rely on) and a store built on it works. Each case runs in a fresh Node, as
 * hooks are per process and this test runner has loaded drizzle-orm already.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const hook = new URL('./drizzle-load-hook.ts', import.meta.url).href;
const sqlite = new URL('./sqlite.ts', import.meta.url).href;

function runModule(source: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', source], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('with the hook, drizzle-orm loads once as ES modules and a SQLite store built on it reads back what it wrote', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-drizzle-hook-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // One drizzle-kit style migration, as sqlite.test.ts writes them.
  const migrations = join(dir, 'migrations');
  mkdirSync(join(migrations, 'meta'), { recursive: true });
  const entries = [{ idx: 0, version: '6', when: 1_700_000_000_000, tag: '0000_notes', breakpoints: true }];
  writeFileSync(join(migrations, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'sqlite', entries }));
  writeFileSync(join(migrations, '0000_notes.sql'), 'CREATE TABLE `notes` (`id` integer PRIMARY KEY NOT NULL, `body` text NOT NULL);');
  const result = runModule(`
    import { loadDrizzleWithoutPackageJsonReparse } from ${JSON.stringify(hook)};
    const registered = loadDrizzleWithoutPackageJsonReparse();
    const again = loadDrizzleWithoutPackageJsonReparse();
    const { is, eq, Table } = await import('drizzle-orm');
    const { integer, sqliteTable, text, SQLiteTable } = await import('drizzle-orm/sqlite-core');
    const { openSqlite } = await import(${JSON.stringify(sqlite)});
    const notes = sqliteTable('notes', { id: integer('id').primaryKey(), body: text('body').notNull() });
    const store = openSqlite(${JSON.stringify(join(dir, 'notes.db'))}, { schema: { notes }, migrationsFolder: ${JSON.stringify(migrations)} });
    store.db.insert(notes).values({ id: 7, body: 'kept' }).run();
    const rows = store.db.select().from(notes).where(eq(notes.id, 7)).all();
    store.close();
    console.log(JSON.stringify({ registered, again, sameClasses: is(notes, SQLiteTable) && is(notes, Table), rows }));
  `);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { registered: true, again: true, sameClasses: true, rows: [{ id: 7, body: 'kept' }] });
});
